//! The experimental tasks of protocol 2025-11-25 (SEP-1686 as shipped), served
//! by the same layer and store as the 2026-07-28 extension.
//!
//! A 2025-11-25 client negotiates once, in `initialize`, and then speaks in a
//! session (`Mcp-Session-Id`). The layer records the sessions that
//! negotiated 2025-11-25 ([`sessions`]), advertises tasks in them
//! ([`advertise`]), and then takes part only where the client asks for a
//! task or a task method ([`route`]); it adds the status of a session's
//! tasks to the session's GET stream ([`push`]):
//!
//! | | 2026-07-28 extension | 2025-11-25 experimental tasks |
//! |---|---|---|
//! | who decides | the layer: a call still running at the threshold | the client: `params.task` |
//! | task handle | flat `CreateTaskResult`, `resultType:"task"` | nested `{"task":{…}}` |
//! | lifetime fields | `ttlMs`, `pollIntervalMs` | `ttl`, `pollInterval` |
//! | outcome | inlined in `tasks/get` | `tasks/result`, which blocks until terminal |
//! | `isError: true` | `completed` | `failed` |
//! | input | MRTR `inputRequests`, `tasks/update` | the inner server's own requests, relayed on the `tasks/result` stream ([`input`]) |
//! | listing | none | `tasks/list`, the caller's tasks, for callers with a principal |
//! | cancel | ack, inner stream dropped | the task, `cancelled`; `notifications/cancelled` to the inner call |
//!
//! Ownership is the same on both: the [`ResolveOwner`](crate::ResolveOwner)
//! of the layer, plain equality, and a refusal that reads like an unknown task.

pub(crate) mod advertise;
pub(crate) mod answer;
pub(crate) mod call;
pub(crate) mod follow;
pub(crate) mod input;
pub(crate) mod methods;
pub(crate) mod push;
pub(crate) mod result;
pub(crate) mod route;
pub(crate) mod sessions;
pub(crate) mod waiters;

/// A fresh registry for unit tests.
#[cfg(test)]
pub(crate) fn sessions_for_tests(idle: std::time::Duration) -> std::sync::Arc<sessions::Sessions> {
    std::sync::Arc::new(sessions::Sessions::new(sessions::SessionLimits {
        max: 100,
        idle,
    }))
}
