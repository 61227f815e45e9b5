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
use tokio::time::Instant;

use super::work::Work;
use crate::runtime::flight::Flight;
use crate::runtime::flight::ask::{self, Declares};
use crate::wire::raw::write_object;

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
/// How long a key just answered, still listed by the inner task, is taken
/// for the update not seen yet rather than a new question.
const ANSWERED_GRACE: Duration = Duration::from_secs(5);
/// How long a `tasks/cancel` of the layer's may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the layer reads of a result: a task handle, or a `tasks/get`
/// answer about the inner task.
///
/// The fields a task handle and a `tasks/get` answer share are read
/// leniently: one of an unexpected type (a poll interval written `5000.0`,
/// say) counts as absent, rather than making the whole answer unreadable.
#[derive(Deserialize)]
struct Seen {
    #[serde(rename = "resultType", default, deserialize_with = "lenient")]
    result_type: Option<String>,
    #[serde(rename = "taskId", default, deserialize_with = "lenient")]
    task_id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    status: Option<String>,
    #[serde(rename = "statusMessage", default, deserialize_with = "lenient")]
    status_message: Option<String>,
    #[serde(rename = "pollIntervalMs", default, deserialize_with = "lenient")]
    poll_interval: Option<f64>,
    result: Option<Box<RawValue>>,
    error: Option<Box<RawValue>>,
    #[serde(rename = "inputRequests", default, deserialize_with = "lenient")]
    input_requests: Option<std::collections::BTreeMap<String, Box<RawValue>>>,
}

/// A field of the expected type, or `None` for any other value.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// What the layer knows of the inner task it follows, across polls and
/// input rounds.
#[derive(Default)]
pub(crate) struct Following {
    /// The inner server's task, once the call answered its handle.
    inner: Option<String>,
    /// Whether the next answer is the acknowledgement of a `tasks/update`.
    updating: bool,
    /// The inner keys answered already: a poll that still lists them (the
    /// update is eventually consistent) does not ask the client again,
    /// until the inner task is seen `working` or [`ANSWERED_GRACE`] passed
    /// (then a listed key is a new question under an old key).
    answered: Vec<String>,
    /// When `answered` was set.
    answered_at: Option<Instant>,
    /// The status message last written to the layer's task.
    said: Option<String>,
}

impl Following {
    /// The inner task `inner`, just sent the answers to `answered` (its
    /// keys) with `tasks/update`.
    pub(crate) fn updating(inner: String, answered: Vec<String>) -> Self {
        Self {
            inner: Some(inner),
            updating: true,
            answered,
            answered_at: Some(Instant::now()),
            said: None,
        }
    }

    /// The keys answered already that a poll listing them still means:
    /// none once the grace passed (or the inner task took them, [`took`]).
    ///
    /// [`took`]: Self::took
    fn answered(&mut self) -> &[String] {
        if self
            .answered_at
            .is_some_and(|at| at.elapsed() >= ANSWERED_GRACE)
        {
            self.took();
        }
        &self.answered
    }

    /// The inner task was seen `working`: it took the answers, so a key it
    /// lists later is a new question.
    fn took(&mut self) {
        self.answered.clear();
        self.answered_at = None;
    }

    /// The inner task followed, if any.
    pub(crate) fn inner(&self) -> Option<&str> {
        self.inner.as_deref()
    }
}

/// The inner task's `requests` not answered yet, as an `input_required`
/// result; `None` when none is left (the answers are on their way).
fn asked(
    requests: std::collections::BTreeMap<String, Box<RawValue>>,
    answered: &[String],
) -> Option<Followed> {
    let mut left = requests
        .iter()
        .filter(|(key, _)| !answered.contains(key))
        .map(|(key, request)| (key.as_str(), request.get()))
        .peekable();
    left.peek()?;
    let mut object = String::new();
    write_object(&mut object, left);
    let text = format!(r#"{{"resultType":"input_required","inputRequests":{object}}}"#);
    Some(match RawValue::from_string(text) {
        Ok(asked) => Followed::Input(asked),
        Err(error) => Followed::Error(format!("The inner task's input requests: {error}")),
    })
}

/// Reads `result` for `work`, with what is known of the inner task.
pub(crate) fn follow(state: &mut Following, work: &mut Work, result: &RawValue) -> Followed {
    if std::mem::take(&mut state.updating)
        && let Some(inner) = state.inner.clone()
    {
        // The acknowledgement of the client's answers: read on.
        return poll(state, work, &inner, None, None);
    }
    let seen: Option<Seen> = serde_json::from_str(result.get()).ok();
    let Some(followed) = state.inner.clone() else {
        let Some(seen) = seen.filter(|seen| seen.result_type.as_deref() == Some("task")) else {
            return Followed::Outcome;
        };
        let Some(task) = seen.task_id else {
            return Followed::Error("The inner server answered a task without a taskId".into());
        };
        tracing::debug!(task = %work.id, "following the inner server's own task");
        state.inner = Some(task.clone());
        return poll(state, work, &task, seen.status_message, seen.poll_interval);
    };
    let Some(seen) = seen.filter(|seen| seen.task_id.as_deref() == Some(followed.as_str())) else {
        return Followed::Error("The inner server's task could not be read".into());
    };
    match seen.status.as_deref() {
        Some("working") => {
            state.took();
            poll(
                state,
                work,
                &followed,
                seen.status_message,
                seen.poll_interval,
            )
        }
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
            Some(requests) => asked(requests, state.answered()).unwrap_or_else(|| {
                poll(
                    state,
                    work,
                    &followed,
                    seen.status_message,
                    seen.poll_interval,
                )
            }),
            None => Followed::Error("The inner server's task asks for no input".into()),
        },
        other => Followed::Error(format!("The inner server's task has the status {other:?}")),
    }
}

/// The next `tasks/get` of the inner task `task`, after its poll interval;
/// `message` (its status message) goes to the layer's task first.
fn poll(
    state: &mut Following,
    work: &mut Work,
    task: &str,
    message: Option<String>,
    interval: Option<f64>,
) -> Followed {
    let millis = interval
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .unwrap_or(0.0);
    let wait = Duration::from_secs_f64(millis.min(1e9) / 1000.0).clamp(MIN_POLL, MAX_POLL);
    // Written only when it changed: a poll costs the store nothing else.
    let message = message.filter(|message| state.said.as_ref() != Some(message));
    if let Some(message) = &message {
        state.said = Some(message.clone());
    }
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
    answers: &[(String, Box<RawValue>)],
) -> Result<Flight, String> {
    work.attempts += 1;
    let id = format!("\"mcp-tasks:{}:update.{}\"", work.id, work.round);
    // The answers as the client wrote them, every byte kept (a number too
    // large for an f64 included).
    let mut responses = String::new();
    let pairs = answers
        .iter()
        .map(|(key, answer)| (key.as_str(), answer.get()));
    write_object(&mut responses, pairs);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(keys: &[&str]) -> std::collections::BTreeMap<String, Box<RawValue>> {
        let request = r#"{"method":"elicitation/create","params":{"message":"?"}}"#;
        keys.iter()
            .map(|key| {
                (
                    (*key).to_owned(),
                    RawValue::from_string(request.into()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn requests_answered_already_are_not_asked_again() {
        let answered = vec!["a".to_owned()];
        let Some(Followed::Input(asked)) = asked(requests(&["a", "b"]), &answered) else {
            panic!("b is still to ask");
        };
        let asked: serde_json::Value = serde_json::from_str(asked.get()).unwrap();
        let keys: Vec<&String> = asked["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b"]);
        assert!(super::asked(requests(&["a"]), &answered).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_answered_key_is_asked_again_once_the_inner_task_worked_or_the_grace_passed() {
        let mut waiting = Following::updating("t".into(), vec!["q".into()]);
        assert_eq!(waiting.answered(), ["q"], "the update is not seen yet");
        let mut worked = Following::updating("t".into(), vec!["q".into()]);
        worked.took();
        assert!(worked.answered().is_empty());
        assert!(
            worked.answered().is_empty(),
            "after working, the same key is a new question"
        );
        tokio::time::advance(ANSWERED_GRACE).await;
        assert!(waiting.answered().is_empty(), "past the grace");
    }

    #[test]
    fn a_field_of_another_type_counts_as_absent() {
        let seen: Seen = serde_json::from_str(
            r#"{"resultType":"task","taskId":"t","status":"working","pollIntervalMs":5000.0,"statusMessage":7}"#,
        )
        .unwrap();
        assert_eq!(seen.task_id.as_deref(), Some("t"));
        assert_eq!(seen.poll_interval, Some(5000.0));
        assert_eq!(seen.status_message, None);
        let odd: Seen = serde_json::from_str(r#"{"taskId":5,"pollIntervalMs":"soon"}"#).unwrap();
        assert_eq!((odd.task_id, odd.poll_interval), (None, None));
    }
}
