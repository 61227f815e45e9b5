//! Following a task the inner server made of its own (2026-07-28), when
//! a call the layer parked answers a task handle instead of its result.
//!
//! That happens only with an inner server that has the tasks extension
//! (`own_tasks`) and was slower to answer the handle than the threshold.
//! The client keeps the layer's task; the layer reads the inner task to
//! its end:
//!
//! | The inner task (`tasks/get`) | The layer's task                                   |
//! |------------------------------|----------------------------------------------------|
//! | `working`                    | its `statusMessage` copied; asked again after the inner `pollIntervalMs` (from [`MIN_POLL`] to [`MAX_POLL`]) |
//! | `completed`                  | `completed` with the inner `result`                |
//! | `failed`                     | `failed` with the inner `error`                    |
//! | `cancelled`                  | `failed`: the inner server cancelled it            |
//! | `input_required`             | `input_required` with the inner `inputRequests`; the client's answers go to the inner `tasks/update`, then the layer reads on |
//! | an error answer              | `failed` with that error                           |
//!
//! Cancelling the layer's task (or its expiry, a deadline, a drain) sends
//! `tasks/cancel` for the inner one.

use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::work::Work;
use crate::flight::Flight;
use crate::flight::ask::{self, Declares};

/// What a call's result is, as its dialect reads it.
pub(crate) enum Followed {
    /// The call's outcome, as it is.
    Outcome,
    /// Not the outcome yet: read this flight next.
    Next(Flight),
    /// The outcome is this result (of the inner server's task).
    Complete(Box<RawValue>),
    /// The call failed with this JSON-RPC error object.
    Failed(Box<RawValue>),
    /// The inner server's task asks for input: this `input_required`
    /// result, for the client.
    Input(Box<RawValue>),
    /// The task fails with this message.
    Error(String),
}

/// The shortest wait between two `tasks/get` of the inner task.
const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest: the layer's own clients see the status this late at most.
const MAX_POLL: Duration = Duration::from_secs(1);
/// How long a `tasks/cancel` of the layer's may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the layer reads of a result: a task handle, or a `tasks/get`
/// answer about the inner task.
#[derive(Deserialize)]
struct Seen {
    #[serde(rename = "resultType")]
    result_type: Option<String>,
    #[serde(rename = "taskId")]
    task_id: Option<String>,
    status: Option<String>,
    #[serde(rename = "statusMessage")]
    status_message: Option<String>,
    #[serde(rename = "pollIntervalMs")]
    poll_interval: Option<u64>,
    result: Option<Box<RawValue>>,
    error: Option<Box<RawValue>>,
    #[serde(rename = "inputRequests")]
    input_requests: Option<Box<RawValue>>,
}

/// The inner task's `requests` as an `input_required` result.
fn asked(requests: &RawValue) -> Followed {
    let text = format!(
        r#"{{"resultType":"input_required","inputRequests":{}}}"#,
        requests.get()
    );
    match RawValue::from_string(text) {
        Ok(asked) => Followed::Input(asked),
        Err(error) => Followed::Error(format!("The inner task's input requests: {error}")),
    }
}

/// Reads `result` for `work`, `inner` the inner task followed so far.
pub(crate) fn follow(inner: &mut Option<String>, work: &mut Work, result: &RawValue) -> Followed {
    let seen: Option<Seen> = serde_json::from_str(result.get()).ok();
    let Some(followed) = inner.clone() else {
        let Some(seen) = seen.filter(|seen| seen.result_type.as_deref() == Some("task")) else {
            return Followed::Outcome;
        };
        let Some(task) = seen.task_id else {
            return Followed::Error("The inner server answered a task without a taskId".into());
        };
        tracing::debug!(task = %work.id, "following the inner server's own task");
        *inner = Some(task.clone());
        return poll(work, &task, seen.status_message, seen.poll_interval);
    };
    let Some(seen) = seen.filter(|seen| seen.task_id.as_deref() == Some(followed.as_str())) else {
        return Followed::Error("The inner server's task could not be read".into());
    };
    match seen.status.as_deref() {
        Some("working") => poll(work, &followed, seen.status_message, seen.poll_interval),
        Some("completed") => match seen.result {
            Some(result) => Followed::Complete(result),
            None => Followed::Error("The inner server's task completed without a result".into()),
        },
        Some("failed") => match seen.error {
            Some(error) => Followed::Failed(error),
            None => Followed::Error(
                seen.status_message
                    .unwrap_or_else(|| "The inner server's task failed".into()),
            ),
        },
        Some("cancelled") => Followed::Error("The inner server cancelled its task".into()),
        Some("input_required") => match seen.input_requests {
            Some(requests) => asked(&requests),
            None => Followed::Error("The inner server's task asks for no input".into()),
        },
        other => Followed::Error(format!("The inner server's task has the status {other:?}")),
    }
}

/// The next `tasks/get` of the inner task `task`, after its poll interval;
/// `message` (its status message) goes to the layer's task first.
pub(crate) fn poll(
    work: &mut Work,
    task: &str,
    message: Option<String>,
    interval: Option<u64>,
) -> Followed {
    let wait = Duration::from_millis(interval.unwrap_or(0)).clamp(MIN_POLL, MAX_POLL);
    let id = format!("\"mcp-tasks:{}:get\"", work.id);
    let request = match task_request(work, &id, "tasks/get", task, None) {
        Ok(request) => request,
        Err(reason) => {
            return Followed::Error(format!("The inner task could not be read: {reason}"));
        }
    };
    let Ok(id) = RawValue::from_string(id) else {
        return Followed::Error("The inner task could not be read".into());
    };
    let call = work.caller.call(request);
    let (store, layer_task) = (work.store.clone(), work.id);
    let next = async move {
        if let Some(message) = message
            && let Err(error) = store.set_status_message(layer_task, message).await
        {
            tracing::debug!(task = %layer_task, %error, "status not recorded");
        }
        tokio::time::sleep(wait).await;
        call.await
    };
    Followed::Next(Flight::background(id, Box::pin(next), work.max_result))
}

/// The inner task `task`'s `tasks/update` with the client's `answers`
/// (under the inner server's keys); its acknowledgement is read next.
pub(crate) fn update(
    work: &mut Work,
    task: &str,
    answers: Vec<(String, Box<RawValue>)>,
) -> Result<Flight, String> {
    work.attempts += 1;
    let id = format!("\"mcp-tasks:{}:update.{}\"", work.id, work.round);
    let responses: serde_json::Map<String, serde_json::Value> = answers
        .into_iter()
        .map(|(key, answer)| Ok((key, serde_json::from_str(answer.get())?)))
        .collect::<Result<_, serde_json::Error>>()
        .map_err(|e| e.to_string())?;
    let responses = serde_json::Value::Object(responses).to_string();
    let request = task_request(work, &id, "tasks/update", task, Some(&responses))?;
    let id = RawValue::from_string(id).map_err(|e| e.to_string())?;
    Ok(Flight::background(
        id,
        work.caller.call(request),
        work.max_result,
    ))
}

/// A request of the layer's for `method` about the inner task `task`,
/// with `inputResponses` for a `tasks/update`.
fn task_request(
    work: &Work,
    id: &str,
    method: &'static str,
    task: &str,
    responses: Option<&str>,
) -> Result<http::Request<bytes::Bytes>, String> {
    let meta = ask::modern_meta(Declares::Tasks);
    let task_json = serde_json::Value::String(task.to_owned());
    let responses = responses
        .map(|responses| format!(r#","inputResponses":{responses}"#))
        .unwrap_or_default();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{meta},"taskId":{task_json}{responses}}}}}"#
    );
    ask::request(&work.template, body, method, Some(task), None)
}

/// Sends `tasks/cancel` for the inner task `task`, waiting a bounded time.
pub(crate) async fn cancel(work: &mut Work, task: &str) {
    let id = format!("\"mcp-tasks:{}:cancel\"", work.id);
    let Ok(request) = task_request(work, &id, "tasks/cancel", task, None) else {
        return;
    };
    let limit = work.max_result;
    let sent = ask::result(&mut *work.caller, &id, request, limit);
    match tokio::time::timeout(CANCEL_TIMEOUT, sent).await {
        Ok(Ok(_)) => tracing::debug!(task = %work.id, "tasks/cancel sent for the inner task"),
        Ok(Err(reason)) => tracing::debug!(task = %work.id, reason, "the inner task's cancel"),
        Err(_) => tracing::debug!(task = %work.id, "the inner task's cancel took too long"),
    }
}
