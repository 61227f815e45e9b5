//! Input and cancellation for a task running in a 2025-11-25 session.
//!
//! A 2025-11-25 tool asks for input with a request of its own (for example
//! `elicitation/create`) on the SSE stream of its call. The layer reads that
//! stream, so it relays:
//!
//! ```text
//! inner ── elicitation/create {id: 0} ──► layer: task input_required, the request stored
//!                                          with id "mcp-tasks:<task>:<n>" and the related-task _meta
//! client ── tasks/result ───────────────► layer: the stored request, as an SSE event
//! client ── {id: "mcp-tasks:<task>:<n>", result} ─► layer: task working again (see `answer`);
//! inner ◄── {id: 0, result} ─────────────── the answer, under the inner id, in the tool's session
//! ```
//!
//! One request is relayed at a time per task; a second one while the first
//! is unanswered gets a JSON-RPC error back at once, so the tool never waits
//! for an answer nobody will give. A `ping` is answered by the layer. Cancelling
//! (`tasks/cancel`, expiry) and a call stream that breaks send
//! `notifications/cancelled` for the call's inner id: in a 2025-11-25 session
//! a closed stream is not a cancellation.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::follow;
use super::route::{LEGACY_VERSION, relay_id};
use crate::runtime::{Dialect, Followed, STORE_UNAVAILABLE, Step, Work};
use crate::store::{InputRound, StoreError};
use crate::task::TaskId;
use crate::wire::raw::{Members, edit_object};

/// How long the layer waits for the inner server to take a message it
/// sends on its own (a cancellation, a refusal).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The 2025-11-25 dialect of a task's driver: relays the inner server's
/// requests and tells the inner server when the call is abandoned.
pub(crate) struct Relay {
    /// The JSON-RPC id the layer gave the call it forwarded.
    pub inner_id: Box<RawValue>,
    /// Whether the call asked the inner server for a task of its own
    /// (`follow`), and that task's id once it answered.
    pub follows: bool,
    pub inner_task: Option<String>,
}

impl Relay {
    /// The dialect of the call forwarded as `inner_id`; `follows` when it
    /// asked the inner server for a task.
    pub(crate) fn new(inner_id: Box<RawValue>, follows: bool) -> Self {
        Self {
            inner_id,
            follows,
            inner_task: None,
        }
    }
}

impl Dialect for Relay {
    fn request<'a>(&'a mut self, work: &'a mut Work, message: Box<RawValue>) -> Step<'a> {
        Box::pin(relay(work, message))
    }

    fn abandon<'a>(&'a mut self, work: &'a mut Work) -> Step<'a> {
        Box::pin(async move {
            cancel_inner(work, &self.inner_id).await;
            if let Some(inner) = &self.inner_task {
                let body = follow::cancel_body(work, inner);
                send(work, body).await;
                tracing::debug!(task = %work.id, "tasks/cancel sent for the inner server's own task");
            }
            Ok(())
        })
    }

    fn follow(&mut self, work: &mut Work, result: &RawValue) -> Followed {
        if !self.follows || self.inner_task.is_some() {
            return Followed::Outcome;
        }
        let Some(inner) = follow::created_task(result) else {
            return Followed::Outcome;
        };
        tracing::debug!(task = %work.id, "following the inner server's own task");
        let flight = follow::result_flight(work, &inner);
        self.inner_task = Some(inner);
        match flight {
            Ok(flight) => {
                self.inner_id = flight.id().to_owned();
                Followed::Next(flight)
            }
            Err(message) => Followed::Error(message),
        }
    }
}

/// What the store keeps to route an answer back (never shown to clients).
#[derive(Serialize, Deserialize)]
pub(crate) struct Pending {
    /// The inner server's id of the request.
    #[serde(rename = "innerId")]
    pub inner_id: Box<RawValue>,
    /// The session the tool asked from; the answer goes there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// The `_meta` key that ties a message to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// `object` (a JSON object's text) with the related-task `_meta` added to
/// its `_meta`; every other member kept as it was.
pub(crate) fn with_related_task(object: &str, task: TaskId) -> Option<String> {
    let meta = match Members::parse(object).ok()?.get("_meta") {
        Some(meta) if meta.get() != "null" => meta.get(),
        _ => "{}",
    };
    let related = format!(r#"{{"taskId":"{task}"}}"#);
    let meta = edit_object(meta, &[(RELATED_TASK, Some(&related))])?;
    edit_object(object, &[("_meta", Some(&meta))])
}

/// `message` (a JSON-RPC message) with `id` for its id and, when it has
/// params, the related-task `_meta` in them.
fn relayed_message(message: &str, id: &str, task: TaskId) -> Option<String> {
    let params = match Members::parse(message).ok()?.get("params") {
        Some(params) => Some(with_related_task(params.get(), task)?),
        None => None,
    };
    edit_object(message, &[("id", Some(id)), ("params", params.as_deref())])
}

/// Sends a message the layer makes up to the inner server and waits (a
/// bounded time) for it to be taken.
async fn send(work: &mut Work, body: String) {
    let Ok(request) = work.template.post(body, LEGACY_VERSION) else {
        return;
    };
    let sent = tokio::time::timeout(SEND_TIMEOUT, work.caller.call(request)).await;
    match sent {
        Ok(Ok(response)) if response.status().is_success() => {}
        Ok(Ok(response)) => {
            tracing::debug!(task = %work.id, status = %response.status(), "the inner server refused a message")
        }
        Ok(Err(error)) => {
            tracing::debug!(task = %work.id, %error, "a message to the inner server failed")
        }
        Err(_) => tracing::debug!(task = %work.id, "a message to the inner server timed out"),
    }
}

/// Relays a request the inner server sent on the call's stream. Each
/// relayed request is one input round of the task; an `Err` (too many
/// rounds) fails the task.
async fn relay(work: &mut Work, message: Box<RawValue>) -> Result<(), String> {
    let Ok(members) = Members::parse(message.get()) else {
        return Ok(());
    };
    let Some(inner_id) = members.get("id").map(ToOwned::to_owned) else {
        return Ok(());
    };
    let is_ping = members
        .get("method")
        .is_some_and(|m| m.get() == r#""ping""#);
    drop(members);
    if is_ping {
        // Nothing for the client to decide: the layer answers for it.
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#,
            inner_id.get()
        );
        send(work, body).await;
        return Ok(());
    }
    if work.round >= work.max_rounds {
        let reason = format!(
            "The tool asked for input more than {} times (the layer's max_input_rounds)",
            work.max_rounds
        );
        refuse(work, &inner_id, &reason).await;
        return Err(reason);
    }
    work.round += 1;
    let key = work.round.to_string();
    let id = serde_json::to_string(&relay_id(work.id, work.round)).unwrap_or_default();
    let relayed = relayed_message(message.get(), &id, work.id)
        .and_then(|text| RawValue::from_string(text).ok());
    let session = work
        .template
        .header("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let resume = serde_json::value::to_raw_value(&Pending {
        inner_id: inner_id.clone(),
        session,
    });
    let (Some(relayed), Ok(resume)) = (relayed, resume) else {
        refuse(
            work,
            &inner_id,
            "The request could not be relayed to the client",
        )
        .await;
        return Ok(());
    };
    let round = InputRound {
        requests: vec![(key, relayed)],
        resume,
    };
    match work.store.require_input(work.id, round).await {
        Ok(()) => {}
        Err(StoreError::InvalidTransition { from, .. }) if !from.is_terminal() => {
            let reason = "Another request of this task is still waiting for the client's answer; mcp-tasks relays one at a time";
            refuse(work, &inner_id, reason).await;
        }
        Err(StoreError::InvalidTransition { .. } | StoreError::NotFound) => {}
        Err(error) => {
            tracing::warn!(task = %work.id, %error, "could not record a relayed request");
            refuse(work, &inner_id, STORE_UNAVAILABLE).await;
        }
    }
    Ok(())
}

/// Answers the inner server's request `inner_id` with an error.
async fn refuse(work: &mut Work, inner_id: &RawValue, reason: &str) {
    tracing::warn!(task = %work.id, reason, "an input request of the inner server was refused");
    let error =
        crate::wire::jsonrpc::ErrorObject::new(crate::wire::jsonrpc::INTERNAL_ERROR, reason);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{}}}"#,
        inner_id.get(),
        error.to_raw().get()
    );
    send(work, body).await;
}

/// Tells the inner server that the call of a cancelled, expired or failed
/// task is cancelled.
async fn cancel_inner(work: &mut Work, inner_id: &RawValue) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{},"reason":"The task was cancelled"}}}}"#,
        inner_id.get()
    );
    send(work, body).await;
}

/// The client's answer `message`, re-addressed to the inner request `pending`.
pub(crate) fn answer_for_inner(message: &str, pending: &Pending) -> Option<String> {
    edit_object(message, &[("id", Some(pending.inner_id.get()))])
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn relayed_requests_get_the_layer_id_and_the_related_task() {
        let task = TaskId::from_u128(7);
        let message = r#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"sure?","_meta":{"k":1}}}"#;
        let out = relayed_message(message, r#""mcp-tasks:x:1""#, task).unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out["id"], "mcp-tasks:x:1");
        assert_eq!(out["method"], "elicitation/create");
        assert_eq!(out["params"]["message"], "sure?");
        assert_eq!(out["params"]["_meta"]["k"], 1);
        assert_eq!(
            out["params"]["_meta"]["io.modelcontextprotocol/related-task"],
            json!({"taskId": task.to_string()})
        );
    }

    #[test]
    fn answers_go_back_under_the_inner_id() {
        let pending = Pending {
            inner_id: RawValue::from_string("0".into()).unwrap(),
            session: None,
        };
        let answer = r#"{"jsonrpc":"2.0","id":"mcp-tasks:x:1","result":{"action":"accept"}}"#;
        let out: Value =
            serde_json::from_str(&answer_for_inner(answer, &pending).unwrap()).unwrap();
        assert_eq!(
            out,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}})
        );
    }
}
