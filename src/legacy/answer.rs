//! The client's answer to a request the layer relayed, on its way back to
//! the inner server.
//!
//! | Step | What happens | If it fails |
//! |------|--------------|-------------|
//! | 1 | the POST is a JSON-RPC response (`result` or `error`) | `-32602`, HTTP 400; nothing recorded |
//! | 2 | the store takes it as the caller (owner checked) and completes the round | `-32602`, HTTP 400 (nothing waits), `-32603` (store down) |
//! | 3 | the client gets `202` at once                        | — |
//! | 4 | on a tracked tokio task, the answer goes to the inner server under the inner id, in the session the tool asked from, with the answering request's credentials; up to 4 tries of at most 10 s each, given up at once if the task ends meanwhile | the task fails with a message that says so, and its stop signal fires, which tells the inner call it is cancelled |
//!
//! Step 4 is detached so a client hanging up right after its POST cannot
//! lose an answer the store already took.

use std::time::Duration;

use http::{HeaderName, HeaderValue, StatusCode};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::input::{Pending, answer_for_inner};
use super::route::LEGACY_VERSION;
use crate::backoff::Backoff;
use crate::runtime::RequestContext;
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::Template;
use crate::runtime::store_failed;
use crate::store::{InputProgress, StoreError, TaskStore};
use crate::task::TaskId;
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, Reply};
use crate::wire::raw::Members;

/// How many times an answer is offered to the inner server.
const ATTEMPTS: u32 = 4;

/// Tries to record that an answer was lost (about 10 s with backoff).
const FAIL_TRIES: u32 = 7;

/// How long one try to deliver an answer may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// An answer the store took, to be delivered to the inner server.
pub(crate) struct Delivery {
    task: TaskId,
    body: String,
    session: Option<String>,
    stop: CancellationToken,
}

fn refused(message: &str) -> Reply {
    Reply::error(
        StatusCode::BAD_REQUEST,
        None,
        ErrorObject::new(INVALID_PARAMS, message),
    )
}

/// Whether `text` is a JSON-RPC response object.
fn is_response(text: &str) -> bool {
    Members::parse(text)
        .is_ok_and(|members| members.get("result").is_some() || members.get("error").is_some())
}

/// Steps 1 and 2: checks the answer and records it as the caller.
pub(crate) async fn take(
    cx: &RequestContext,
    task: TaskId,
    key: String,
) -> Result<Delivery, Reply> {
    let (runtime, owner, body) = (&*cx.runtime, cx.owner.key(), &cx.body[..]);
    let text = std::str::from_utf8(body).map_err(|_| refused("The answer is not UTF-8"))?;
    if !is_response(text) {
        return Err(refused(
            "The answer is not a JSON-RPC response (it needs result or error)",
        ));
    }
    let message =
        RawValue::from_string(text.to_owned()).map_err(|_| refused("The answer is not JSON"))?;
    let progress = runtime
        .store
        .answer_input(task, owner, vec![(key, message)])
        .await
        .map_err(|e| store_failed(None, &e))?;
    let Some(InputProgress::RoundComplete {
        answers,
        resume,
        stop,
    }) = progress
    else {
        return Err(refused(
            "No relayed request with this id is waiting for an answer",
        ));
    };
    let delivery = serde_json::from_str::<Pending>(resume.get())
        .ok()
        .and_then(|pending| {
            let (_, answer) = answers.into_iter().next()?;
            let body = answer_for_inner(answer.get(), &pending)?;
            Some((pending.session, body))
        });
    match delivery {
        Some((session, body)) => Ok(Delivery {
            task,
            body,
            session,
            stop,
        }),
        None => {
            let message = "The answer could not be routed back to the tool";
            fail(runtime.store.as_ref(), task, &stop, message).await;
            Err(Reply::internal(None, message))
        }
    }
}

/// Step 4, detached: delivers the answer or fails the task.
pub(crate) fn deliver(cx: &RequestContext, mut caller: Box<dyn CallInner>, delivery: Delivery) {
    let (runtime, parts) = (&*cx.runtime, &cx.parts);
    let mut template = Template::from_parts(parts);
    if let Some(session) = delivery
        .session
        .as_deref()
        .and_then(|s| HeaderValue::from_str(s).ok())
    {
        template.set_header(HeaderName::from_static("mcp-session-id"), session);
    }
    let store = runtime.store.clone();
    runtime.background.spawn(async move {
        let stop = delivery.stop.clone();
        let delivered = tokio::select! {
            // The task ended meanwhile (cancelled, expired, failed): there is
            // no call left to answer.
            _ = stop.cancelled() => return,
            delivered = send(&mut *caller, &template, &delivery.body) => delivered,
        };
        if let Err(last) = delivered {
            tracing::warn!(task = %delivery.task, last, "an answer could not be delivered");
            let message = "The answer to the tool's request could not be delivered";
            fail(store.as_ref(), delivery.task, &delivery.stop, message).await;
        }
    });
}

/// Sends `body` to the tool's session, each try bounded by [`SEND_TIMEOUT`].
async fn send(caller: &mut dyn CallInner, template: &Template, body: &str) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
        }
        let Ok(request) = template.post(body.to_owned(), LEGACY_VERSION) else {
            return Err("the request could not be built".into());
        };
        match tokio::time::timeout(SEND_TIMEOUT, caller.call(request)).await {
            Ok(Ok(response)) if response.status().is_success() => return Ok(()),
            Ok(Ok(response)) if response.status() == StatusCode::NOT_FOUND => {
                return Err("the inner server no longer knows the session".into());
            }
            Ok(Ok(response)) => {
                last = format!("the inner server answered HTTP {}", response.status());
            }
            Ok(Err(error)) => last = error.to_string(),
            Err(_) => last = format!("no answer within {SEND_TIMEOUT:?}"),
        }
    }
    Err(last)
}

/// Fails the task, then fires its stop signal. The stop signal makes the
/// driver give up without a write of its own, so the failure is written
/// first, retried a bounded number of times while the store is down.
async fn fail(store: &dyn TaskStore, task: TaskId, stop: &CancellationToken, message: &str) {
    tracing::warn!(%task, message, "a relayed answer was lost");
    let error = ErrorObject::new(INTERNAL_ERROR, message).to_raw();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::MAX);
    for _ in 0..FAIL_TRIES {
        match store.fail(task, error.clone()).await {
            Ok(()) | Err(StoreError::NotFound | StoreError::InvalidTransition { .. }) => break,
            Err(error) => {
                tracing::warn!(%task, %error, "could not fail the task, retrying");
                backoff.sleep().await;
            }
        }
    }
    stop.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_responses_are_answers() {
        assert!(is_response(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#));
        assert!(is_response(
            r#"{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"no"}}"#
        ));
        assert!(!is_response(r#"{"jsonrpc":"2.0","id":"x"}"#));
        assert!(!is_response("[]"));
    }
}
