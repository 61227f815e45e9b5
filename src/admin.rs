//! [`Admin`]: the operator's view of a layer's tasks, across owners.
//!
//! Clients reach only their own tasks, through the wire methods. An
//! operator (an admin tool, a support script, the gateway's metrics) needs
//! every owner's: how many tasks there are per owner and status, which ones
//! (with the tool that made each, [`Admin::get`]), a feed of their changes
//! for a live console ([`Admin::watch`]), and a way to stop one without its
//! owner's token. No wire method exposes
//! this; it is a Rust API over the layer's store, taken from
//! [`TasksLayer::admin`](crate::TasksLayer::admin).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), mcp_tasks::StoreError> {
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//!
//! let layer = TasksLayer::new(MemoryTaskStore::new());
//! let admin = layer.admin();
//! // … serve with `layer` …
//! let counts = admin.counts().await?;
//! for (owner, by_status) in counts.owners() {
//!     println!("{owner:?}: {} working", by_status.working);
//! }
//! let page = admin.list(None, 100).await?;
//! for task in &page.tasks {
//!     println!("{} {:?} {}", task.snapshot.id, task.owner, task.snapshot.status().as_str());
//! }
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError};

use crate::observe::events::{self, End};
use crate::observe::metrics as m;
use crate::runtime::queued::Queued;
use crate::store::{
    AdminPage, AdminTask, CancelOutcome, Listening, StoreError, TaskChange, TaskCounts, TaskStore,
};
use crate::task::{TaskId, TaskStatus};

/// The operator's handle on a layer's store; cheap to clone.
///
/// Every method works across owners. Cancelling and deleting are logged as
/// lifecycle events (`by = "operator"`) and counted in
/// `mcp_tasks_terminal_total`. The store must implement the operator's
/// methods ([`MemoryTaskStore`](crate::MemoryTaskStore),
/// `SqliteTaskStore` and `RedisTaskStore` do); others answer
/// [`StoreError::Unsupported`].
#[derive(Clone)]
pub struct Admin {
    store: Arc<dyn TaskStore>,
    queued: Arc<Queued>,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}

impl Admin {
    pub(crate) fn new(store: Arc<dyn TaskStore>, queued: Arc<Queued>) -> Self {
        Self { store, queued }
    }

    /// The tasks that will run again and have not started: the orphans the
    /// store holds that no layer has taken yet
    /// ([`TaskStore::orphans_held`]; a SQLite file's at its open, a lost
    /// Redis instance's once a sweep claims them) and the re-runs this
    /// layer took that wait for a running slot (`max_running`). Each
    /// instance over a shared store counts its own. No store round trip.
    pub fn reruns_pending(&self) -> usize {
        self.store.orphans_held() + self.queued.count()
    }

    /// Every owner's live tasks, oldest first, at most `limit` (clamped to
    /// 1..=1000), after `cursor` (a previous page's `next_cursor`).
    pub async fn list(&self, cursor: Option<&str>, limit: usize) -> Result<AdminPage, StoreError> {
        self.store.admin_list(cursor, limit).await
    }

    /// One task whoever owns it: its snapshot, owner, tool and attempt.
    /// `None` for an unknown, expired or deleted task.
    pub async fn get(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        self.store.admin_get(id).await
    }

    /// Every change of every owner's tasks, from now on, while the returned
    /// watch lives: see [`AdminWatch`]. `None` when the store has no change
    /// feed ([`TaskStore::changes`]); list the tasks again every few
    /// seconds then.
    pub fn watch(&self) -> Option<AdminWatch> {
        // The receiver first: nothing the store carries once it listens
        // everywhere can come before it.
        let changes = self.store.changes()?;
        let _listening = self.store.listen_all();
        Some(AdminWatch {
            changes,
            _listening,
        })
    }

    /// Live tasks per owner and status (O(n) in the store's tasks).
    pub async fn counts(&self) -> Result<TaskCounts, StoreError> {
        self.store.admin_counts().await
    }

    /// Cancels a task whoever owns it: the same outcome as its owner's
    /// `tasks/cancel` (the inner call is dropped, a terminal task is left
    /// as it is). `None` for an unknown or expired task.
    pub async fn cancel(&self, id: TaskId) -> Result<Option<CancelOutcome>, StoreError> {
        let outcome = self.store.admin_cancel(id).await?;
        if let Some(CancelOutcome::Cancelled(_)) = &outcome {
            events::ended(id, End::Cancelled { by: "operator" }, None);
        }
        Ok(outcome)
    }

    /// Removes a task whoever owns it and whatever its status, freeing its
    /// place in the quotas at once; a running call is dropped. Returns the
    /// task as it was; `None` for an unknown or expired task. Its owner's
    /// next `tasks/get` finds nothing, as for an expired task.
    pub async fn delete(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        let removed = self.store.admin_delete(id).await?;
        if let Some(task) = &removed {
            if task.snapshot.status().is_terminal() {
                tracing::info!(target: "mcp_tasks::lifecycle", task = %id, by = "operator", "task removed");
            } else {
                events::ended(id, End::Deleted, None);
            }
        }
        Ok(removed)
    }

    /// Counts the live tasks and sets the gauge `mcp_tasks_live` (label
    /// `status`) from the count: the live-task metric, store-wide (every
    /// instance over a shared store sees the same figure). O(n): call it
    /// from a timer or a metrics scrape, not per request. Returns the
    /// counts it recorded.
    pub async fn record_live(&self) -> Result<TaskCounts, StoreError> {
        let counts = self.counts().await?;
        for status in TaskStatus::ALL {
            metrics::gauge!(m::LIVE, "status" => status.as_str()).set(counts.status(status) as f64);
        }
        Ok(counts)
    }
}

/// The store's change feed for the operator, from [`Admin::watch`]: the ids
/// of every owner's tasks as they change.
///
/// Each [`TaskChange::Changed`] names a task that changed in a way its
/// owner sees (its creation, a new status, a new status message, its end:
/// terminal, expired or deleted); read it again with [`Admin::get`]
/// (`None`: it is gone). An id may come more often than it
/// changed. [`TaskChange::Missed`] says changes may have been lost (a
/// Redis reconnect, a watch that fell more than 4,096 changes behind, or,
/// over Redis, the watch's own start, once its subscriptions are made):
/// list the tasks again.
///
/// While it lives, the store carries every shard's changes to this
/// instance ([`TaskStore::listen_all`]); dropping it lets that go.
///
/// ```no_run
/// use mcp_tasks::{Admin, StoreError, TaskChange};
///
/// /// A console's live view: each task read again as it changes.
/// async fn console(admin: Admin) -> Result<(), StoreError> {
///     let Some(mut watch) = admin.watch() else {
///         return Ok(()); // no feed: list every few seconds instead
///     };
///     while let Some(change) = watch.next().await {
///         match change {
///             TaskChange::Changed(id) => match admin.get(id).await? {
///                 Some(task) => println!("{id} {:?} {:?}", task.tool, task.snapshot.status()),
///                 None => println!("{id} is gone"),
///             },
///             TaskChange::Missed => {
///                 let page = admin.list(None, 1000).await?;
///                 println!("{} tasks, read again", page.tasks.len());
///             }
///         }
///     }
///     Ok(())
/// }
/// ```
pub struct AdminWatch {
    changes: broadcast::Receiver<TaskChange>,
    _listening: Option<Listening>,
}

impl std::fmt::Debug for AdminWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminWatch")
            .field("behind", &self.changes.len())
            .finish_non_exhaustive()
    }
}

impl AdminWatch {
    /// The next change; [`TaskChange::Missed`] when this watch fell behind
    /// the feed; `None` once the feed is closed (the store is gone).
    pub async fn next(&mut self) -> Option<TaskChange> {
        match self.changes.recv().await {
            Ok(change) => Some(change),
            Err(RecvError::Lagged(_)) => Some(TaskChange::Missed),
            Err(RecvError::Closed) => None,
        }
    }
}
