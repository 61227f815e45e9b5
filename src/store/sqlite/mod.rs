//! [`SqliteTaskStore`]: tasks in one SQLite file, kept across a restart and
//! a `kill -9` of the process that runs them.
//!
//! The whole [`TaskStore`] contract, for a single instance: every task is a
//! row of one plain `tasks` table (see `schema` for its columns), which an
//! operator can open with the `sqlite3` shell. SQLite is bundled (built into
//! the crate), in WAL journal mode.
//!
//! | Rule                                                        | How                                                                     |
//! |-------------------------------------------------------------|-------------------------------------------------------------------------|
//! | `create` resolves once the row is committed                 | the writer answers a job only after its group's `COMMIT`                |
//! | a committed task survives `kill -9` (default)               | WAL + `synchronous = NORMAL`; [`Synchronous::Full`] adds power loss     |
//! | no SQLite call blocks the async runtime                     | one writer thread (`writer`); reads on `spawn_blocking` (`read`)        |
//! | throughput is not one commit per write                      | group commit: up to 256 waiting jobs in one transaction                 |
//! | one job's error never undoes another's                      | each job runs in its own `SAVEPOINT`                                    |
//! | quotas never overshoot                                      | count and insert in one job, and there is one writer                    |
//! | an expired task reads like an unknown one, at once          | every read and write compares `expires_at` with the clock               |
//! | expired rows leave the file without anyone reading          | the reaper (`reaper`) deletes them in batches of 500                    |
//! | `list` costs O(log n + page)                                | index `(owner, created_at, id)`; `admin_list` over `(created_at, id)`   |
//! | a backend failure is never "not found"                      | every SQLite error is [`StoreError::Backend`]                           |
//! | a file of a newer schema is refused                         | `PRAGMA user_version`, checked at open                                  |
//! | a status change is logged with the change, atomically       | triggers on `tasks` write `task_events` in the same statement (`log`)   |
//! | the log stays bounded                                       | the last 100,000 changes, pruned by a trigger in the writer's transaction |
//! | webhook subscriptions survive a restart                     | the `hooks` table (`hooks`)                                             |
//!
//! **Reads** use a small pool of their own connections rather than the
//! writer's queue: WAL lets them run beside the writer, so a `tasks/get`
//! never waits behind a group's commit (or its fsync with `Full`), and every
//! read starts from the latest commit, so a task whose `create` resolved is
//! found at once.
//!
//! **Stop signals** are process-local: this process holds the
//! [`CancellationToken`] of each task it created (or resumed after an input
//! round) until the task ends; a cancel, an expiry or an operator's delete
//! fires it.
//!
//! **One process a file**: the store holds an OS lock on the file from
//! open to [`close`](SqliteTaskStore::close) (or its drop), and a second
//! open fails at once. So a task still `working` in the file at open was
//! left by a process that stopped, and nothing would ever end it: the open
//! fails it (`-32603`, saying the server stopped while it ran). Tasks
//! waiting for input, and finished ones, are kept as they are. For several
//! instances, use `RedisTaskStore` (feature `redis`).

mod builder;
mod hooks;
mod log;
mod pairs;
mod read;
mod reaper;
mod recover;
mod row;
mod schema;
mod shared;
mod sync;
#[cfg(test)]
mod tests;
mod write;
mod writer;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{
    AdminPage, AdminTask, CancelOutcome, CreatedTask, EventPage, Hook, InputProgress, InputRound,
    NewTask, Orphan, Rerun, StoreError, StoreFuture, TaskChange, TaskCounts, TaskList, TaskStore,
};
use crate::task::{TaskId, TaskSnapshot, TaskStatus};
use read::Readers;
use shared::Shared;
use writer::Writer;

pub use builder::SqliteTaskStoreBuilder;
pub use sync::Synchronous;

/// A SQLite failure as a store error.
fn backend(error: rusqlite::Error) -> StoreError {
    StoreError::Backend(Box::new(error))
}

/// A value in the file that this store would not have written.
fn corrupt(what: String) -> StoreError {
    StoreError::backend(format!("the SQLite task file holds a bad value: {what}"))
}

/// The [`TaskStore`] that keeps tasks in one SQLite file.
///
/// Cloning is cheap and every clone shares the file, the writer thread and
/// the stop signals; the writer thread ends when the last clone is dropped
/// (or at [`close`](Self::close)). See the [module docs](self) for what it
/// promises and how.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp_tasks::StoreError> {
/// use std::time::Duration;
/// use mcp_tasks::store::SqliteTaskStore;
/// use mcp_tasks::{NewTask, Quota, TaskId, TaskStatus, TaskStore, Timestamp};
///
/// let path = std::env::temp_dir().join(format!("mcp-tasks-doc-{}.db", TaskId::generate().unwrap()));
/// let store = SqliteTaskStore::open(&path).await?;
/// let id = TaskId::generate().unwrap();
/// store
///     .create(NewTask {
///         id,
///         owner: Some("alice".into()),
///         created_at: Timestamp::now(),
///         ttl: Some(Duration::from_secs(60)),
///         poll_interval: None,
///         status_message: None,
///         quota: Quota::default(),
///         tool: None,
///         rerun: None,
///     })
///     .await?;
/// store.complete(id, serde_json::value::RawValue::from_string(r#"{"content":[]}"#.into()).unwrap()).await?;
/// store.close().await;
///
/// // Another store on the same file, as after a restart, finds the task.
/// let reopened = SqliteTaskStore::open(&path).await?;
/// let seen = reopened.get(id, Some("alice")).await?.unwrap();
/// assert_eq!(seen.status(), TaskStatus::Completed);
/// assert!(reopened.get(id, Some("bob")).await?.is_none());
/// reopened.close().await;
/// # for suffix in ["", "-wal", "-shm"] {
/// #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
/// # }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SqliteTaskStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Writer,
    readers: Arc<Readers>,
    shared: Arc<Shared>,
    /// The reaper task; started again if its runtime went away.
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The file's lock for this process, held until `close` or the drop.
    lock: Mutex<Option<std::fs::File>>,
    /// Tasks of the previous process to run again, until a layer takes them.
    orphans: Mutex<Vec<recover::Pending>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Lets a sleeping reaper notice that the store is gone.
        self.shared.wake.notify_one();
    }
}

impl fmt::Debug for SqliteTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteTaskStore")
            .field("path", &self.inner.path)
            .field("held_stop_signals", &self.held_stop_signals())
            .finish()
    }
}

impl SqliteTaskStore {
    /// Opens (or creates) the task file at `path` with the default settings;
    /// see [`SqliteTaskStoreBuilder::open`].
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::builder(path).open().await
    }

    /// Settings for a store at `path`, before opening it.
    pub fn builder(path: impl AsRef<Path>) -> SqliteTaskStoreBuilder {
        SqliteTaskStoreBuilder::new(path.as_ref().to_path_buf())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many stop signals this process holds: tasks it created or
    /// resumed that have not ended yet.
    pub fn held_stop_signals(&self) -> usize {
        self.inner.shared.held()
    }

    /// Commits every write queued so far, then closes the file: the writer
    /// thread ends and the idle read connections close. Every later call,
    /// on any clone, fails with [`StoreError::Backend`]. Dropping the last
    /// clone closes the file too, without waiting.
    pub async fn close(&self) {
        self.inner.writer.close().await;
        // A poisoned pool is closed by its own drop, with the store.
        let _ = self.inner.readers.close();
        self.inner.shared.wake.notify_one();
        // The file is free for the next store once nothing writes to it.
        let mut lock = (self.inner.lock)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        lock.take();
    }

    /// Starts the reaper unless it runs (again, if its runtime went away).
    fn ensure_reaper(&self) {
        // A poisoned lock only guards the handle; reads enforce expiry.
        let mut reaper = self
            .inner
            .reaper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if reaper.as_ref().is_none_or(|handle| handle.is_finished()) {
            *reaper = Some(tokio::spawn(reaper::reap(Arc::downgrade(&self.inner))));
        }
    }

    async fn read<T, F>(&self, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.inner.readers.run(read).await
    }
}

impl TaskStore for SqliteTaskStore {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(async move {
            if task.ttl.is_some() {
                self.ensure_reaper();
            }
            let stop = CancellationToken::new();
            let held = stop.clone();
            let snapshot = self
                .inner
                .writer
                .run(move |step| write::create(step, task, held))
                .await?;
            Ok(CreatedTask { snapshot, stop })
        })
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        let owner = owner.map(str::to_owned);
        Box::pin(self.read(move |conn| read::get(conn, id, owner.as_deref())))
    }

    fn count_attempt(&self, id: TaskId, why: String) -> StoreFuture<'_, Option<(u32, u32)>> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::count_attempt(step, id, &why)),
        )
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::set_status_message(step, id, message)),
        )
    }

    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::finish(step, id, TaskStatus::Completed, result)),
        )
    }

    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::finish(step, id, TaskStatus::Failed, error)),
        )
    }

    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        let owner = owner.map(str::to_owned);
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::cancel(step, id, owner.as_deref())),
        )
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::require_input(step, id, round)),
        )
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        let owner = owner.map(str::to_owned);
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::answer_input(step, id, owner.as_deref(), answers)),
        )
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        let owner = owner.map(str::to_owned);
        let cursor = cursor.map(str::to_owned);
        Box::pin(
            self.read(move |conn| read::list(conn, owner.as_deref(), cursor.as_deref(), limit)),
        )
    }

    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        let cursor = cursor.map(str::to_owned);
        Box::pin(self.read(move |conn| read::admin_list(conn, cursor.as_deref(), limit)))
    }

    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        Box::pin(self.read(read::admin_counts))
    }

    fn admin_cancel(&self, id: TaskId) -> StoreFuture<'_, Option<CancelOutcome>> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::admin_cancel(step, id)),
        )
    }

    fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(self.read(move |conn| read::admin_get(conn, id)))
    }

    fn admin_delete(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| write::admin_delete(step, id)),
        )
    }

    fn changes(&self) -> Option<broadcast::Receiver<TaskChange>> {
        Some(self.inner.shared.subscribe())
    }

    fn keeps_reruns(&self) -> bool {
        true
    }

    fn orphans(&self) -> StoreFuture<'_, Vec<Orphan>> {
        let pending = std::mem::take(
            &mut *self
                .inner
                .orphans
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let orphans = pending
            .into_iter()
            .map(|task| Orphan {
                stop: self.inner.shared.hand_out(task.id.as_u128()),
                id: task.id,
                owner: task.owner,
                created_at: task.created_at,
                ttl: task.ttl,
                rerun: Rerun {
                    call: task.call,
                    attempts: task.attempts,
                },
                attempt: task.attempt,
            })
            .collect();
        Box::pin(async move { Ok(orphans) })
    }

    fn orphans_held(&self) -> usize {
        self.inner
            .orphans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    fn status_events<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventPage> {
        let owner = owner.map(str::to_owned);
        let after = after.map(str::to_owned);
        Box::pin(self.read(move |conn| log::read(conn, owner.as_deref(), after.as_deref(), limit)))
    }

    fn put_hook(&self, hook: Hook, per_owner: u32, total: u32) -> StoreFuture<'_, Hook> {
        Box::pin(
            self.inner
                .writer
                .run(move |step| hooks::put(step, hook, per_owner, total)),
        )
    }

    fn remove_hook<'a>(&'a self, owner: Option<&'a str>, id: &'a str) -> StoreFuture<'a, bool> {
        let owner = owner.map(str::to_owned);
        let id = id.to_owned();
        Box::pin(
            self.inner
                .writer
                .run(move |step| hooks::remove(step, owner.as_deref(), &id)),
        )
    }

    fn hooks(&self) -> StoreFuture<'_, Vec<Hook>> {
        Box::pin(self.read(hooks::live))
    }

    fn advance_hook<'a>(
        &'a self,
        id: &'a str,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, bool> {
        let (id, from, to) = (id.to_owned(), from.to_owned(), to.to_owned());
        Box::pin(
            self.inner
                .writer
                .run(move |step| hooks::advance(step, &id, &from, &to)),
        )
    }
}
