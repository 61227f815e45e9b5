//! When tasks of [`MemoryTaskStore`](super::MemoryTaskStore) expire.
//!
//! The TTL runs from creation, so tasks that share a TTL expire in the order
//! they were created: one FIFO queue per TTL (in 100 ms buckets) keeps
//! every deadline in O(1), and the reaper only looks at the queue fronts.
//! Scheduling wakes the reaper only when a queue was empty, so a busy store
//! with a fixed TTL costs one queue push per task and nothing else. The
//! reaper, started by the first task with a TTL, sleeps until the next
//! deadline and removes what is due from the shards, the index and the counts.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::{Inner, MemoryTaskStore, SHARDS};
use crate::store::TaskChange;
use crate::task::{TaskId, Timestamp};

/// Deadlines by TTL bucket, and the signal that wakes the reaper.
#[derive(Default)]
pub(super) struct Expiry {
    queues: Mutex<HashMap<u64, VecDeque<(Timestamp, u128)>>>,
    /// Shared with the reaper, which must not keep the store alive.
    pub(super) wake: Arc<Notify>,
}

impl Expiry {
    /// Records that `id` expires at `deadline`.
    pub(super) fn schedule(&self, id: u128, ttl: Duration, deadline: Timestamp) {
        // A poisoned lock only holds deadlines; reads enforce expiry anyway.
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        // Buckets of 100 ms: deadlines within a bucket are at most that much
        // out of order, and a task is reaped at most that much late (reads
        // enforce the exact deadline regardless).
        let bucket = u64::try_from(ttl.as_millis() / 100).unwrap_or(u64::MAX);
        let queue = queues.entry(bucket).or_default();
        let new_front = queue.is_empty();
        queue.push_back((deadline, id));
        drop(queues);
        if new_front {
            self.wake.notify_one();
        }
    }

    /// Moves every id due at `now` into `due`; returns the next deadline.
    pub(super) fn take_due(&self, now: Timestamp, due: &mut Vec<u128>) -> Option<Timestamp> {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        let mut next: Option<Timestamp> = None;
        queues.retain(|_, queue| {
            while let Some(&(deadline, id)) = queue.front() {
                if deadline > now {
                    next = Some(next.map_or(deadline, |n| n.min(deadline)));
                    break;
                }
                due.push(id);
                queue.pop_front();
            }
            !queue.is_empty()
        });
        next
    }
}

impl MemoryTaskStore {
    /// Records when `id` expires, and starts the reaper if none runs.
    pub(super) fn schedule_expiry(&self, id: u128, ttl: Duration, deadline: Timestamp) {
        {
            // A poisoned lock only guards the handle; reads enforce expiry.
            let mut reaper = self.inner.reaper.lock().unwrap_or_else(|p| p.into_inner());
            if reaper.as_ref().is_none_or(|handle| handle.is_finished()) {
                let wake = self.inner.expiry.wake.clone();
                *reaper = Some(tokio::spawn(reap(Arc::downgrade(&self.inner), wake)));
            }
        }
        self.inner.expiry.schedule(id, ttl, deadline);
    }
}

/// Removes expired tasks and fires their stop signal, sleeping until the
/// next deadline or until a new one is scheduled. Ends with the store.
async fn reap(store: Weak<Inner>, wake: Arc<Notify>) {
    let mut due = Vec::new();
    loop {
        let next = {
            let Some(inner) = store.upgrade() else { return };
            let now = Timestamp::now();
            let next = inner.expiry.take_due(now, &mut due);
            for id in due.drain(..) {
                let shard = &inner.shards[(id as usize) % SHARDS];
                // A poisoned shard is left alone here; every read reports it.
                let removed = match shard.lock() {
                    Ok(mut map) if map.get(&id).is_some_and(|entry| entry.expired(now)) => {
                        map.remove(&id)
                    }
                    _ => None,
                };
                if let Some(entry) = removed {
                    let key = (entry.created_at.as_millis(), id);
                    inner.owners.remove(entry.owner.as_deref(), key);
                    if entry.counted {
                        inner
                            .live
                            .remove(entry.owner.as_deref(), entry.live_key(id));
                    }
                    entry.stop.cancel();
                    let _ = inner
                        .changes
                        .send(TaskChange::Changed(TaskId::from_u128(id)));
                }
            }
            next.map(|at| Duration::from_millis(at.as_millis().saturating_sub(now.as_millis())))
        };
        match next {
            Some(delay) => {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_ids_come_out_in_deadline_order_per_ttl_and_the_next_deadline_is_the_earliest_front() {
        let expiry = Expiry::default();
        let at = Timestamp::from_millis;
        expiry.schedule(1, Duration::from_secs(1), at(1_000));
        expiry.schedule(2, Duration::from_secs(1), at(1_500));
        expiry.schedule(3, Duration::from_secs(60), at(60_000));
        let mut due = Vec::new();
        assert_eq!(expiry.take_due(at(1_200), &mut due), Some(at(1_500)));
        assert_eq!(due, vec![1]);
        due.clear();
        assert_eq!(expiry.take_due(at(2_000), &mut due), Some(at(60_000)));
        assert_eq!(due, vec![2]);
        due.clear();
        assert_eq!(expiry.take_due(at(60_000), &mut due), None);
        assert_eq!(due, vec![3]);
    }
}
