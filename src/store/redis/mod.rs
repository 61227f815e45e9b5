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
//! several deployments can share one Redis, wrapped in a hash tag so that
//! every key of a [shard](#shards) shares one Redis Cluster slot: each
//! script's keys, including those it derives from stored ids, are on one
//! node. With one shard the tag is `{<prefix>}` (written so below); shard
//! `k` of several is `{<prefix>:s<k>}` (so a second deployment must not take
//! `<prefix>:s<k>` as its prefix). The layout's version and the shard count
//! are kept in `{<prefix>}:meta` (fields `v`, today 2, and `n`); keys of the
//! first layout (`<prefix>:task:{<id>}`, …) are moved once when this
//! version first connects (see [`connect`](RedisTaskStoreBuilder::connect)).
//!
//! | Key / channel               | Type       | Holds                                   | Why                                                                        |
//! |-----------------------------|------------|-----------------------------------------|----------------------------------------------------------------------------|
//! | `{<prefix>}:task:<id>`      | hash       | status, owner, times, TTL, poll interval, message, result or error | one key per task, so that one `PEXPIREAT created+ttl` ends all of it and an expired task reads like one that never existed |
//! | `{<prefix>}:round:<id>`     | hash       | the open input round: requests in order, which keys are outstanding, answers in order, the resume context | deleted in one step when the round completes or the task ends; expires with the task |
//! | `{<prefix>}:owned:<owner>`    | sorted set | the owner's task ids, scored by creation time (ms) | the per-owner listing (`tasks/list`) pages it by cursor instead of scanning the keyspace |
//! | `{<prefix>}:unowned`          | sorted set | ids of tasks created without a principal | a distinct key for "no owner": unowned tasks are a security context of their own |
//! | `{<prefix>}:all`              | sorted set | every task's id, scored by creation time (ms) | the operator's listing across owners ([`Admin`](crate::Admin)) pages it like an owner index |
//! | `{<prefix>}:live:owned:<owner>`, `{<prefix>}:live:unowned` | sorted set | the owner's tasks created under a [`Quota`](super::Quota), scored by deadline (ms; `+inf` without TTL) | the per-owner cap counts live tasks with one trim and one `ZCARD`; the owner index, scored by creation, cannot |
//! | `{<prefix>}:live:all`         | sorted set | every task created under a [`Quota`](super::Quota), scored by deadline | the same for the total cap |
//! | `{<prefix>}:ended` (channel)  | pub/sub    | the id of each task that just became terminal | fires the stop signal on whichever instance runs the task's work |
//! | `{<prefix>}:changed` (channel) | pub/sub   | the id of each task whose status message changed, that asked for input or resumed | with `ended`, the change feed of [`TaskStore::changes`]: status push on every instance |
//! | `{<prefix>}:instances`        | set        | the ids of the registered instances     | the sweepers' list of instances to check for a lapsed lease                |
//! | `{<prefix>}:instance:<iid>` | string     | `1`, with `PX` = the instance's lease   | an instance is alive exactly while this key exists ([leases](#leases))     |
//! | `{<prefix>}:driving:<iid>`  | set        | ids of the `working` tasks the instance drives | what a sweeper fails when the instance is lost, without scanning tasks |
//! | `{<prefix>}:events:…`, `{<prefix>}:hooks…` | stream, hash, sorted set | each owner's log of status changes, appended by the script that changes the status; the webhook subscriptions | task events: see `events.rs` |
//!
//! Task hash fields: `s` status, `w` owner (absent for none), `c` created and
//! `u` updated (ms since the epoch), `e` deadline (ms, absent without TTL),
//! `t` TTL and `p` poll interval (ns), `m` status message, `r` result or
//! error object (verbatim bytes), `d` the instance that drives the task
//! (while it is `working`), `q` the outstanding requests of an input round
//! as one JSON object (while it is `input_required`, so that `get` reads
//! the whole task with one `HMGET`), `rv` the ticket of the `answer_input`
//! call that last resumed it (see `doubts.rs`), `n` the name of the tool
//! whose call made it (absent when unknown, as for a task written before
//! it was kept; the operator reads it). Payloads are never parsed on the Redis
//! side, so a client reads back exactly what the inner server answered.
//!
//! An owner index (and `{<prefix>}:all`) expires with its longest-lived task (`PEXPIREAT … GT`;
//! never while it holds a task without TTL). Entries of expired tasks are
//! dropped lazily: the two oldest are checked at each `create`, and every
//! listing removes those it steps over.
//!
//! The live sets are written only by a `create` with a quota (a `create`
//! without one costs nothing more), expire the same way, and are trimmed
//! exactly: that `create` first removes the entries whose deadline passed
//! (`ZREMRANGEBYSCORE -inf <now>`, the Redis server's clock, which also
//! expires the task keys), counts both sets (`ZCARD`), refuses or adds the
//! task to both, in the same script: O(log n) per create, plus each expired
//! entry removed once.
//!
//! # Atomicity
//!
//! Each trait method that writes is one Lua script (`EVALSHA`, loaded on
//! demand), so each transition reads and writes a task in one step that no other
//! instance can interleave with: the status check and the write of
//! `complete`, `fail`, `cancel` (with its owner check), `require_input`,
//! `answer_input` (owner check, recording only outstanding keys, and moving
//! to `working` with the answers and resume context when the round is full)
//! and `set_status_message` (non-terminal only). Each keeps the task's
//! driver and the driving sets in step in the same script. A late
//! `complete` after a `cancel` on another instance sees `cancelled` and is
//! refused. `get` runs no script: one `HMGET` of the task hash, whose owner
//! is checked in Rust (a hash is read atomically, and every field it needs
//! is kept there by the scripts).
//!
//! `create` checks the [`Quota`](super::Quota) and writes the task in the same script, so
//! creates on every instance together never overshoot a cap.
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
//! - the task becomes terminal anywhere: the scripts that end a task (the
//!   sweep of a lost instance's tasks too) `PUBLISH` its id on
//!   `{<prefix>}:ended` in the same atomic step (on a Redis Cluster
//!   `SPUBLISH`, sharded pub/sub: the message stays with the nodes of the
//!   shard's slot), and the subscriber of the instance that holds the token
//!   fires it (after `complete` or `fail` the work is over already, and
//!   firing frees the entry). An instance subscribes only to the shards
//!   whose tokens it holds or whose owners it [`listen`](TaskStore::listen)s
//!   to (every shard while the operator watches,
//!   [`listen_all`](TaskStore::listen_all)), and for 30 s after, and a
//!   `create` waits for its shard's subscription before writing: a quiet
//!   instance hears nothing;
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
//! # Leases
//!
//! An instance that dies leaves no task `working` forever. Each store
//! instance has a random id ([`RedisTaskStore::instance_id`]), lists itself
//! in `{<prefix>}:instances` and keeps `{<prefix>}:instance:<iid>` alive with
//! `PX` = its lease (default 10 s, [`RedisTaskStoreBuilder::lease`]), renewed
//! every `lease / 3` by a background task that stops with the last clone.
//!
//! A task is *driven* by the instance whose call runs it: the one that
//! created it, or the one whose `answer_input` completed its round (it
//! re-issues the call). The same script that makes the task `working`
//! records the driver (`d`) and adds the id to `{<prefix>}:driving:<iid>`;
//! the scripts that end a task, or make it wait for input (nothing runs
//! then), take it out again.
//!
//! Every instance sweeps every `lease / 2` (and once at `connect`): for each
//! listed instance whose lease key is gone, and was found gone by a sweep
//! at least `0.4 × lease` before (so that a live instance whose lease ran
//! out while its shard's primary failed over has time to renew it on the
//! new one; `lease.rs` has the table), one script per batch of its
//! driving set fails each task that is still `working` *and* still driven
//! by it, with the JSON-RPC error `{"code":-32603,"message":"The server
//! instance running this task was lost"}` and that status message,
//! announces it on `{<prefix>}:ended`, and forgets the instance once its
//! driving set is empty. The script checks the lease key in the same atomic
//! step, so an instance whose lease is alive is never swept, however slow;
//! two sweepers racing pop disjoint entries and find a task failed already,
//! so the race is harmless. A task waiting for input is not failed: its
//! round can still be answered on any instance, which then drives it.
//!
//! A task created with a re-run record ([`NewTask::rerun`](crate::NewTask),
//! fields `rr`, `at` attempt so far, `am` attempts in all) and attempts left
//! is not failed but *claimed* by the sweeper in the same step: `at` counts
//! one more, the sweeper becomes its driver, its status message says which
//! attempt runs, and the change goes out on `{<prefix>}:changed` (not
//! `ended`, which would fire its stop signal). The sweeper's layer takes it
//! ([`TaskStore::orphans`], woken by
//! [`TaskStore::orphan_signal`]) and runs
//! the call again. One whose attempts are spent is failed with a message
//! that says so.
//!
//! **Bound.** A crashed instance renewed its lease last at the latest when
//! it died, so its key is gone at most `lease` later, the next sweep of any
//! live instance finds it gone at most `lease / 2` after that, and the one
//! after takes it: its running tasks are `failed` within `2 × lease` of the
//! crash (20 s with the default lease, plus the sweep's own Redis round
//! trips), given one live instance with the same lease. With none alive,
//! the first instance to connect finds it at once and takes it at its
//! second sweep. An instance that gives its lease up
//! ([`TaskStore::release`], a drain) is taken at the first sweep.
//!
//! **At most once.** A task is never re-run: a lost instance's running
//! tasks are failed, not restarted elsewhere. An instance that is alive but
//! missed its lease (a pause longer than the lease, or Redis unreachable
//! meanwhile) is treated as lost: its running tasks are failed, the
//! announcement fires its stop signals, and the outcome its call may still
//! write is refused by the terminal state. An instance that sees no renewal
//! take in a shard for a whole lease *fences* itself there first: it stops
//! the calls it runs in that shard, before any other instance may take
//! them, and joins the shard again under a new id (`lease.rs`), so a call
//! that may run again never runs here and elsewhere at once. Choose a lease
//! comfortably longer than such pauses, than a failover of your Redis
//! Cluster and than the response timeout.
//!
//! Instances should keep their clocks in sync: creation and update times come
//! from the instance, expiry from the Redis server's clock.
//!
//! Needs Redis 7.0 or later (`PEXPIREAT … GT`). Runs on one server (with
//! replicas) and on a Redis Cluster: give [`RedisTaskStore::builder`] several
//! node URLs, or one URL of a node in cluster mode.
//!
//! # Shards
//!
//! A store is split into [`shards`](RedisTaskStoreBuilder::shards) (one on
//! a single server, [`CLUSTER_SHARDS`] on a cluster), each a complete set of
//! the keys above under its own hash tag, so that on a cluster the shards,
//! and the work, fall on different primaries. An owner's tasks all live in
//! the shard given by a hash of the owner (SHA-256, unkeyed: the shard says
//! nothing an ordinary Redis reader could not see in `w`), so the calls
//! that carry the owner go straight there and a foreign principal's read
//! looks in its own shard: a miss by construction, short of a shared shard,
//! where the owner check refuses it as before. The driver's calls, which
//! carry only the id, find the shard in the stop signal the driver holds
//! (any other instance asks every shard, one `EXISTS` each, at once).
//!
//! Each shard keeps its own copy of every instance's lease, registry and
//! driving sets, and is swept on its own, so the lease check and the sweep
//! stay one atomic step; an instance that misses its renewal in one shard
//! (a primary unreachable for longer than the lease) is treated as lost in
//! that shard only. The operator's listing merges the shards' indexes in
//! creation order. Per-owner quotas stay exact; the total cap, which spans
//! shards, is kept by reservation in `{<prefix>}:reserved` before the
//! shard's script runs (what that weakens is written at `create`, in
//! `src/store/redis/create.rs`: a failed create holds its place one round
//! trip, a crash between the two steps holds it until the deadline). The
//! count is fixed for a prefix: `connect` refuses another one. One owner
//! (and all unowned tasks, together) is still one shard, on one primary.
//!
//! # Writes in doubt
//!
//! A `create` or a round-completing `answer_input` whose call failed may
//! have run all the same (a lost reply, a command held up in Redis past the
//! response timeout, a caller gone mid-write). Each is checked again over
//! about a minute (`doubts.rs`): a task whose creation was not confirmed is
//! deleted, one resumed by an unconfirmed answer is failed, so that neither
//! stays `working` under a live instance with no call behind it.
//!
//! # Task events
//!
//! Each owner's log keeps its last 10,000 changes (trimmed 100 at a time,
//! fixed in `lua/prelude.lua`); a reader whose cursor is behind the trimmed
//! ones reads `truncated`, from the oldest change kept. Redis replicates
//! asynchronously, so a failover may lose the newest entries of a log: a
//! reader that had read them holds a cursor past the new end. It reads no
//! change, `truncated`, and the cursor of the end, and resumes from there
//! (it is not refused with `InvalidCursor`, which the layer would answer
//! `-32602` on every poll until the log caught up). Changes the lost entries recorded stay lost: a
//! `truncated` reader reads its tasks again.

mod admin;
mod answer;
mod attempt;
mod builder;
mod claims;
mod conn;
mod create;
mod doubts;
mod events;
mod get;
mod interest;
mod lease;
mod list;
mod migrate;
mod reply;
mod route;
mod scripts;
mod sharded;
mod shards;
mod stops;
mod transition;

use std::fmt;
use std::sync::Arc;

use conn::Conn;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::{
    AdminPage, AdminTask, CancelOutcome, CreatedTask, InputProgress, InputRound, NewTask,
    StoreError, StoreFuture, TaskCounts, TaskList, TaskStore,
};
use crate::task::{TaskId, TaskSnapshot, TaskStatus, Timestamp};
use lease::Lease;
use scripts::owner_args;
use shards::Shards;
use stops::Stops;

pub use super::ListCursor;
pub use builder::{CLUSTER_SHARDS, RedisNodes, RedisTaskStoreBuilder};
pub use list::TaskPage;

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
    conn: Conn,
    shards: Arc<Shards>,
    stops: Arc<Stops>,
    lease: Arc<Lease>,
    shutdown: CancellationToken,
    /// What the subscriber heard on `{<prefix>}:ended` and `{<prefix>}:changed`.
    changes: tokio::sync::broadcast::Sender<super::TaskChange>,
    /// Tasks claimed from lost instances, to run again.
    claims: Arc<claims::Claims>,
    /// Writes that may have run although they failed (`doubts.rs`).
    doubts: doubts::Doubts,
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
            .field("instance_id", &self.instance_id())
            .field("held_stop_signals", &self.held_stop_signals())
            .finish()
    }
}

fn backend(error: redis::RedisError) -> StoreError {
    StoreError::Backend(Box::new(error))
}

fn now_text() -> String {
    Timestamp::now().as_millis().to_string()
}

impl RedisTaskStore {
    /// Connects to `url` (`redis://host:port/db`, or any node of a Redis
    /// Cluster) with the default settings.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::builder(url).connect().await
    }

    /// Settings for a store at `nodes` (one URL, or the seed nodes of a
    /// Redis Cluster; see [`RedisNodes`]), before connecting.
    pub fn builder(nodes: impl Into<RedisNodes>) -> RedisTaskStoreBuilder {
        RedisTaskStoreBuilder::new(nodes.into())
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        self.inner.shards.prefix()
    }

    /// The random id this instance registered under (its lease is
    /// `{<prefix>}:instance:<id>`), new at every `connect`; in a shard it
    /// was fenced out of, it joins again as `<id>-<n>` (see the module docs,
    /// "At most once").
    pub fn instance_id(&self) -> &str {
        self.inner.lease.id()
    }

    /// How many stop signals this instance holds: tasks whose work it started
    /// and that have not ended yet. Useful to watch for leaks.
    pub fn held_stop_signals(&self) -> usize {
        self.inner.stops.len()
    }

    /// How many failed writes this instance is still checking (they may
    /// have run; see `doubts.rs`). For tests. Not part of the API.
    #[doc(hidden)]
    pub fn writes_in_doubt(&self) -> usize {
        self.inner.doubts.len()
    }

    /// The Redis key of task `id` of `owner`, for tests that look at Redis
    /// itself. Not part of the API.
    #[doc(hidden)]
    pub fn task_key(&self, id: TaskId, owner: Option<&str>) -> String {
        self.inner.shards.of(owner).1.task(id)
    }

    fn conn(&self) -> Conn {
        self.inner.conn.clone()
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(self.create_task(task))
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        Box::pin(async move {
            let Some(snapshot) = self.read(id, owner).await? else {
                return Ok(None);
            };
            if snapshot.status().is_terminal() {
                self.inner.stops.fire(id);
            }
            Ok(Some(snapshot))
        })
    }

    fn count_attempt(&self, id: TaskId, why: String) -> StoreFuture<'_, Option<(u32, u32)>> {
        Box::pin(self.count_attempt_task(id, why))
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        Box::pin(self.set_message(id, message))
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
        let shard = self.inner.shards.index_of(owner);
        Box::pin(self.cancel_as(id, shard, owner_args(owner)))
    }

    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        Box::pin(self.admin_page(cursor, limit))
    }

    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        Box::pin(self.admin_tally())
    }

    fn admin_cancel(&self, id: TaskId) -> StoreFuture<'_, Option<CancelOutcome>> {
        Box::pin(self.admin_cancel_task(id))
    }

    fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(self.admin_read(id))
    }

    fn admin_delete(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(self.admin_remove(id))
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        Box::pin(self.ask_input(id, round))
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        Box::pin(self.answer_input_task(id, owner, answers))
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        Box::pin(self.list_page(owner, cursor, limit))
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<super::TaskChange>> {
        Some(self.inner.changes.subscribe())
    }

    /// Keeps the owner's shard subscribed while held: the subscriber
    /// listens only to the shards this instance wants.
    fn listen(&self, owner: Option<&str>) -> Option<super::Listening> {
        let shard = self.inner.shards.index_of(owner);
        let held = interest::Held::new(self.inner.stops.interest.clone(), shard);
        Some(super::Listening::new(held))
    }

    /// Keeps every shard subscribed while held (the operator's watch).
    fn listen_all(&self) -> Option<super::Listening> {
        let held = interest::Held::all(self.inner.stops.interest.clone());
        Some(super::Listening::new(held))
    }

    fn keeps_reruns(&self) -> bool {
        true
    }

    fn orphans(&self) -> StoreFuture<'_, Vec<super::Orphan>> {
        let claimed = self.inner.claims.take();
        Box::pin(async move { Ok(claimed) })
    }

    /// The tasks of lost instances this one has claimed and its layer has
    /// not taken yet; a lost instance's tasks count from the sweep that
    /// claims them (within `lease / 2` of its lease ending).
    fn orphans_held(&self) -> usize {
        self.inner.claims.held()
    }

    fn orphan_signal(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.inner.claims.signal.clone())
    }

    /// Stops renewing and sweeping, and drops the lease, so that other
    /// instances fail what this one still drives at their next sweep (within
    /// `lease / 2`). The store serves no further work after this.
    fn release(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.inner.shutdown.cancel();
            self.inner.lease.release().await
        })
    }

    fn status_events<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, super::EventPage> {
        Box::pin(self.read_events(owner, after, limit))
    }

    fn put_hook(
        &self,
        hook: super::Hook,
        per_owner: u32,
        total: u32,
    ) -> StoreFuture<'_, super::Hook> {
        Box::pin(self.store_hook(hook, per_owner, total))
    }

    fn remove_hook<'a>(&'a self, owner: Option<&'a str>, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(self.drop_hook(owner, id))
    }

    fn hooks(&self) -> StoreFuture<'_, Vec<super::Hook>> {
        Box::pin(self.live_hooks())
    }

    fn advance_hook<'a>(
        &'a self,
        id: &'a str,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(self.move_hook(id, from, to))
    }

    fn claim_hook<'a>(&'a self, id: &'a str, lease: std::time::Duration) -> StoreFuture<'a, bool> {
        Box::pin(self.claim(id, lease))
    }
}
