//! The operator's methods of [`MemoryTaskStore`]: every owner's tasks,
//! found by scanning the shards (O(n), one shard locked at a time).

use std::collections::BinaryHeap;
use std::collections::hash_map::Entry as Slot;

use super::{Entry, MemoryTaskStore, SHARDS};
use crate::store::cursor::{ListCursor, MAX_PAGE};
use crate::store::{AdminPage, AdminTask, CancelOutcome, StoreError, TaskCounts};
use crate::task::{TaskId, Timestamp};

/// Where a task sits in the listing: creation time (ms), then id.
type Key = (u64, u128);

impl Entry {
    fn admin(&self, id: u128) -> AdminTask {
        AdminTask {
            owner: self.owner.as_deref().map(str::to_owned),
            tool: self.tool.as_deref().map(str::to_owned),
            // A call of this store runs once per process, which it does
            // not outlive.
            attempt: 1,
            snapshot: self.snapshot(id),
        }
    }
}

impl MemoryTaskStore {
    /// [`TaskStore::admin_list`](crate::TaskStore::admin_list): the `limit`
    /// smallest keys after the cursor, kept in a bounded heap while every
    /// shard is scanned, then read again one by one.
    pub(super) fn admin_page(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<AdminPage, StoreError> {
        let after = ListCursor::param(cursor)?;
        let after = after.map(ListCursor::key);
        let limit = limit.clamp(1, MAX_PAGE);
        let now = Timestamp::now();
        // One more than the page: whether it exists tells if more follow.
        let mut smallest: BinaryHeap<Key> = BinaryHeap::with_capacity(limit + 2);
        for index in 0..SHARDS {
            let shard = self.shard(index as u128)?;
            for (&id, entry) in shard.iter() {
                let key = (entry.created_at.as_millis(), id);
                if entry.expired(now) || after.is_some_and(|after| key <= after) {
                    continue;
                }
                smallest.push(key);
                if smallest.len() > limit + 1 {
                    smallest.pop();
                }
            }
        }
        let mut keys = smallest.into_sorted_vec();
        let more = keys.len() > limit;
        keys.truncate(limit);
        let next_cursor = match keys.last() {
            Some(&(created, id)) if more => Some(
                ListCursor::after(Timestamp::from_millis(created), TaskId::from_u128(id))
                    .to_string(),
            ),
            _ => None,
        };
        let mut tasks = Vec::with_capacity(keys.len());
        for (_, id) in keys {
            let shard = self.shard(id)?;
            // A task that ended its life since the scan is left out.
            if let Some(entry) = shard.get(&id).filter(|entry| !entry.expired(now)) {
                tasks.push(entry.admin(id));
            }
        }
        Ok(AdminPage { tasks, next_cursor })
    }

    /// [`TaskStore::admin_get`](crate::TaskStore::admin_get): the task
    /// whoever owns it, unless expired.
    pub(super) fn admin_read(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        let (id, now) = (id.as_u128(), Timestamp::now());
        let shard = self.shard(id)?;
        Ok(shard
            .get(&id)
            .filter(|entry| !entry.expired(now))
            .map(|entry| entry.admin(id)))
    }

    /// [`TaskStore::admin_counts`](crate::TaskStore::admin_counts).
    pub(super) fn admin_tally(&self) -> Result<TaskCounts, StoreError> {
        let now = Timestamp::now();
        let mut counts = TaskCounts::default();
        for index in 0..SHARDS {
            let shard = self.shard(index as u128)?;
            for entry in shard.values().filter(|entry| !entry.expired(now)) {
                counts.add(entry.owner.as_deref(), entry.state.status());
            }
        }
        Ok(counts)
    }

    /// [`TaskStore::admin_cancel`](crate::TaskStore::admin_cancel): the
    /// owner's `cancel`, under the task's own owner.
    pub(super) fn admin_cancel_task(
        &self,
        id: TaskId,
    ) -> Result<Option<CancelOutcome>, StoreError> {
        // Whoever owns it, unless expired; the change is announced.
        match self.with_live(id, |entry, now| Ok(entry.cancel(id.as_u128(), now))) {
            Ok(outcome) => Ok(Some(outcome)),
            Err(StoreError::NotFound) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// [`TaskStore::admin_delete`](crate::TaskStore::admin_delete): out of
    /// the map, the owner index and the quota counts in one step.
    pub(super) fn admin_remove(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        let id = id.as_u128();
        let mut shard = self.shard(id)?;
        let now = Timestamp::now();
        let Slot::Occupied(found) = shard.entry(id) else {
            return Ok(None);
        };
        // An expired task is already unknown; the reaper takes it.
        if found.get().expired(now) {
            return Ok(None);
        }
        let entry = found.remove();
        // Both indexes innermost, under the shard lock, as in `create`.
        let owner = entry.owner.as_deref();
        self.inner
            .owners
            .remove(owner, (entry.created_at.as_millis(), id));
        if entry.counted {
            self.inner.live.remove(owner, entry.live_key(id));
        }
        drop(shard);
        entry.stop.cancel();
        self.changed(TaskId::from_u128(id));
        Ok(Some(entry.admin(id)))
    }
}
