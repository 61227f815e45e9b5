//! The store's change feed as the layer's streams see it: who watches
//! which task, and the pieces every task-status stream is made of.
//!
//! | Room | Holds |
//! |------|-------|
//! | `hub.rs` | [`Hub`]: the one reader of the store's change feed per layer, waking only the subscriptions watching a changed task, and the caps on subscriptions |
//! | `stream.rs` | the SSE response written from a channel, its buffer and timers, a watched task's expiry, and the inner server's stream read as events |
//!
//! Both generations push task status (2026-07-28 `subscriptions/listen`,
//! 2025-11-25 `notifications/tasks/status` on a session's GET stream), and
//! neither imports the other: what they share is here.

pub(crate) mod hub;
pub(crate) mod stream;

pub(crate) use hub::Hub;
