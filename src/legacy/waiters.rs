//! Counting the clients blocked on 2025-11-25 `tasks/result`.
//!
//! Each waiter holds an open SSE stream and reads the store every 200 ms, so
//! their number is capped per task and per owner; a waiter over a cap gets
//! a JSON-RPC error at once instead of a stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::WaiterLimits;
use crate::task::TaskId;

#[derive(Default)]
struct Counts {
    tasks: HashMap<TaskId, u32>,
    owners: HashMap<Option<String>, u32>,
}

/// The waiters of one layer.
pub(crate) struct Waiters {
    limits: WaiterLimits,
    counts: Arc<Mutex<Counts>>,
}

/// One waiter, counted until dropped.
pub(crate) struct Waiting {
    task: TaskId,
    owner: Option<String>,
    counts: Arc<Mutex<Counts>>,
}

fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    // Plain counters, never left half-updated by a panic.
    counts
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Waiters {
    pub(crate) fn new(limits: WaiterLimits) -> Self {
        Self {
            limits,
            counts: Arc::default(),
        }
    }

    /// Counts one more waiter on `task` for `owner`, or `None` over a cap.
    pub(crate) fn enter(&self, task: TaskId, owner: Option<&str>) -> Option<Waiting> {
        let mut counts = lock(&self.counts);
        let on_task = counts.tasks.get(&task).copied().unwrap_or(0);
        let owner = owner.map(str::to_owned);
        let of_owner = counts.owners.get(&owner).copied().unwrap_or(0);
        if on_task >= self.limits.per_task || of_owner >= self.limits.per_owner {
            return None;
        }
        *counts.tasks.entry(task).or_default() += 1;
        *counts.owners.entry(owner.clone()).or_default() += 1;
        Some(Waiting {
            task,
            owner,
            counts: self.counts.clone(),
        })
    }

    /// The caps in force.
    pub(crate) fn limits(&self) -> WaiterLimits {
        self.limits
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        let Counts { tasks, owners } = &mut *counts;
        if let Some(n) = tasks.get_mut(&self.task) {
            *n -= 1;
            if *n == 0 {
                tasks.remove(&self.task);
            }
        }
        if let Some(n) = owners.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                owners.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_are_capped_per_task_and_per_owner_and_released_on_drop() {
        let waiters = Waiters::new(WaiterLimits {
            per_task: 2,
            per_owner: 3,
        });
        let (a, b) = (TaskId::from_u128(1), TaskId::from_u128(2));
        let first = waiters.enter(a, Some("alice")).unwrap();
        let _second = waiters.enter(a, Some("alice")).unwrap();
        assert!(waiters.enter(a, Some("bob")).is_none(), "per task");
        let _third = waiters.enter(b, Some("alice")).unwrap();
        assert!(waiters.enter(b, Some("alice")).is_none(), "per owner");
        assert!(
            waiters.enter(b, None).is_some(),
            "anonymous is its own owner"
        );
        drop(first);
        assert!(waiters.enter(a, Some("alice")).is_some());
    }
}
