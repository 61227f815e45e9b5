//! Where tasks live: the [`TaskStore`] trait, the in-memory default, and
//! the Redis (feature `redis`) and SQLite (feature `sqlite`) stores.
//!
//! The layer never touches task state except through this trait, so a store
//! shared by several machines (Redis) can make every transition atomic on its
//! side. The rules every store keeps:
//!
//! | Rule                                                        | Why                                                        |
//! |-------------------------------------------------------------|------------------------------------------------------------|
//! | `create` returns only once `get` would find the task        | a task handle must never point at nothing (SEP-2663)       |
//! | terminal states never change                                | a client that read an outcome reads it again               |
//! | a late outcome never overwrites `cancelled`                 | the cancel ack was the last word                           |
//! | the TTL runs from creation                                  | `ttlMs` is "from creation" on both protocol generations    |
//! | an expired task reads exactly like an unknown one           | expiry must not leak which ids once existed                |
//! | another principal's task reads exactly like an unknown one  | existence must not leak across principals                  |
//! | a backend failure is an error, never "no such task"         | a client must not give up on a task because Redis blinked  |
//! | `list` shows exactly one owner's live tasks                 | a listing must not leak other principals' or expired tasks |
//! | `create` refuses a task past its [`Quota`], atomically      | no burst of concurrent creates holds more than the caps    |
//!
//! Ownership uses plain equality on `Option<&str>`: an unowned task is not
//! reachable by a caller with a principal, and an owned one not by a caller
//! without one. A principal appearing later is a different security context,
//! not an upgrade.

mod admin;
mod cursor;
mod events;
mod memory;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::task::{TaskId, TaskSnapshot, TaskStatus, Timestamp};

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::redis::{RedisNodes, RedisTaskStore, RedisTaskStoreBuilder, TaskPage};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use self::sqlite::{SqliteTaskStore, SqliteTaskStoreBuilder, Synchronous};
pub use admin::{AdminPage, AdminTask, StatusCounts, TaskCounts};
pub use cursor::ListCursor;
pub use events::{EventPage, Hook, StatusEvent};
pub use memory::MemoryTaskStore;

/// Held while this instance watches an owner's tasks, or every task: see
/// [`TaskStore::listen`] and [`TaskStore::listen_all`]. Dropping it says
/// the watch is over.
pub struct Listening(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Listening {
    /// A guard that keeps `held` (whatever undoes the listening on drop).
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        Self(Box::new(held))
    }
}

impl fmt::Debug for Listening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Listening")
    }
}

/// The future every store method returns: boxed so that the trait stays
/// object-safe and the layer can hold an `Arc<dyn TaskStore>`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend could not be reached or failed; the task may well exist.
    #[error("task store backend failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// No such task: unknown, expired, or owned by someone else.
    #[error("task not found")]
    NotFound,
    /// The task exists but its status does not allow the transition.
    #[error("task is {from}, cannot move to {to}")]
    InvalidTransition {
        /// The status the task is in.
        from: TaskStatus,
        /// The status that was asked for.
        to: TaskStatus,
    },
    /// The list cursor is not one this store gave out (the layer answers
    /// JSON-RPC `-32602`, invalid params).
    #[error("the list cursor is not one this store gave out")]
    InvalidCursor,
    /// Creating the task would exceed a quota; nothing was stored.
    #[error("the {0} task quota is reached")]
    QuotaExceeded(QuotaScope),
    /// The store does not offer this operation (the operator's methods of
    /// a store that does not implement them); names the method.
    #[error("the task store does not support {0}")]
    Unsupported(&'static str),
}

/// Which quota a creation ran into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaScope {
    /// [`Quota::per_owner`]: the creating owner holds as many live tasks as
    /// it may.
    Owner,
    /// [`Quota::total`]: the store holds as many live tasks as it may.
    Total,
}

impl fmt::Display for QuotaScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Owner => "per-owner",
            Self::Total => "total",
        })
    }
}

/// Caps a store applies when it creates a task.
///
/// What counts is a *live* task: one created and not yet expired, whatever
/// its status. A completed, failed or cancelled task still holds its result
/// (or error) until its TTL runs out, so counting it is what bounds the
/// memory a principal, or everyone together, can make the store hold. A task
/// without TTL counts for as long as it exists, which is forever.
///
/// Tasks created without a principal count together, as one owner: the
/// anonymous callers share one allowance instead of each getting their own.
///
/// The store checks the caps and stores the task in one atomic step, so
/// concurrent creates (on one instance or several sharing a store) never
/// overshoot them. When both caps are reached, the per-owner one is
/// reported. A refused creation stores nothing: no task, no index entry.
///
/// The stores count the tasks that were created under a quota (any cap
/// set). Give every `create` the same quota, as the layer does: tasks created
/// with [`Quota::default()`] are not counted, so a deployment that turns
/// quotas on does not count the tasks created before, until they expire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quota {
    /// The most live tasks one owner may hold; tasks without an owner count
    /// together as one owner. `None`: no cap.
    pub per_owner: Option<u32>,
    /// The most live tasks in the whole store. `None`: no cap.
    pub total: Option<u32>,
}

impl StoreError {
    /// A backend failure described by a message.
    pub fn backend(message: impl Into<String>) -> Self {
        Self::Backend(message.into().into())
    }
}

/// What the layer knows when it parks a call, and the [`Quota`] the store
/// must respect in creating the task.
#[derive(Clone, Debug)]
pub struct NewTask {
    /// The identifier, already drawn from the CSPRNG.
    pub id: TaskId,
    /// The principal the task belongs to, if any.
    pub owner: Option<String>,
    /// Creation time; the TTL runs from here.
    pub created_at: Timestamp,
    /// Lifetime from creation; `None` is unlimited.
    pub ttl: Option<Duration>,
    /// Suggested polling interval reported to clients.
    pub poll_interval: Option<Duration>,
    /// Initial status message.
    pub status_message: Option<String>,
    /// The caps this creation must respect (default: none).
    pub quota: Quota,
    /// The name of the tool whose `tools/call` this task runs, kept for the
    /// operator ([`AdminTask::tool`]); `None` when unknown. The layer
    /// keeps at most the name's first 1,024 bytes (cut at a character
    /// boundary) and then appends `…`, so a client's overlong name costs
    /// the store little; every store keeps what it is given.
    pub tool: Option<String>,
    /// What it takes to run the call again if the process running it
    /// stops (`None`: at most once). A store that outlives its process
    /// keeps it ([`TaskStore::orphans`]); others may drop it:
    /// `SqliteTaskStore` and `RedisTaskStore` keep it; `MemoryTaskStore`
    /// has no use for it.
    pub rerun: Option<Rerun>,
}

#[cfg(any(feature = "redis", feature = "sqlite"))]
impl NewTask {
    /// The task as `get` reads it right after its creation: `working`.
    pub(crate) fn into_working(self) -> TaskSnapshot {
        TaskSnapshot {
            id: self.id,
            state: crate::task::TaskState::Working,
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.created_at,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
        }
    }
}

/// What the layer keeps to run a task's call again after the process that
/// ran it stopped: the call as it would send it again (opaque to the
/// store), and how many runs it may have in all.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// The call, as the layer reads it back (never shown to a client).
    pub call: Box<RawValue>,
    /// How many times the call may run in all, the first run included
    /// (at least 2 for a re-run to happen).
    pub attempts: u32,
}

/// A task whose call was running when its process stopped, handed to a
/// layer to run again ([`TaskStore::orphans`]). It is `working`, and its
/// status message says which attempt this is.
#[derive(Debug)]
pub struct Orphan {
    /// The task's id.
    pub id: TaskId,
    /// The store's owner key of the task.
    pub owner: Option<String>,
    /// When the task was created; its TTL and deadline run from here.
    pub created_at: Timestamp,
    /// The task's lifetime from creation.
    pub ttl: Option<Duration>,
    /// What [`NewTask::rerun`] stored.
    pub rerun: Rerun,
    /// The number of this run (2 for the first re-run).
    pub attempt: u32,
    /// The task's stop signal for this process: cancel, expiry or delete
    /// fire it.
    pub stop: CancellationToken,
}

/// A freshly created task and the signal that stops its work.
#[derive(Debug)]
pub struct CreatedTask {
    /// The task as `get` now returns it.
    pub snapshot: TaskSnapshot,
    /// Fired when the task is cancelled or expires; the background driver
    /// listens to it and drops the inner call.
    pub stop: CancellationToken,
}

/// The answer to a `cancel`.
#[derive(Clone, Debug)]
pub enum CancelOutcome {
    /// The task was running and is now `cancelled`.
    Cancelled(TaskSnapshot),
    /// The task was already terminal and is unchanged.
    AlreadyTerminal(TaskSnapshot),
}

/// One page of an owner's tasks, the answer to [`TaskStore::list`].
#[derive(Clone, Debug, Default)]
pub struct TaskList {
    /// The owner's live tasks on this page, oldest first (creation time,
    /// then id). May hold fewer than the limit even when more follow.
    pub tasks: Vec<TaskSnapshot>,
    /// Opaque text to pass as the next call's `cursor`; `None` on the last
    /// page.
    pub next_cursor: Option<String>,
}

/// How many changes a slow receiver of [`TaskStore::changes`] may fall
/// behind before it lags (and reads every subscribed task again).
pub(crate) const CHANGES: usize = 4096;

/// One entry of a store's change feed ([`TaskStore::changes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskChange {
    /// This task changed.
    Changed(TaskId),
    /// Changes may have been missed (the store lost and regained its feed,
    /// e.g. a Redis pub/sub reconnect): every watched task must be read
    /// again.
    Missed,
}

/// One round of input the inner call asked for.
#[derive(Clone, Debug)]
pub struct InputRound {
    /// Client-facing requests, each under a key unique for the task's life.
    pub requests: Vec<(String, Box<RawValue>)>,
    /// What the layer needs to re-issue the call once the round is answered
    /// (opaque to the store, never shown to the client).
    pub resume: Box<RawValue>,
}

/// The answer to `answer_input`.
#[derive(Clone, Debug)]
pub enum InputProgress {
    /// The task was not waiting for input; nothing was recorded.
    NotWaiting,
    /// Answers were recorded (or ignored); some keys are still outstanding.
    Pending,
    /// Every key of the round is answered; the task is `working` again and the
    /// layer must re-issue the call with these answers.
    RoundComplete {
        /// Answers by client-facing key.
        answers: Vec<(String, Box<RawValue>)>,
        /// The resume context given to `require_input`.
        resume: Box<RawValue>,
        /// The task's stop signal, for the resumed call.
        stop: CancellationToken,
    },
}

/// A place to keep tasks.
///
/// Methods that take an `owner` enforce ownership themselves and answer a
/// foreign task exactly like an unknown one; methods without one are used by
/// the layer's own background work on tasks it created.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new `working` task. Returns only once `get` would find it.
    ///
    /// Refuses with [`StoreError::QuotaExceeded`], storing nothing, when the
    /// task would exceed [`NewTask::quota`]; the check and the write are one
    /// atomic step.
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask>;

    /// Reads a task as `owner` may see it; `None` for unknown, expired or foreign.
    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>>;

    /// Sets the status message of a non-terminal task.
    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()>;

    /// `working` → `completed` with the inner result.
    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()>;

    /// `working`/`input_required` → `failed` with a JSON-RPC error object;
    /// the error's `message` becomes the status message in the same step.
    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()>;

    /// Cancels a task as `owner`; `None` for unknown, expired or foreign.
    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>>;

    /// `working` → `input_required` with a new round of requests.
    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()>;

    /// Records answers to outstanding keys as `owner`; keys that are not
    /// outstanding are ignored. `None` for unknown, expired or foreign.
    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>>;

    /// Lists the live tasks of exactly `owner` (None lists unowned tasks only), oldest first, at most `limit` (clamp 1..=1000), starting after `cursor` (the text a previous page gave as `next_cursor`).
    ///
    /// Costs O(log n + page), whatever the number of tasks of other owners.
    /// Expired tasks are never listed. A `cursor` this store did not give
    /// out is [`StoreError::InvalidCursor`]; a cursor stays valid when the
    /// task it came from is gone.
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList>;

    /// Every owner's live tasks, oldest first (creation time, then id), at
    /// most `limit` (clamp 1..=1000), starting after `cursor` (the text a
    /// previous page gave as `next_cursor`): the operator's listing
    /// ([`Admin::list`](crate::Admin::list)).
    ///
    /// Expired tasks are never listed; an unknown `cursor` is
    /// [`StoreError::InvalidCursor`]. Memory: O(n) per page (a scan of
    /// every task); Redis: O(log n + page) over an index of every task. The
    /// default answers [`StoreError::Unsupported`].
    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        let _ = (cursor, limit);
        Box::pin(async { Err(StoreError::Unsupported("admin_list")) })
    }

    /// Every live task counted per owner and status
    /// ([`Admin::counts`](crate::Admin::counts)). O(n): meant for an admin
    /// tool or a metrics scrape every few seconds, not for every request.
    /// With Redis the count is taken in batches, so tasks created or ended
    /// meanwhile may or may not be counted. The default answers
    /// [`StoreError::Unsupported`].
    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        Box::pin(async { Err(StoreError::Unsupported("admin_counts")) })
    }

    /// Cancels a task whoever owns it, exactly as its owner's `cancel`
    /// would (its stop signal fires, a terminal task is left unchanged);
    /// `None` for an unknown or expired task. The default answers
    /// [`StoreError::Unsupported`].
    fn admin_cancel(&self, id: TaskId) -> StoreFuture<'_, Option<CancelOutcome>> {
        let _ = id;
        Box::pin(async { Err(StoreError::Unsupported("admin_cancel")) })
    }

    /// One task whoever owns it, with its owner, tool and attempt
    /// ([`Admin::get`](crate::Admin::get)); `None` for an unknown, expired
    /// or deleted task. The default answers [`StoreError::Unsupported`].
    fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        let _ = id;
        Box::pin(async { Err(StoreError::Unsupported("admin_get")) })
    }

    /// Removes a task whoever owns it and whatever its status: the task,
    /// its input round, its index entries and its place in the quota
    /// counts, so that its owner's allowance is free again at once. A task
    /// still running has its stop signal fired (its work is dropped, its
    /// outcome has nowhere to go). Returns the task as it was; `None` for
    /// an unknown or expired task. The default answers
    /// [`StoreError::Unsupported`].
    fn admin_delete(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        let _ = id;
        Box::pin(async { Err(StoreError::Unsupported("admin_delete")) })
    }

    /// A feed of the tasks that just changed in a way a subscriber sees: a
    /// new task, a new status, a new status message, or the end of the task
    /// (terminal, expired, deleted). Every instance over a shared store hears every
    /// change of the tasks it runs and of the owners it
    /// [`listen`](Self::listen)s to (a store may carry more). The layer
    /// reads the task again for each id, so an id may
    /// come more often than needed; after [`TaskChange::Missed`] (or when
    /// the receiver lags) it reads every subscribed task again. `None` (the
    /// default): no feed; subscribers then read their tasks again every few
    /// seconds.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<TaskChange>> {
        None
    }

    /// Says that someone on this instance watches `owner`'s tasks (the
    /// status push hub, for each subscription) until the returned guard is
    /// dropped, so that a store whose [`changes`](Self::changes) carry only
    /// what this instance wants ([`RedisTaskStore`] listens only to the
    /// shards it needs) carries that owner's changes too. The default:
    /// `None`, the feed carries everything anyway.
    fn listen(&self, owner: Option<&str>) -> Option<Listening> {
        let _ = owner;
        None
    }

    /// Says that someone on this instance watches every task of the store
    /// (the operator's [`Admin::watch`](crate::Admin::watch)) until the
    /// returned guard is dropped: [`listen`](Self::listen) for every owner
    /// at once. [`RedisTaskStore`] holds the interest of every shard. The
    /// default: `None`, the feed carries everything anyway.
    fn listen_all(&self) -> Option<Listening> {
        None
    }

    /// Whether this store keeps [`NewTask::rerun`] and hands its tasks back
    /// to a later process ([`orphans`](Self::orphans)): then the layer
    /// stores re-run records, and leaves a re-runnable task `working` when
    /// a drain gives up on it, for the next process to run again. The
    /// default: no.
    fn keeps_reruns(&self) -> bool {
        false
    }

    /// The tasks whose process stopped while their call ran and which may
    /// run again, each handed out once: the layer re-issues their calls.
    /// The store counted the attempt already and set the status message.
    /// The default (a store that does not outlive its process): none.
    fn orphans(&self) -> StoreFuture<'_, Vec<Orphan>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Counts one more run of task `id`, whose call broke off while this
    /// process ran it (the inner server's answer cut: a stream that broke,
    /// a connection that closed), when its re-run record has runs left: the
    /// task stays `working` and its status message says which run comes,
    /// and why (`why`). `Some((run, runs))` then, the number of the run to
    /// come and how many it may have in all; `None` when it may not run
    /// again (no re-run record, its runs spent, or not `working` any more).
    /// The default (a store that keeps no re-run records): `None`.
    fn count_attempt(&self, id: TaskId, why: String) -> StoreFuture<'_, Option<(u32, u32)>> {
        let _ = (id, why);
        Box::pin(async { Ok(None) })
    }

    /// How many orphans this store holds that no layer has taken yet
    /// ([`orphans`](Self::orphans)): tasks that will run again and have not
    /// started, for an operator's view. The default: none.
    fn orphans_held(&self) -> usize {
        0
    }

    /// Notified when [`orphans`](Self::orphans) has more to hand out, for a
    /// store whose orphans arrive while the process runs (Redis: a sweep
    /// claims the tasks of a lost instance). `None` (the default): they are
    /// all there at the start.
    fn orphan_signal(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        None
    }

    /// `owner`'s task status changes after the cursor `after`, oldest first,
    /// at most `limit` (clamp 1..=1000): what task events are read from. `after: None` reads from now: no change, and the
    /// cursor of the log's current end. A cursor this store did not give
    /// out is [`StoreError::InvalidCursor`]. The default answers
    /// [`StoreError::Unsupported`]: then the layer offers no task events.
    fn status_events<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventPage> {
        let _ = (owner, after, limit);
        Box::pin(async { Err(StoreError::Unsupported("status_events")) })
    }

    /// Stores a webhook subscription, or refreshes the one with the same
    /// [`Hook::id`]: a live one keeps its cursor and takes the new secret
    /// and expiry; a lapsed or unknown one is stored as given. Refuses with
    /// [`StoreError::QuotaExceeded`], storing nothing, when a new one would
    /// make `owner` hold more than `per_owner` or the store more than
    /// `total`. Returns the subscription as stored. The default answers
    /// [`StoreError::Unsupported`].
    fn put_hook(&self, hook: Hook, per_owner: u32, total: u32) -> StoreFuture<'_, Hook> {
        let _ = (hook, per_owner, total);
        Box::pin(async { Err(StoreError::Unsupported("put_hook")) })
    }

    /// Removes `owner`'s webhook subscription `id`; whether there was one.
    /// The default answers [`StoreError::Unsupported`].
    fn remove_hook<'a>(&'a self, owner: Option<&'a str>, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = (owner, id);
        Box::pin(async { Err(StoreError::Unsupported("remove_hook")) })
    }

    /// Every webhook subscription that has not lapsed. The default answers
    /// [`StoreError::Unsupported`].
    fn hooks(&self) -> StoreFuture<'_, Vec<Hook>> {
        Box::pin(async { Err(StoreError::Unsupported("hooks")) })
    }

    /// Moves subscription `id`'s cursor from `from` to `to`, if it is
    /// still at `from` (another instance may have moved it); whether it
    /// moved. The default answers [`StoreError::Unsupported`].
    fn advance_hook<'a>(
        &'a self,
        id: &'a str,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, bool> {
        let _ = (id, from, to);
        Box::pin(async { Err(StoreError::Unsupported("advance_hook")) })
    }

    /// Claims the delivery of subscription `id` for `lease`, so that one
    /// instance at a time sends its events; renews the claim this process
    /// already holds. `false` when another process holds it. The default
    /// (a store of one process): always `true`.
    fn claim_hook<'a>(&'a self, id: &'a str, lease: Duration) -> StoreFuture<'a, bool> {
        let _ = (id, lease);
        Box::pin(async { Ok(true) })
    }

    /// Lets go of what this process holds in a shared store, at the end of
    /// a [`Drain`](crate::Drain): the Redis store drops its instance lease,
    /// so that other instances fail the tasks it still drove at their next
    /// sweep instead of waiting for the lease to lapse. The default does
    /// nothing.
    fn release(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}
