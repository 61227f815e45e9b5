//! What an operator sees of a store: every owner's tasks, counted and
//! listed, for admin tools and the gateway. No wire method exposes it; the
//! layer's [`Admin`](crate::Admin) handle is the way in.

use std::collections::BTreeMap;

use crate::task::{TaskSnapshot, TaskStatus};

/// A task as the operator sees it: its snapshot, whose it is, which tool's
/// call made it and which run of that call this is.
#[derive(Clone, Debug)]
pub struct AdminTask {
    /// The owner key the store holds: the principal, prefixed by the
    /// layer's [`scope`](crate::TasksLayer::scope) when it has one; `None`
    /// for a task created without a principal.
    pub owner: Option<String>,
    /// The name of the tool whose `tools/call` made the task, as
    /// [`NewTask::tool`](super::NewTask::tool) gave it (the layer keeps at
    /// most its first 1,024 bytes, then `…`); `None` when unknown, e.g. a
    /// task stored by a version that did not keep it.
    pub tool: Option<String>,
    /// Which run of the call this is: 1 for the first. A store that runs a
    /// call again after its process stopped, or after its answer broke off
    /// ([`TaskStore::orphans`](super::TaskStore::orphans),
    /// [`TaskStore::count_attempt`](super::TaskStore::count_attempt)),
    /// counts the runs; one that never does reports 1.
    pub attempt: u32,
    /// The task as `tasks/get` would show it to its owner.
    pub snapshot: TaskSnapshot,
}

/// One page of every owner's live tasks, the answer to
/// [`TaskStore::admin_list`](super::TaskStore::admin_list).
#[derive(Clone, Debug, Default)]
pub struct AdminPage {
    /// Live tasks, oldest first (creation time, then id). May hold fewer
    /// than the limit even when more follow.
    pub tasks: Vec<AdminTask>,
    /// Opaque text to pass as the next call's `cursor`; `None` on the last
    /// page.
    pub next_cursor: Option<String>,
}

/// Live tasks of one owner by status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// `working`.
    pub working: u64,
    /// `input_required`.
    pub input_required: u64,
    /// `completed`, result kept until the TTL runs out.
    pub completed: u64,
    /// `failed`.
    pub failed: u64,
    /// `cancelled`.
    pub cancelled: u64,
}

impl StatusCounts {
    /// The count of one status.
    pub fn get(&self, status: TaskStatus) -> u64 {
        match status {
            TaskStatus::Working => self.working,
            TaskStatus::InputRequired => self.input_required,
            TaskStatus::Completed => self.completed,
            TaskStatus::Failed => self.failed,
            TaskStatus::Cancelled => self.cancelled,
        }
    }

    /// Counts one more task of `status`.
    pub fn add(&mut self, status: TaskStatus) {
        *self.slot(status) += 1;
    }

    fn slot(&mut self, status: TaskStatus) -> &mut u64 {
        match status {
            TaskStatus::Working => &mut self.working,
            TaskStatus::InputRequired => &mut self.input_required,
            TaskStatus::Completed => &mut self.completed,
            TaskStatus::Failed => &mut self.failed,
            TaskStatus::Cancelled => &mut self.cancelled,
        }
    }

    /// Every status together.
    pub fn total(&self) -> u64 {
        self.working + self.input_required + self.completed + self.failed + self.cancelled
    }
}

/// Live tasks counted per owner and status, the answer to
/// [`TaskStore::admin_counts`](super::TaskStore::admin_counts).
///
/// ```
/// use mcp_tasks::store::TaskCounts;
/// use mcp_tasks::TaskStatus;
///
/// let mut counts = TaskCounts::default();
/// counts.add(Some("alice"), TaskStatus::Working);
/// counts.add(Some("alice"), TaskStatus::Completed);
/// counts.add(None, TaskStatus::Working);
/// assert_eq!(counts.owner(Some("alice")).total(), 2);
/// assert_eq!(counts.status(TaskStatus::Working), 2);
/// assert_eq!(counts.total(), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskCounts {
    owners: BTreeMap<Option<String>, StatusCounts>,
}

impl TaskCounts {
    /// Counts one more task of `owner` in `status`.
    pub fn add(&mut self, owner: Option<&str>, status: TaskStatus) {
        self.owners
            .entry(owner.map(str::to_owned))
            .or_default()
            .add(status);
    }

    /// Counts `n` more tasks of `owner` in `status` (a store that counts
    /// with a `GROUP BY`).
    #[cfg(feature = "sqlite")]
    pub(crate) fn add_many(&mut self, owner: Option<&str>, status: TaskStatus, n: u64) {
        let counts = self.owners.entry(owner.map(str::to_owned)).or_default();
        *counts.slot(status) += n;
    }

    /// One owner's counts (all zero for an owner without live tasks).
    pub fn owner(&self, owner: Option<&str>) -> StatusCounts {
        self.owners
            .get(&owner.map(str::to_owned))
            .copied()
            .unwrap_or_default()
    }

    /// Every owner with live tasks and their counts, in owner order
    /// (`None`, the unowned tasks, first).
    pub fn owners(&self) -> impl Iterator<Item = (Option<&str>, StatusCounts)> {
        self.owners
            .iter()
            .map(|(owner, counts)| (owner.as_deref(), *counts))
    }

    /// Every owner's tasks in `status`.
    pub fn status(&self, status: TaskStatus) -> u64 {
        self.owners.values().map(|counts| counts.get(status)).sum()
    }

    /// Every live task.
    pub fn total(&self) -> u64 {
        self.owners.values().map(StatusCounts::total).sum()
    }
}
