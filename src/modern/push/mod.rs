//! Task status push: `subscriptions/listen` with `notifications.taskIds`
//! (2026-07-28, Tasks extension), answered by the layer.
//!
//! A declaring client that asks for `taskIds` gets a long-lived SSE stream
//! from the layer itself:
//!
//! | Step | What the stream carries |
//! |------|-------------------------|
//! | ack  | `notifications/subscriptions/acknowledged`, first, with `notifications.taskIds` = the asked ids this principal may see (unknown, expired, foreign and malformed ids are left out, with no hint that they exist) |
//! | now  | one `notifications/tasks` per acknowledged task: its state when the stream opened, so no change between the client's last poll and the ack is lost |
//! | then | one `notifications/tasks` at each change of status, and of `statusMessage` (at most one message change per task per 250 ms; the latest one wins) |
//! | end  | the `subscriptions/listen` result `{"resultType":"complete"}` once every acknowledged task is terminal or gone, when the layer drains, or at once when nothing was acknowledged |
//!
//! Every notification carries `_meta["io.modelcontextprotocol/subscriptionId"]`
//! = the listen's JSON-RPC id, and its params are exactly what `tasks/get`
//! answers at the moment the layer read the task (without `resultType`).
//! No `notifications/progress` or `notifications/message` is ever sent on
//! it. Keep-alive SSE comments flow at the layer's `keep_alive` interval.
//!
//! **Why the stream ends when every task is terminal:** a terminal task
//! never changes again, so the stream could only carry keep-alives from
//! then on; ending it frees the client's connection and the principal's
//! subscription slot, and a client wanting more tasks opens a new listen.
//!
//! **Where changes come from:** the store's change feed
//! ([`TaskStore::changes`](crate::TaskStore::changes)), read once per layer
//! by the [`Hub`](crate::runtime::feed::Hub) (`runtime/feed/`), which wakes only the subscriptions watching the changed
//! task. Each woken subscription reads the task again, so a notification
//! always equals `tasks/get` at that moment; a change superseded before the
//! read (two transitions within a store read) is folded into the next one.
//! With Redis the feed is pub/sub, so a subscription on one instance sees
//! changes made on any, and nothing polls Redis per subscriber: after a
//! pub/sub reconnect (announcements may have been lost) the store says so
//! ([`TaskChange::Missed`](crate::TaskChange::Missed)) and every
//! subscription reads its tasks once. Only over a store without a feed do
//! subscriptions read their tasks again on a timer (every 5 s).
//!
//! **Bounds:** subscriptions per principal and in all, and ids per listen
//! ([`TasksLayer::max_subscriptions`](crate::TasksLayer::max_subscriptions),
//! [`max_subscription_task_ids`](crate::TasksLayer::max_subscription_task_ids));
//! each stream buffers at most 64 events, and a client that lets them pile
//! up is dropped with a clear end: a JSON-RPC error as the listen's answer.
//!
//! A listen that also asks for other notifications (tool list changes,
//! resources) goes to the inner server without `taskIds` and without the
//! extension, so the inner server never acknowledges tasks it does not
//! know; the client gets one stream carrying both (`mixed`).
//!
//! 2025-11-25 sessions get `notifications/tasks/status` on their GET stream
//! (`legacy::push`); a waiting `tasks/result` carries them too (`legacy::result`).

mod filter;
mod listen;
mod mixed;

pub(crate) use filter::TaskFilter;
pub(crate) use listen::{ListenCall, listen};
pub(crate) use mixed::merged;
