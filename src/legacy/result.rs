//! `tasks/result` of a 2025-11-25 session: wait until the task is terminal,
//! then answer what the inner server answered.
//!
//! | The task                 | The answer                                                      |
//! |--------------------------|-----------------------------------------------------------------|
//! | already terminal         | JSON at once                                                    |
//! | `working`                | an SSE stream: keep-alive comments, then the outcome as its one response |
//! | `input_required`         | on that stream, the relayed request(s) of the inner server first |
//! | changes while it waits   | on that stream, `notifications/tasks/status` (the 2025-11-25 task) at each change of status or status message, the last one for the terminal status just before the outcome |
//! | `completed`              | the inner result verbatim, `_meta` gaining `io.modelcontextprotocol/related-task` |
//! | `failed`                 | the inner JSON-RPC error verbatim (an error response has no `_meta`) |
//! | `cancelled`              | `-32602`: a cancelled task has no result                        |
//! | unknown, expired, foreign | `-32602`, as `tasks/get`                                       |
//!
//! The wait reads the store every [`WAIT_POLL`], so it works the same when
//! another instance runs the task. Comments every `keep_alive` (15 s by
//! default) keep idle proxies from cutting a long wait. A client that hangs
//! up ends the wait; the task runs on.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::input::with_related_task;
use super::route::{LegacyTask, error};
use super::waiters::{Waiters, Waiting};
use crate::body::ResponseBody;
use crate::body::reply_response as json;
use crate::runtime::RequestContext;
use crate::runtime::feed::stream::events_from;
use crate::runtime::{Runtime, store_failed};
use crate::task::{TaskId, TaskSnapshot, TaskState};
use crate::wire::jsonrpc::{ErrorObject, INVALID_PARAMS, LIMIT_REACHED, Reply};
use crate::wire::raw::Members;
use crate::wire::view::{TaskView, render, status_in};

/// How often a waiting `tasks/result` reads the task.
pub(crate) const WAIT_POLL: Duration = Duration::from_millis(200);

/// What a `tasks/result` still waiting when the drain is over gets.
const GONE: &str = "The server shut down before the task ended; ask for its result again";

/// The answer of `tasks/result` for a terminal task; `None` while it runs.
fn outcome(id: &RawValue, task: &TaskSnapshot) -> Option<Reply> {
    Some(match &task.state {
        TaskState::Completed { result } => {
            // A result that is not an object cannot carry `_meta`: verbatim.
            let related = with_related_task(result.get(), task.id)
                .and_then(|text| RawValue::from_string(text).ok());
            Reply::result(id, related.as_ref().unwrap_or(result))
        }
        TaskState::Failed { error } => Reply::error_raw(http::StatusCode::OK, Some(id), error),
        TaskState::Cancelled => error(
            id,
            INVALID_PARAMS,
            "The task was cancelled: it has no result",
        ),
        TaskState::Working | TaskState::InputRequired { .. } => return None,
    })
}

/// What a status notification shows of a task: its 2025-11-25 status and
/// its message.
pub(crate) type Shown = (&'static str, Option<String>);

/// A `notifications/tasks/status` event when `task` differs from what
/// `shown` says the client saw (the first call only records it).
pub(crate) fn changed(shown: &mut Option<Shown>, task: &TaskSnapshot) -> Option<Bytes> {
    let now = (
        status_in(task, TaskView::Legacy),
        task.status_message.clone(),
    );
    let first = shown.is_none();
    if shown.as_ref() == Some(&now) {
        return None;
    }
    *shown = Some(now);
    if first {
        return None;
    }
    #[derive(serde::Serialize)]
    struct Notification<'a> {
        jsonrpc: &'static str,
        method: &'static str,
        params: crate::wire::view::Rendered<'a>,
    }
    let notification = Notification {
        jsonrpc: "2.0",
        method: "notifications/tasks/status",
        params: render(task, TaskView::Legacy),
    };
    serde_json::to_vec(&notification)
        .ok()
        .map(|json| event(&json))
}

/// One SSE event carrying `data` (split into lines as SSE requires).
fn event(data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 16);
    for line in data.split(|b| *b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
    Bytes::from(out)
}

/// Answers `tasks/result`.
pub(crate) async fn answer<B>(
    cx: RequestContext,
    waiters: &Waiters,
    call: LegacyTask,
) -> Response<ResponseBody<B>> {
    let (runtime, owner) = (cx.runtime, cx.owner.key);
    let Some(task) = TaskId::parse(&call.task_id) else {
        return json(Reply::task_not_found(&call.id));
    };
    let shown = match runtime.store.get(task, owner.as_deref()).await {
        Ok(Some(snapshot)) => {
            if let Some(reply) = outcome(&call.id, &snapshot) {
                return json(reply);
            }
            let mut shown = None;
            // What the client knows when it starts waiting: nothing to tell.
            let _ = changed(&mut shown, &snapshot);
            shown
        }
        Ok(None) => return json(Reply::task_not_found(&call.id)),
        Err(e) => return json(store_failed(Some(&call.id), &e)),
    };
    let Some(waiting) = waiters.enter(task, owner.as_deref()) else {
        let limits = waiters.limits();
        let message = format!(
            "Too many tasks/result streams are waiting (at most {} per task and {} per principal)",
            limits.per_task, limits.per_owner
        );
        tracing::info!(%task, message, "a tasks/result waiter was refused");
        return json(error(&call.id, LIMIT_REACHED, message));
    };
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let background = runtime.background.clone();
    background.spawn_detached(wait(runtime, owner, task, call.id, tx, waiting, shown));
    events_from(rx)
}

/// Feeds the stream of one waiting `tasks/result` until the outcome.
async fn wait(
    runtime: Arc<Runtime>,
    owner: Option<String>,
    task: TaskId,
    id: Box<RawValue>,
    tx: mpsc::Sender<Bytes>,
    _waiting: Waiting,
    mut status: Option<Shown>,
) {
    let keep_alive = runtime.config.keep_alive;
    let done = runtime.background.done_signal();
    let mut relayed = HashSet::new();
    let mut last_sent = Instant::now();
    loop {
        // The drain is over: this read is the last (a task run elsewhere,
        // or left to run again after a restart, would hold the server's
        // own shutdown).
        let last = done.is_cancelled();
        let snapshot = match runtime.store.get(task, owner.as_deref()).await {
            Ok(Some(snapshot)) => snapshot,
            Ok(None) => {
                let _ = tx.send(event(&Reply::task_not_found(&id).body)).await;
                return;
            }
            Err(e) => {
                let reply = store_failed(Some(&id), &e);
                let _ = tx.send(event(&reply.body)).await;
                return;
            }
        };
        if let Some(announce) = changed(&mut status, &snapshot) {
            if tx.send(announce).await.is_err() {
                return;
            }
            last_sent = Instant::now();
        }
        if let Some(reply) = outcome(&id, &snapshot) {
            let _ = tx.send(event(&reply.body)).await;
            return;
        }
        if let TaskState::InputRequired { requests } = &snapshot.state
            && let Ok(requests) = Members::parse(requests.get())
        {
            // Relayed requests only (bare-number keys): the `<round>.<key>`
            // requests of a 2026-07-28 task are not messages this client
            // could answer.
            for (key, request) in requests.0 {
                if !key.contains('.') && relayed.insert(key.into_owned()) {
                    if tx.send(event(request.get().as_bytes())).await.is_err() {
                        return;
                    }
                    last_sent = Instant::now();
                }
            }
        }
        if last {
            let error = ErrorObject::new(LIMIT_REACHED, GONE);
            let reply = Reply::error(http::StatusCode::OK, Some(&id), error);
            let _ = tx.send(event(&reply.body)).await;
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(WAIT_POLL) => {}
            _ = tx.closed() => return,
            _ = done.cancelled() => continue,
        }
        if last_sent.elapsed() >= keep_alive {
            if tx
                .send(Bytes::from_static(crate::wire::sse::KEEP_ALIVE))
                .await
                .is_err()
            {
                return;
            }
            last_sent = Instant::now();
        }
    }
}
