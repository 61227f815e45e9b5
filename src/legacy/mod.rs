//! The experimental tasks of protocol 2025-11-25 (SEP-1686 as shipped), served
//! by the same layer and store as the 2026-07-28 extension.
//!
//! A 2025-11-25 client negotiates once, in `initialize`, and then speaks in a
//! session (`Mcp-Session-Id`). The layer records the sessions that
//! negotiated 2025-11-25 ([`sessions`]), advertises tasks in them
//! ([`advertise`]), and then takes part only where the client asks for a
//! task or a task method ([`route`]):
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
pub(crate) mod call;
pub(crate) mod input;
pub(crate) mod methods;
pub(crate) mod result;
pub(crate) mod route;
pub(crate) mod sessions;

use http::StatusCode;
use http::request::Parts;

use crate::service::Shared;
use crate::store::InputProgress;
use crate::task::TaskId;
use crate::wire::jsonrpc::{ErrorObject, INVALID_PARAMS, Reply};
use input::{Pending, answer_for_inner};

/// Records the client's answer to a relayed request; returns the message to
/// send the inner server in its place.
pub(crate) async fn take_answer(
    shared: &Shared,
    parts: &Parts,
    body: &[u8],
    task: TaskId,
    key: String,
) -> Result<String, Reply> {
    let refused = |message: &str| {
        let error = ErrorObject::new(INVALID_PARAMS, message);
        Reply::error(StatusCode::BAD_REQUEST, None, error)
    };
    let text = std::str::from_utf8(body).map_err(|_| refused("The answer is not UTF-8"))?;
    let message = serde_json::value::RawValue::from_string(text.to_owned())
        .map_err(|_| refused("The answer is not JSON"))?;
    let owner = shared.owner.resolve(parts);
    let progress = shared
        .store
        .answer_input(task, owner.as_deref(), vec![(key, message)])
        .await
        .map_err(|e| Reply::internal(None, format!("The task store failed: {e}")))?;
    let Some(InputProgress::RoundComplete {
        answers, resume, ..
    }) = progress
    else {
        return Err(refused(
            "No relayed request with this id is waiting for an answer",
        ));
    };
    let pending: Pending = serde_json::from_str(resume.get())
        .map_err(|_| Reply::internal(None, "The stored input request is unreadable"))?;
    let (_, answer) = answers
        .into_iter()
        .next()
        .ok_or_else(|| refused("No answer was recorded"))?;
    answer_for_inner(answer.get(), &pending)
        .ok_or_else(|| refused("The answer is not a JSON-RPC response"))
}

/// The `Mcp-Session-Id` of a request or response.
pub(crate) fn session_id(headers: &http::HeaderMap) -> Option<Box<str>> {
    headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(Into::into)
}

/// A fresh registry for unit tests.
#[cfg(test)]
pub(crate) fn sessions_for_tests(idle: std::time::Duration) -> std::sync::Arc<sessions::Sessions> {
    std::sync::Arc::new(sessions::Sessions::new(sessions::SessionLimits {
        max: 100,
        idle,
    }))
}
