//! 2025-11-25: `notifications/tasks/status` on a session's GET stream.
//!
//! The GET stream is the inner server's; the layer relays it event by event
//! and adds, between its events, one `notifications/tasks/status` (the
//! 2025-11-25 task) each time a task created in that session changes status
//! or status message, for tasks the requesting principal owns. The session
//! remembers its most recent 64 tasks; a task created while the stream is
//! open is watched from then on. A terminal task is announced once, then
//! forgotten. The stream counts as one subscription of the principal
//! ([`max_subscriptions`](crate::TasksLayer::max_subscriptions)); over the
//! cap it is relayed without notifications. It ends with the inner
//! server's stream or when the client leaves.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use http_body::Body;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::body::{BoxError, ResponseBody};
use crate::legacy::result::{Shown, changed};
use crate::legacy::sessions::Sessions;
use crate::runtime::Runtime;
use crate::runtime::feed::Hub;
use crate::runtime::feed::stream::{
    BUFFER, Inner, RESYNC, RETRY, event_stream, expiry, inner_events, sleep_until,
};
use crate::task::TaskId;

/// The inner server's GET `response` for `session`, with the status
/// notifications of the session's tasks added.
pub(crate) fn session_stream<RB>(
    (runtime, sessions, hub): (Arc<Runtime>, Arc<Sessions>, Arc<Hub>),
    owner: Option<String>,
    session: String,
    response: Response<RB>,
) -> Response<ResponseBody<RB>>
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let (head, events) = match inner_events(response) {
        Inner::Stream(head, events) => (head, events),
        Inner::Answer(answer) => return answer,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER);
    let ended = CancellationToken::new();
    let relay = {
        let (tx, ended) = (tx.clone(), ended.clone());
        async move {
            let mut events = events;
            loop {
                let event = tokio::select! {
                    _ = tx.closed() => break,
                    event = events.next() => event,
                };
                let Some(Ok(event)) = event else { break };
                if tx.send(Bytes::from(event)).await.is_err() {
                    break;
                }
            }
            ended.cancel();
        }
    };
    runtime.background.spawn_detached(relay);
    let background = runtime.background.clone();
    let feeder = feed((runtime, sessions, hub), owner, session, tx, ended);
    background.spawn_detached(feeder);
    let mut response = event_stream(rx);
    for (name, value) in &head.headers {
        response
            .headers_mut()
            .entry(name)
            .or_insert_with(|| value.clone());
    }
    response
}

/// Watches the session's tasks until the inner stream ends or the client
/// leaves.
async fn feed(
    (runtime, sessions, hub): (Arc<Runtime>, Arc<Sessions>, Arc<Hub>),
    owner: Option<String>,
    session: String,
    tx: mpsc::Sender<Bytes>,
    ended: CancellationToken,
) {
    let mut shown: HashMap<TaskId, Option<Shown>> = HashMap::new();
    let mut done: Vec<TaskId> = Vec::new();
    // When to read every task again: a failed read, or a TTL running out
    // (the store announces no expiry).
    let mut again: HashMap<TaskId, Instant> = HashMap::new();
    let mut opened = true;
    let Some((_, news)) = sessions.tasks(&session) else {
        return;
    };
    loop {
        // Listening before the list is read: a task noted in between wakes it.
        let news = news.notified();
        tokio::pin!(news);
        news.as_mut().enable();
        let Some((tasks, _)) = sessions.tasks(&session) else {
            return;
        };
        done.retain(|id| tasks.contains(id));
        for id in tasks {
            if !done.contains(&id) {
                // A task created while the stream is open was `working`
                // without a message when the client learned of it; one
                // from before is read first, and told from its next change.
                let known = (!opened).then_some(("working", None));
                shown.entry(id).or_insert(known);
            }
        }
        opened = false;
        let ids: Vec<TaskId> = shown.keys().copied().collect();
        let watch = match hub.watch(&runtime.store, owner.as_deref(), ids) {
            Ok(watch) => watch,
            Err(_) => {
                tracing::info!(
                    "a session's GET stream is over the subscription cap: relayed without task notifications"
                );
                return;
            }
        };
        // Baselines first (nothing to tell), then changes.
        let mut all = true;
        loop {
            let dirty = watch.mailbox.take();
            let read: Vec<TaskId> = if all || dirty.all {
                shown.keys().copied().collect()
            } else {
                dirty.ids.into_iter().collect()
            };
            for id in read {
                if !shown.contains_key(&id) {
                    continue;
                }
                again.remove(&id);
                let task = match runtime.store.get(id, owner.as_deref()).await {
                    Ok(Some(task)) => task,
                    Ok(None) => {
                        // Gone, or not this principal's: nothing to tell.
                        shown.remove(&id);
                        done.push(id);
                        continue;
                    }
                    Err(_) => {
                        again.insert(id, Instant::now() + RETRY);
                        continue;
                    }
                };
                if let Some(at) = expiry(&task) {
                    again.insert(id, at);
                }
                let told = shown.get_mut(&id).and_then(|seen| changed(seen, &task));
                if let Some(event) = told
                    && tx.send(event).await.is_err()
                {
                    return;
                }
                if task.status().is_terminal() {
                    shown.remove(&id);
                    again.remove(&id);
                    done.push(id);
                }
            }
            all = false;
            let due = again.values().min().copied();
            tokio::select! {
                _ = sleep_until(due) => all = true,
                _ = ended.cancelled() => return,
                _ = tx.closed() => return,
                _ = &mut news => break,
                _ = watch.mailbox.wake.notified() => {}
                _ = tokio::time::sleep(RESYNC), if !watch.fed => all = true,
            }
        }
    }
}
