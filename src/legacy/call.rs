//! A task-augmented `tools/call` of a 2025-11-25 session.
//!
//! The client asked for a task, so it gets one at once: the nested
//! `CreateTaskResult` `{"task":{…,"ttl","pollInterval"}}`. The call goes to the
//! inner server without `params.task` and under an id of the layer's
//! (`"mcp-tasks:<task>"`, so the client's later ids cannot collide with it),
//! in the client's session and with its credentials, and is driven in the
//! background like any parked call.
//!
//! The requested `ttl` is honoured up to the configured maximum; without one
//! the configured TTL applies. The TTL actually given is the one reported.
//!
//! For the call observer (`observe::calls`) such a call is parked: it is
//! recorded when its task ends, from the moment it arrived here; one that
//! gets no task (over a limit, the store failing) is recorded at once, as
//! failed and not parked.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::input::Relay;
use super::route::{LEGACY_VERSION, LegacyCall, error};
use super::sessions::Sessions;
use crate::config::TasksConfig;
use crate::observe::calls::ParkedCall;
use crate::runtime::RequestContext;
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::Template;
use crate::runtime::{First, NotStarted, Runtime, Start};
use crate::task::TaskId;
use crate::wire::jsonrpc::{LIMIT_REACHED, Reply};
use crate::wire::progress::{self, Token};
use crate::wire::raw::{edit_object, empty_object, string_at};
use crate::wire::splice::{Edit, member_cut, splice_present};
use crate::wire::view::{Rendered, TaskView, render};

/// The nested 2025-11-25 `CreateTaskResult`.
#[derive(Serialize)]
struct Created<'a> {
    task: Rendered<'a>,
}

/// The TTL a task gets when the client asked for `requested` milliseconds.
pub(crate) fn granted_ttl(config: &TasksConfig, requested: Option<u64>) -> Option<Duration> {
    match requested {
        None => config.ttl,
        Some(millis) => {
            let asked = Duration::from_millis(millis.max(1));
            Some(config.max_ttl().map_or(asked, |max| asked.min(max)))
        }
    }
}

/// The call as the inner server gets it: the layer's `inner_id` for the
/// client's id, and no `params.task` unless `keep_task` (a tool the inner
/// server runs only as a task: `follow`). Spliced along the spans the one
/// parse found; every other byte as the client sent it.
fn forwarded_body(
    body: &[u8],
    call: &LegacyCall,
    inner_id: &str,
    keep_task: bool,
) -> Option<Bytes> {
    let task = match member_cut(body, call.task.clone(), "task") {
        _ if keep_task => None,
        Some(cut) => Some(Edit::cut(cut)),
        // An escaped key: the params object written again without it.
        None => {
            let params = std::str::from_utf8(body.get(call.params.clone())?).ok()?;
            let edited = edit_object(params, &[("task", None)])?;
            Some(Edit::put(call.params.clone(), edited.into_bytes()))
        }
    };
    let id = Edit::put(call.id_at.clone(), inner_id.as_bytes());
    // The task's status message comes from the progress the inner server
    // reports; no client reads this call's stream.
    let token = Token::next();
    let progress = call
        .progress
        .and_then(|place| progress::insert(body, place, &token));
    splice_present(body, [Some(id), task, progress])
}

/// Whether the inner server runs the called tool (`tool`, its name) only
/// as a task of its own (`follow`), as its `tools/list` in the client's
/// session says.
async fn runs_as_task(
    runtime: &Runtime,
    caller: &mut dyn CallInner,
    template: &Template,
    tool: Option<&str>,
) -> bool {
    let Some(tool) = tool else {
        return false;
    };
    let version = http::HeaderValue::from_static(LEGACY_VERSION);
    let limit = runtime.config.max_result_bytes;
    let asked = (template, &version);
    runtime
        .hints
        .task_required(caller, asked, limit, tool)
        .await
}

/// Creates the task, answers it, and starts the call in the background.
pub(crate) async fn call(
    cx: RequestContext,
    sessions: &Sessions,
    caller: Box<dyn CallInner>,
    call: LegacyCall,
) -> Reply {
    let observed = cx.runtime.calls.as_ref().map(|observer| {
        let tool = string_at(&cx.body, call.name.clone()).unwrap_or_default();
        ParkedCall::new(observer.clone(), Instant::now(), tool.into())
    });
    let reply = start_task(cx, sessions, caller, call, observed.clone()).await;
    // No task: the client got an error for its call.
    if let Some(observed) = observed.filter(|_| reply.code.is_some()) {
        observed.refused();
    }
    reply
}

/// [`call`], with the call `observed` for the call observer, recorded by
/// the task when it ends.
async fn start_task(
    cx: RequestContext,
    sessions: &Sessions,
    caller: Box<dyn CallInner>,
    call: LegacyCall,
    observed: Option<ParkedCall>,
) -> Reply {
    let RequestContext {
        runtime,
        parts,
        body: bytes,
        owner,
        ..
    } = cx;
    let owner = owner.key;
    let id = match TaskId::generate() {
        Ok(id) => id,
        Err(error) => {
            tracing::error!(%error, "no task id from the OS random source");
            return Reply::internal(Some(&call.id), "No task id could be drawn");
        }
    };
    let inner_id = serde_json::to_string(&format!("mcp-tasks:{id}")).unwrap_or_default();
    let template = Template::from_parts(&parts);
    let mut caller = caller;
    let tool = string_at(&bytes, call.name.clone());
    let follows = runs_as_task(&runtime, &mut *caller, &template, tool.as_deref()).await;
    let Some(body) = forwarded_body(&bytes, &call, &inner_id, follows) else {
        return Reply::internal(Some(&call.id), "request parse lost its place");
    };
    let Ok(request) = template.post(body, LEGACY_VERSION) else {
        return Reply::internal(Some(&call.id), "the call could not be forwarded");
    };
    let Ok(inner_id) = RawValue::from_string(inner_id) else {
        return Reply::internal(Some(&call.id), "the call id could not be written");
    };
    let start = Start {
        waited: std::time::Duration::ZERO,
        owner,
        tool,
        ttl: granted_ttl(&runtime.config, call.ttl),
        status_message: None,
        caller,
        template,
        params: empty_object(),
        dialect: Box::new(Relay::new(inner_id.clone(), follows)),
        call: observed,
    };
    let first = First::Send {
        id: inner_id,
        request: Box::new(request),
    };
    match runtime.start_as(id, start, first).await {
        Ok(snapshot) => {
            sessions.note_augmented(&call.session, &call.id);
            sessions.note_task(&call.session, id);
            let created = Created {
                task: render(&snapshot, TaskView::Legacy),
            };
            Reply::result(&call.id, created)
        }
        Err(NotStarted { why, .. }) => {
            let message = why.message(&runtime);
            if why.is_limit() {
                tracing::info!(reason = message, "a 2025-11-25 task was refused");
                error(&call.id, LIMIT_REACHED, message)
            } else {
                tracing::warn!(reason = message, "could not create a 2025-11-25 task");
                Reply::internal(Some(&call.id), message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::progress::Place;
    use crate::wire::raw::{Members, span};

    #[test]
    fn the_forwarded_call_loses_its_task_and_takes_the_layer_id() {
        let body = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","task":{"ttl":60000},"arguments":{"n":123456789012345678901234567890}}}"#;
        let text = std::str::from_utf8(body).unwrap();
        let envelope = Members::parse(text).unwrap();
        let params = envelope.get("params").unwrap();
        let task = Members::parse(params.get()).unwrap().get("task").unwrap();
        let call = LegacyCall {
            id: RawValue::from_string("5".into()).unwrap(),
            session: "s".into(),
            ttl: Some(60000),
            id_at: span(body, envelope.get("id").unwrap().get()).unwrap(),
            params: span(body, params.get()).unwrap(),
            task: span(body, task.get()).unwrap(),
            name: None,
            progress: Some(Place::Params(span(body, params.get()).unwrap().start)),
        };
        let kept = forwarded_body(body, &call, r#""mcp-tasks:t""#, true).unwrap();
        let kept: serde_json::Value = serde_json::from_slice(&kept).unwrap();
        assert_eq!(kept["params"]["task"]["ttl"], 60000, "{kept}");
        let forwarded = forwarded_body(body, &call, r#""mcp-tasks:t""#, false).unwrap();
        let text = std::str::from_utf8(&forwarded).unwrap();
        let (head, tail) = text
            .split_once(r#""progressToken":"mcp-tasks/"#)
            .expect(text);
        assert_eq!(
            head,
            r#"{"jsonrpc":"2.0","id":"mcp-tasks:t","method":"tools/call","params":{"_meta":{"#
        );
        assert!(
            tail.ends_with(r#""},"name":"x","arguments":{"n":123456789012345678901234567890}}}"#),
            "{text}"
        );
    }
}
