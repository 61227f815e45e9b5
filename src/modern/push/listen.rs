//! One `subscriptions/listen` stream asking for task status: the
//! acknowledgement, then a feeder task that reads each changed task and
//! writes its notification.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::body::{ResponseBody, reply_response};
use crate::runtime::feed::hub::{Hub, Refused, Watch};
use crate::runtime::feed::stream::{BUFFER, RESYNC, RETRY, event_stream, expiry, sleep_until};
use crate::runtime::{Runtime, store_failed};
use crate::task::{TaskId, TaskSnapshot, TaskState, TaskStatus};
use crate::wire::jsonrpc::{ErrorObject, LIMIT_REACHED, Reply};
use crate::wire::sse;
use crate::wire::view::{TaskView, render};

/// The `_meta` key naming the subscription on every message of the stream.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The least time between two pushes of a task's status message alone.
const MESSAGE_EVERY: Duration = Duration::from_millis(250);

/// A declaring client's `subscriptions/listen` that asks for `taskIds`.
#[derive(Debug)]
pub(crate) struct ListenCall {
    /// The listen's JSON-RPC id: the subscription id.
    pub id: Box<RawValue>,
    /// The ids asked for, as the client wrote them.
    pub task_ids: Vec<String>,
    /// For a listen that asks for more than task status: the body the inner
    /// server gets (without `taskIds` and the extension).
    pub forward: Option<Bytes>,
}

/// A listen that passed the checks: the tasks agreed to, and the watch.
pub(super) struct Agreed {
    pub tasks: Vec<(String, TaskSnapshot)>,
    pub watch: Watch,
}

impl Agreed {
    /// The ids as the client wrote them, for the acknowledgement.
    pub(super) fn names(&self) -> Vec<&str> {
        self.tasks.iter().map(|(text, _)| text.as_str()).collect()
    }
}

/// Answers a listen that asks only for task status: an error at once, or
/// the stream.
pub(crate) async fn listen<B>(
    runtime: Arc<Runtime>,
    hub: &Hub,
    owner: Option<String>,
    call: ListenCall,
) -> Response<ResponseBody<B>> {
    let agreed = match agree(&runtime, hub, owner.as_deref(), &call).await {
        Ok(agreed) => agreed,
        Err(refused) => return reply_response(refused),
    };
    let ack = json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "notifications": {"taskIds": agreed.names()},
            "_meta": {SUBSCRIPTION_ID: &call.id},
        },
    });
    // Room for the first burst (the ack and every task's state) on top of
    // the usual buffer, so that only a client that stops reading is slow.
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER + agreed.tasks.len() + 1);
    // The buffer is empty: the ack always fits.
    let _ = tx.try_send(sse::event(ack.to_string().as_bytes()));
    let first = agreed.tasks.into_iter().map(|(_, task)| task).collect();
    Feeder::new(runtime, owner, call.id, agreed.watch, tx, None).start(first);
    event_stream(rx)
}

/// Checks a listen and registers its watch: the caps, then which of the
/// asked tasks `owner` may see. `Err` is the JSON-RPC answer instead.
pub(super) async fn agree(
    runtime: &Arc<Runtime>,
    hub: &Hub,
    owner: Option<&str>,
    call: &ListenCall,
) -> Result<Agreed, Reply> {
    let most = hub.limits().task_ids;
    if call.task_ids.len() > most {
        let message = format!("notifications.taskIds may name at most {most} tasks");
        return Err(Reply::bad_params(Some(&call.id), message));
    }
    if runtime.background.is_closing() {
        return Err(refusal(&call.id, "The server is shutting down"));
    }
    let mut asked = Vec::new();
    let mut seen = HashSet::new();
    for text in &call.task_ids {
        if let Some(id) = TaskId::parse(text).filter(|id| seen.insert(*id)) {
            asked.push((text, id));
        }
    }
    // Watched before the first read: a change between the two still wakes
    // the stream (and a repeated state is not pushed twice).
    let ids = asked.iter().map(|(_, id)| *id).collect();
    match hub.watch(&runtime.store, owner, ids) {
        Ok(mut watch) => {
            let mut tasks = Vec::new();
            for (text, id) in asked {
                match runtime.store.get(id, owner).await {
                    Ok(Some(snapshot)) => tasks.push((text.clone(), snapshot)),
                    Ok(None) => watch.forget(id),
                    Err(error) => return Err(store_failed(Some(&call.id), &error)),
                }
            }
            Ok(Agreed { tasks, watch })
        }
        Err(refused) => {
            let (per_owner, total) = (hub.limits().per_owner, hub.limits().total);
            let message = match refused {
                Refused::Owner => {
                    format!("Too many task subscriptions: at most {per_owner} per principal")
                }
                Refused::Total => format!("Too many task subscriptions: at most {total} in all"),
            };
            crate::observe::events::refused("subscriptions", &message);
            Err(refusal(&call.id, &message))
        }
    }
}

fn refusal(id: &RawValue, message: &str) -> Reply {
    let error = ErrorObject::new(LIMIT_REACHED, message);
    Reply::error(http::StatusCode::OK, Some(id), error)
}

/// What a subscription last pushed of a task: its status, its message, and
/// the input it asks for (a new round with the same message is news).
type Seen = (TaskStatus, Option<String>, Option<String>);

/// Feeds one stream until it ends.
pub(super) struct Feeder {
    runtime: Arc<Runtime>,
    owner: Option<String>,
    id: Box<RawValue>,
    watch: Watch,
    tx: mpsc::Sender<Bytes>,
    last: HashMap<TaskId, (Seen, Instant)>,
    /// Tasks to read again at a time: message changes held back by
    /// [`MESSAGE_EVERY`], and reads that failed ([`RETRY`]).
    deferred: HashMap<TaskId, Instant>,
    /// When each task's TTL runs out: the store announces no expiry, so
    /// the stream reads the task then, finds it gone and lets it go.
    expires: HashMap<TaskId, Instant>,
    /// In a merged listen, the link to the relay of the inner stream.
    merged: Option<Merged>,
}

/// What the feeder of a merged listen shares with the relay of the inner
/// server's stream.
#[derive(Clone, Default)]
pub(super) struct Merged {
    /// The inner stream ended (the task part stops with it), or the task
    /// part gave up on a slow client (the relay stops).
    pub ended: CancellationToken,
    /// The stream's last message when the task part ended it: the relay,
    /// which owns the order of the stream, sends it.
    pub last_word: Arc<std::sync::Mutex<Option<Bytes>>>,
}

/// Why a stream stopped.
enum Stop {
    /// Nothing left to report, or the layer drains: the graceful end.
    Done,
    /// The client read too slowly.
    Slow,
    /// The client left.
    Gone,
}

impl Feeder {
    pub(super) fn new(
        runtime: Arc<Runtime>,
        owner: Option<String>,
        id: Box<RawValue>,
        watch: Watch,
        tx: mpsc::Sender<Bytes>,
        merged: Option<Merged>,
    ) -> Self {
        Self {
            runtime,
            owner,
            id,
            watch,
            tx,
            last: HashMap::new(),
            deferred: HashMap::new(),
            expires: HashMap::new(),
            merged,
        }
    }

    /// Feeds the stream from `first` (the tasks' state now) on, on a task
    /// of its own.
    pub(super) fn start(self, first: Vec<TaskSnapshot>) {
        let background = self.runtime.background.clone();
        background.spawn_detached(self.run(first));
    }

    async fn run(mut self, first: Vec<TaskSnapshot>) {
        let merged = self.merged.clone();
        let stop = match &merged {
            Some(link) => tokio::select! {
                _ = link.ended.cancelled() => Stop::Gone,
                fed = self.feed(first) => fed.err().unwrap_or(Stop::Done),
            },
            None => self.feed(first).await.err().unwrap_or(Stop::Done),
        };
        let end = match stop {
            Stop::Gone => return,
            // The inner server's stream goes on and ends the listen.
            Stop::Done if merged.is_some() => return,
            Stop::Done => json!({
                "jsonrpc": "2.0",
                "id": &self.id,
                "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: &self.id}},
            }),
            Stop::Slow => {
                tracing::info!("a task subscription read too slowly and was ended");
                json!({
                    "jsonrpc": "2.0",
                    "id": &self.id,
                    "error": {
                        "code": LIMIT_REACHED,
                        "message": "The subscriber read too slowly: its task notifications were stopped",
                    },
                })
            }
        };
        let end = sse::event(end.to_string().as_bytes());
        match &merged {
            // The relay sends it after what it already forwarded, and stops.
            Some(link) => {
                *link.last_word.lock().unwrap_or_else(|p| p.into_inner()) = Some(end);
                link.ended.cancel();
            }
            // The last free slot is kept for this.
            None => {
                let _ = self.tx.try_send(end);
            }
        }
    }

    async fn feed(&mut self, first: Vec<TaskSnapshot>) -> Result<(), Stop> {
        for task in first {
            self.consider(task)?;
        }
        let closing = self.runtime.background.closing_signal();
        let keep_alive = self.runtime.config.keep_alive;
        // Without a change feed, the timer is all there is.
        let mut resync =
            (!self.watch.fed).then(|| tokio::time::interval_at(Instant::now() + RESYNC, RESYNC));
        let mut beat = tokio::time::interval_at(Instant::now() + keep_alive, keep_alive);
        loop {
            if self.last.is_empty() {
                return Ok(());
            }
            let due = self
                .deferred
                .values()
                .chain(self.expires.values())
                .min()
                .copied();
            let mut all = false;
            tokio::select! {
                _ = self.tx.closed() => return Err(Stop::Gone),
                _ = closing.cancelled() => return Ok(()),
                _ = self.watch.mailbox.wake.notified() => {}
                _ = tick(&mut resync) => all = true,
                _ = beat.tick() => {
                    self.send(Bytes::from_static(sse::KEEP_ALIVE))?;
                    continue;
                }
                _ = sleep_until(due) => {}
            }
            let dirty = self.watch.mailbox.take();
            let now = Instant::now();
            let mut read: HashSet<TaskId> = if all || dirty.all {
                self.last.keys().copied().collect()
            } else {
                dirty.ids
            };
            for due in [&mut self.deferred, &mut self.expires] {
                due.retain(|&id, at| {
                    let ripe = *at <= now;
                    if ripe {
                        read.insert(id);
                    }
                    !ripe
                });
            }
            for id in read {
                if !self.last.contains_key(&id) {
                    continue;
                }
                match self.runtime.store.get(id, self.owner.as_deref()).await {
                    Ok(Some(task)) => self.consider(task)?,
                    // Expired or deleted: nothing more to report.
                    Ok(None) => self.forget(id),
                    // Read again shortly: the change it was woken for may be
                    // the last one.
                    Err(error) => {
                        tracing::debug!(task = %id, %error, "a subscribed task was not read");
                        self.deferred.insert(id, Instant::now() + RETRY);
                    }
                }
            }
        }
    }

    /// Pushes `task` if a subscriber would see a change.
    fn consider(&mut self, task: TaskSnapshot) -> Result<(), Stop> {
        let asks = match &task.state {
            TaskState::InputRequired { requests } => Some(requests.get().to_owned()),
            _ => None,
        };
        let seen: Seen = (task.status(), task.status_message.clone(), asks);
        let now = Instant::now();
        if let Some(at) = expiry(&task) {
            self.expires.insert(task.id, at);
        }
        match self.last.get(&task.id) {
            Some((before, _)) if *before == seen => return Ok(()),
            Some(((status, _, asked), at))
                if *status == seen.0 && *asked == seen.2 && at.elapsed() < MESSAGE_EVERY =>
            {
                // Only the message changed, and too soon: the latest goes later.
                self.deferred.insert(task.id, *at + MESSAGE_EVERY);
                return Ok(());
            }
            _ => {}
        }
        let mut params =
            serde_json::to_value(render(&task, TaskView::Pushed)).unwrap_or_else(|_| json!({}));
        params["_meta"] = json!({SUBSCRIPTION_ID: &self.id});
        let message = json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params});
        self.send(sse::event(message.to_string().as_bytes()))?;
        self.deferred.remove(&task.id);
        if seen.0.is_terminal() {
            // A terminal task never changes again.
            self.forget(task.id);
        } else {
            self.last.insert(task.id, (seen, now));
        }
        Ok(())
    }

    fn forget(&mut self, id: TaskId) {
        self.last.remove(&id);
        self.deferred.remove(&id);
        self.expires.remove(&id);
        self.watch.forget(id);
    }

    /// Queues one event, keeping the last slot for the end of the stream.
    fn send(&self, event: Bytes) -> Result<(), Stop> {
        if self.tx.is_closed() {
            return Err(Stop::Gone);
        }
        if self.tx.capacity() <= 1 {
            return Err(Stop::Slow);
        }
        self.tx.try_send(event).map_err(|_| Stop::Gone)
    }
}

async fn tick(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}
