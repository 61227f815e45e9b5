//! Task status push over `subscriptions/listen` (2026-07-28, Tasks extension).
//!
//! | Module | What it pins |
//! |---|---|
//! | `listen` | a listen for task status against the rmcp fixture: acknowledgement, notifications, end, caps |
//! | `mixed` | a listen for task status and the inner server's own notifications on one stream |

#[path = "../support/mod.rs"]
mod support;

mod listen;
mod mixed;
