//! [`RedisTaskStore`]: tasks in Redis, shared by every layer instance behind
//! one load balancer (feature `redis`).
//!
//! Any instance may create a task, and any other may answer `tasks/get`,
//! `tasks/cancel` or `tasks/update` for it. The semantics are exactly those of
//! [`MemoryTaskStore`](super::MemoryTaskStore) (the rules table of
//! [`store`](super)); the contract suite in `tests/contract` runs against both.
//!
//! # Keys
//!
//! Every key starts with a configurable prefix (default `mcp-tasks`), so that
//! several deployments can share one Redis. The id is wrapped in a hash tag
//! (`{…}`) so that a task's two keys always share a cluster slot.
//!
//! | Key / channel               | Type       | Holds                                   | Why                                                                        |
//! |-----------------------------|------------|-----------------------------------------|----------------------------------------------------------------------------|
//! | `<prefix>:task:{<id>}`      | hash       | status, owner, times, TTL, poll interval, message, result or error | one key per task, so that one `PEXPIREAT created+ttl` ends all of it and an expired task reads like one that never existed |
//! | `<prefix>:round:{<id>}`     | hash       | the open input round: requests in order, which keys are outstanding, answers in order, the resume context | deleted in one step when the round completes or the task ends; expires with the task |
//! | `<prefix>:owned:<owner>`    | sorted set | the owner's task ids, scored by creation time (ms) | the per-owner listing (`tasks/list`) pages it by cursor instead of scanning the keyspace |
//! | `<prefix>:unowned`          | sorted set | ids of tasks created without a principal | a distinct key for "no owner": unowned tasks are a security context of their own |
//! | `<prefix>:ended` (channel)  | pub/sub    | the id of each task that just became terminal | fires the stop signal on whichever instance runs the task's work |
//!
//! Task hash fields: `s` status, `w` owner (absent for none), `c` created and
//! `u` updated (ms since the epoch), `e` deadline (ms, absent without TTL),
//! `t` TTL and `p` poll interval (ns), `m` status message, `r` result or
//! error object (verbatim bytes). Payloads are never parsed on the Redis
//! side, so a client reads back exactly what the inner server answered.
//!
//! An owner index expires with its longest-lived task (`PEXPIREAT … GT`;
//! never while it holds a task without TTL). Entries of expired tasks are
//! dropped lazily: the two oldest are checked at each `create`, and every
//! listing removes those it steps over.
//!
//! # Atomicity
//!
//! Each trait method is one Lua script (`EVALSHA`, loaded on demand), so
//! each transition reads and writes a task in one step that no other
//! instance can interleave with: the status check and the write of
//! `complete`, `fail`, `cancel` (with its owner check), `require_input`,
//! `answer_input` (owner check, recording only outstanding keys, and moving
//! to `working` with the answers and resume context when the round is full)
//! and `set_status_message` (non-terminal only). A late `complete` after a
//! `cancel` on another instance sees `cancelled` and is refused.
//!
//! `create` returns once Redis acknowledged the write (the script's reply);
//! from then on any instance's `get` finds the task. Redis acknowledges from
//! memory: persistence and replication are the deployment's choice.
//!
//! # Stop signals
//!
//! The [`CancellationToken`]s of [`CreatedTask::stop`] and
//! [`InputProgress::RoundComplete`] belong to the instance that handed them
//! out. It keeps them by id and fires one when
//!
//! - the task becomes terminal anywhere: the scripts that end a task
//!   `PUBLISH` its id on `<prefix>:ended` in the same atomic step, and every
//!   instance's subscriber fires its own token (after `complete` or `fail`
//!   the work is over already, and firing frees the entry);
//! - its deadline passes: a local timer, since Redis expiry announces nothing;
//! - a call on this instance finds the task terminal or gone.
//!
//! Pub/sub is at most once, and losing an announcement is harmless: the
//! work keeps running until it finishes, and its outcome is then refused by
//! the terminal state (`cancelled` stays `cancelled`), and that refusal fires
//! the token. A progress update meets the same refusal earlier. After a lost
//! subscription the subscriber resubscribes and checks every task it holds a
//! token for, so announcements missed meanwhile are made up for. Tokens are
//! registered before the write that makes them meaningful, so an
//! announcement that overtakes the write's reply still finds its token.
//!
//! Instances should keep their clocks in sync: creation and update times come
//! from the instance, expiry from the Redis server's clock.
//!
//! Needs Redis 7.0 or later (`PEXPIREAT … GT`). Redis Cluster is not
//! supported yet: `create` writes the task and its owner index, which live
//! in different slots.

mod list;
mod reply;
mod scripts;
mod stops;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{
    CancelOutcome, CreatedTask, InputProgress, InputRound, NewTask, StoreError, StoreFuture,
    TaskStore,
};
use crate::task::{TaskId, TaskSnapshot, TaskState, TaskStatus, Timestamp};
use scripts::{Keys, owner_args};
use stops::{Stops, Subscriber};

pub use list::{ListCursor, TaskPage};

/// The key prefix unless [`RedisTaskStoreBuilder::prefix`] says otherwise.
const DEFAULT_PREFIX: &str = "mcp-tasks";

/// Deadlines past this (about year 142,000) are stored without expiry, as
/// `PEXPIREAT` would refuse them; the memory store never reaches them either.
const MAX_DEADLINE_MS: u64 = 1 << 52;

/// The [`TaskStore`] that keeps tasks in Redis, for several layer instances.
///
/// Cloning is cheap; clones share one connection, one subscriber and one set
/// of stop signals. The background tasks stop when the last clone is dropped.
/// See the [module docs](self) for the key layout, atomicity and stop
/// signals.
///
/// ```no_run
/// # async fn demo() -> Result<(), mcp_tasks::StoreError> {
/// use mcp_tasks::TasksLayer;
/// use mcp_tasks::store::RedisTaskStore;
///
/// // Every instance behind the load balancer connects to the same Redis.
/// let store = RedisTaskStore::builder("redis://127.0.0.1:6379/")
///     .prefix("my-app-tasks")
///     .connect()
///     .await?;
/// let layer = TasksLayer::new(store);
/// # let _ = layer;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisTaskStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: ConnectionManager,
    keys: Arc<Keys>,
    stops: Arc<Stops>,
    shutdown: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.prefix())
            .field("held_stop_signals", &self.held_stop_signals())
            .finish()
    }
}

/// Settings of a [`RedisTaskStore`] before it connects.
#[derive(Clone, Debug)]
pub struct RedisTaskStoreBuilder {
    url: String,
    prefix: String,
    response_timeout: Duration,
    connection_timeout: Duration,
}

impl RedisTaskStoreBuilder {
    /// The key prefix (default `mcp-tasks`). Instances that share tasks must
    /// use the same one; deployments that share a Redis use different ones.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one Redis call may take before it fails as a backend error
    /// (default 5 s). Bounds every store call, so a stalled Redis never hangs
    /// a request.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long one connection attempt may take (default 1 s).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// Connects, subscribes to the end-of-task channel and starts the
    /// background tasks (the subscriber and the deadline timer), so it must
    /// run inside a Tokio runtime. Fails with [`StoreError::Backend`] when
    /// Redis cannot be reached.
    pub async fn connect(self) -> Result<RedisTaskStore, StoreError> {
        let client = redis::Client::open(self.url.as_str()).map_err(backend)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(self.response_timeout))
            .set_connection_timeout(Some(self.connection_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(1));
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(backend)?;
        let keys = Arc::new(Keys::new(self.prefix));
        let stops = Arc::new(Stops::default());
        let shutdown = CancellationToken::new();
        // Stops the background tasks unless a store comes out of this call,
        // also when the caller gives up on it half way.
        let abandoned = shutdown.clone().drop_guard();
        let (ready, subscribed) = oneshot::channel();
        let subscriber = Subscriber {
            client,
            conn: conn.clone(),
            keys: keys.clone(),
            stops: stops.clone(),
            shutdown: shutdown.clone(),
            timeout: self.response_timeout.max(self.connection_timeout),
        };
        tokio::spawn(stops::subscribe(subscriber, ready));
        let subscribed = match subscribed.await {
            Ok(subscribed) => subscribed.map_err(backend),
            Err(_) => Err(StoreError::backend("the task store subscriber ended")),
        };
        subscribed?;
        tokio::spawn(stops::reap(stops.clone(), shutdown.clone()));
        abandoned.disarm();
        Ok(RedisTaskStore {
            inner: Arc::new(Inner {
                conn,
                keys,
                stops,
                shutdown,
            }),
        })
    }
}

fn backend(error: redis::RedisError) -> StoreError {
    StoreError::Backend(Box::new(error))
}

/// Whether a write's answer means the task is over: gone, or terminal.
fn ended(result: &Result<(), StoreError>) -> bool {
    match result {
        Err(StoreError::NotFound) => true,
        Err(StoreError::InvalidTransition { from, .. }) => from.is_terminal(),
        _ => false,
    }
}

fn now_text() -> String {
    Timestamp::now().as_millis().to_string()
}

/// What `answer_input` found, before the stop signal is settled.
enum Answered {
    Hidden,
    NotWaiting {
        ended: bool,
    },
    Pending,
    Complete {
        deadline: Option<Timestamp>,
        answers: Vec<(String, Box<RawValue>)>,
        resume: Box<RawValue>,
    },
}

impl RedisTaskStore {
    /// Connects to `url` (`redis://host:port/db`) with the default settings.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::builder(url).connect().await
    }

    /// Settings for a store at `url`, before connecting.
    pub fn builder(url: impl Into<String>) -> RedisTaskStoreBuilder {
        RedisTaskStoreBuilder {
            url: url.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            response_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(1),
        }
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        self.inner.keys.prefix()
    }

    /// How many stop signals this instance holds: tasks whose work it started
    /// and that have not ended yet. Useful to watch for leaks.
    pub fn held_stop_signals(&self) -> usize {
        self.inner.stops.len()
    }

    fn conn(&self) -> ConnectionManager {
        self.inner.conn.clone()
    }

    /// `complete` and `fail`: one script, announcing the end.
    async fn finish(
        &self,
        id: TaskId,
        to: TaskStatus,
        payload: Box<RawValue>,
    ) -> Result<(), StoreError> {
        let keys = &self.inner.keys;
        let mut call = scripts::FINISH.key(keys.task(id));
        call.key(keys.round(id))
            .arg(to.as_str())
            .arg(payload.get())
            .arg(now_text())
            .arg(keys.channel())
            .arg(id.to_string());
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let result = reply::written(reply, |_| to);
        if result.is_ok() || ended(&result) {
            self.inner.stops.fire(id);
        }
        result
    }

    async fn answer(
        &self,
        id: TaskId,
        owner: Option<&str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> Result<Answered, StoreError> {
        let keys = &self.inner.keys;
        let [has_owner, owner] = owner_args(owner);
        let mut call = scripts::ANSWER_INPUT.key(keys.task(id));
        call.key(keys.round(id))
            .arg(has_owner)
            .arg(owner)
            .arg(now_text());
        for (key, answer) in &answers {
            call.arg(key.as_str()).arg(answer.get());
        }
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        if reply::is_absent(&reply) {
            return Ok(Answered::Hidden);
        }
        let mut items = reply::items(reply)?.into_iter();
        match reply::required(items.next(), "answer tag")?.as_str() {
            "pending" => Ok(Answered::Pending),
            "not_waiting" => {
                let status = reply::status(&reply::required(items.next(), "status")?)?;
                Ok(Answered::NotWaiting {
                    ended: status.is_terminal(),
                })
            }
            "complete" => {
                let deadline = reply::text(items.next().unwrap_or(Value::Nil))?
                    .map(|at| at.parse().map(Timestamp::from_millis))
                    .transpose()
                    .map_err(|_| reply::corrupt("a deadline"))?;
                let resume = reply::raw(reply::required(items.next(), "resume context")?)?;
                let mut answers = Vec::new();
                while let Some(key) = items.next() {
                    let key = reply::required(Some(key), "answer key")?;
                    let answer = reply::raw(reply::required(items.next(), "answer")?)?;
                    answers.push((key, answer));
                }
                Ok(Answered::Complete {
                    deadline,
                    answers,
                    resume,
                })
            }
            _ => Err(reply::corrupt("an unknown answer tag")),
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(async move {
            let id = task.id;
            let keys = &self.inner.keys;
            let deadline = task
                .ttl
                .map(|ttl| task.created_at.saturating_add(ttl))
                .filter(|at| at.as_millis() <= MAX_DEADLINE_MS);
            let owner = task.owner.as_deref();
            let [has_owner, owner_text] = owner_args(owner);
            let mut call = scripts::CREATE.key(keys.task(id));
            call.key(keys.index(owner))
                .arg(has_owner)
                .arg(owner_text)
                .arg(task.created_at.as_millis())
                .arg(
                    deadline
                        .map(|at| at.as_millis().to_string())
                        .unwrap_or_default(),
                )
                .arg(task.ttl.map(reply::nanos_text).unwrap_or_default())
                .arg(
                    task.poll_interval
                        .map(reply::nanos_text)
                        .unwrap_or_default(),
                )
                .arg(if task.status_message.is_some() {
                    "1"
                } else {
                    "0"
                })
                .arg(task.status_message.as_deref().unwrap_or_default())
                .arg(id.to_string())
                .arg(keys.task_head())
                .arg(Keys::TASK_TAIL);
            // Held before the write: an announcement may overtake the reply.
            let stop = self.inner.stops.hold(id);
            match call.invoke_async::<i64>(&mut self.conn()).await {
                Ok(1) => self.inner.stops.confirm(id, deadline),
                Ok(_) => {
                    self.inner.stops.release(id);
                    return Err(StoreError::backend("task id collision"));
                }
                Err(error) => {
                    self.inner.stops.release(id);
                    return Err(backend(error));
                }
            }
            let snapshot = TaskSnapshot {
                id,
                state: TaskState::Working,
                status_message: task.status_message,
                created_at: task.created_at,
                last_updated_at: task.created_at,
                ttl: task.ttl,
                poll_interval: task.poll_interval,
            };
            Ok(CreatedTask { snapshot, stop })
        })
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        Box::pin(async move {
            let keys = &self.inner.keys;
            let [has_owner, owner] = owner_args(owner);
            let mut call = scripts::GET.key(keys.task(id));
            call.key(keys.round(id)).arg(has_owner).arg(owner);
            let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
            if reply::is_absent(&reply) {
                return Ok(None);
            }
            let snapshot = reply::snapshot(id, reply::items(reply)?)?;
            if snapshot.status().is_terminal() {
                self.inner.stops.fire(id);
            }
            Ok(Some(snapshot))
        })
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let mut call = scripts::SET_MESSAGE.key(self.inner.keys.task(id));
            call.arg(message).arg(now_text());
            let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
            let result = reply::written(reply, |from| from);
            if ended(&result) {
                self.inner.stops.fire(id);
            }
            result
        })
    }

    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(self.finish(id, TaskStatus::Completed, result))
    }

    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(self.finish(id, TaskStatus::Failed, error))
    }

    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        Box::pin(async move {
            let keys = &self.inner.keys;
            let [has_owner, owner] = owner_args(owner);
            let mut call = scripts::CANCEL.key(keys.task(id));
            call.key(keys.round(id))
                .arg(has_owner)
                .arg(owner)
                .arg(now_text())
                .arg(keys.channel())
                .arg(id.to_string());
            let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
            if reply::is_absent(&reply) {
                return Ok(None);
            }
            let mut items = reply::items(reply)?.into_iter();
            let tag = reply::required(items.next(), "cancel tag")?;
            let snapshot = reply::snapshot(id, items)?;
            // Cancelled now or terminal before: the work is over either way,
            // and the local token fires before this call returns.
            self.inner.stops.fire(id);
            match tag.as_str() {
                "cancelled" => Ok(Some(CancelOutcome::Cancelled(snapshot))),
                "terminal" => Ok(Some(CancelOutcome::AlreadyTerminal(snapshot))),
                _ => Err(reply::corrupt("an unknown cancel tag")),
            }
        })
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let keys = &self.inner.keys;
            let mut call = scripts::REQUIRE_INPUT.key(keys.task(id));
            call.key(keys.round(id))
                .arg(now_text())
                .arg(round.resume.get());
            for (key, request) in &round.requests {
                call.arg(key.as_str()).arg(request.get());
            }
            let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
            let result = reply::written(reply, |_| TaskStatus::InputRequired);
            if ended(&result) {
                self.inner.stops.fire(id);
            }
            result
        })
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        Box::pin(async move {
            // Held before the write: the resumed call needs a token that a
            // cancel racing this round's completion still reaches.
            let stop = self.inner.stops.hold(id);
            let answered = self.answer(id, owner, answers).await;
            let stops = &self.inner.stops;
            match &answered {
                Ok(Answered::Complete { deadline, .. }) => stops.confirm(id, *deadline),
                _ => stops.release(id),
            }
            Ok(match answered? {
                Answered::Hidden => None,
                Answered::Pending => Some(InputProgress::Pending),
                Answered::NotWaiting { ended } => {
                    if ended {
                        stops.fire(id);
                    }
                    Some(InputProgress::NotWaiting)
                }
                Answered::Complete {
                    answers, resume, ..
                } => Some(InputProgress::RoundComplete {
                    answers,
                    resume,
                    stop,
                }),
            })
        })
    }
}
