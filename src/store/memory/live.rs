//! The live-task counts of [`MemoryTaskStore`](super::MemoryTaskStore), for
//! [`Quota`]s: each task created under a quota, by deadline, per owner and
//! in total.
//!
//! Ordered by deadline, the tasks that expired are always the first ones, so
//! a count is exact at any moment without waiting for the reaper: `admit`
//! first drops the entries due by now (each entry is dropped once, so this
//! is O(log n) amortized per create), then counts, then records the task,
//! all under one lock, so concurrent creates never overshoot a cap. The
//! reaper removes the entry of each task it reclaims, so the counts hold no
//! more than the store does, even when nobody creates anything.
//!
//! | Choice                                    | Why                                                             |
//! |-------------------------------------------|-----------------------------------------------------------------|
//! | one lock for every count                  | a create checks both caps and records both entries in one step  |
//! | keyed by deadline, `u64::MAX` without TTL | expired entries come first; a task without TTL never expires    |
//! | unowned tasks share one set               | anonymous callers count together, as one owner                  |
//!
//! The lock is innermost, like the owner index's: the store takes it while
//! holding a task shard's lock, and never together with the index's.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::store::{Quota, QuotaScope, StoreError};
use crate::task::Timestamp;

/// A counted task: its deadline (ms; `u64::MAX` without TTL), then its id.
pub(super) type Key = (u64, u128);

/// Live tasks created under a quota, per owner and in total.
#[derive(Default)]
pub(super) struct Live {
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    all: BTreeSet<Key>,
    /// Tasks created without a principal: one owner, together.
    unowned: BTreeSet<Key>,
    owned: HashMap<Box<str>, BTreeSet<Key>>,
}

/// Drops the entries due at `now` (ms) from `keys`.
fn trim(keys: &mut BTreeSet<Key>, now: u64) {
    while keys.first().is_some_and(|&(deadline, _)| deadline <= now) {
        keys.pop_first();
    }
}

/// Whether `count` tasks already fill `cap`.
fn full(cap: Option<u32>, count: usize) -> bool {
    cap.is_some_and(|cap| usize::try_from(cap).is_ok_and(|cap| count >= cap))
}

impl Counts {
    /// The live tasks of `owner` at `now`; forgets an owner with none left.
    fn held(&mut self, owner: Option<&str>, now: u64) -> usize {
        let Some(owner) = owner else {
            trim(&mut self.unowned, now);
            return self.unowned.len();
        };
        let Some(keys) = self.owned.get_mut(owner) else {
            return 0;
        };
        trim(keys, now);
        let held = keys.len();
        if held == 0 {
            self.owned.remove(owner);
        }
        held
    }

    fn insert(&mut self, owner: Option<&str>, key: Key) {
        self.all.insert(key);
        match owner {
            None => self.unowned.insert(key),
            Some(owner) => match self.owned.get_mut(owner) {
                Some(keys) => keys.insert(key),
                None => self.owned.entry(owner.into()).or_default().insert(key),
            },
        };
    }
}

impl Live {
    /// Records a task of `owner`, unless `quota` is full at `now`: then
    /// [`StoreError::QuotaExceeded`], and nothing is recorded.
    pub(super) fn admit(
        &self,
        owner: Option<&str>,
        key: Key,
        quota: Quota,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut counts = self
            .counts
            .lock()
            .map_err(|_| StoreError::backend("memory task store lock poisoned"))?;
        let now = now.as_millis();
        if full(quota.per_owner, counts.held(owner, now)) {
            return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
        }
        trim(&mut counts.all, now);
        if full(quota.total, counts.all.len()) {
            return Err(StoreError::QuotaExceeded(QuotaScope::Total));
        }
        counts.insert(owner, key);
        Ok(())
    }

    /// Forgets a task of `owner` (the reaper reclaimed it).
    pub(super) fn remove(&self, owner: Option<&str>, key: Key) {
        let mut counts = self.lock_anyway();
        counts.all.remove(&key);
        match owner {
            None => {
                counts.unowned.remove(&key);
            }
            Some(owner) => {
                if let Some(keys) = counts.owned.get_mut(owner) {
                    keys.remove(&key);
                    if keys.is_empty() {
                        counts.owned.remove(owner);
                    }
                }
            }
        }
    }

    /// The counts even after a panic under the lock: removing an entry is
    /// right whatever state that left, and `admit` reports the poisoning.
    fn lock_anyway(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many entries are recorded, in total and over the owners (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> (usize, usize) {
        let counts = self.lock_anyway();
        let owners = counts.unowned.len() + counts.owned.values().map(BTreeSet::len).sum::<usize>();
        (counts.all.len(), owners)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_TTL: u64 = u64::MAX;

    fn quota(per_owner: Option<u32>, total: Option<u32>) -> Quota {
        Quota { per_owner, total }
    }

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    #[test]
    fn each_owner_and_the_unowned_together_fill_their_own_cap() {
        let live = Live::default();
        let cap = quota(Some(2), None);
        for id in 0..2 {
            live.admit(Some("alice"), (NO_TTL, id), cap, at(0)).unwrap();
            live.admit(None, (NO_TTL, 10 + id), cap, at(0)).unwrap();
        }
        let refused = live.admit(Some("alice"), (NO_TTL, 2), cap, at(0));
        assert!(matches!(
            refused,
            Err(StoreError::QuotaExceeded(QuotaScope::Owner))
        ));
        let refused = live.admit(None, (NO_TTL, 12), cap, at(0));
        assert!(matches!(
            refused,
            Err(StoreError::QuotaExceeded(QuotaScope::Owner))
        ));
        live.admit(Some("bob"), (NO_TTL, 20), cap, at(0)).unwrap();
        assert_eq!(live.len(), (5, 5), "refused tasks are not recorded");
    }

    #[test]
    fn the_total_cap_counts_every_owner_and_the_owner_cap_is_reported_first() {
        let live = Live::default();
        let cap = quota(Some(1), Some(2));
        live.admit(Some("alice"), (NO_TTL, 1), cap, at(0)).unwrap();
        live.admit(None, (NO_TTL, 2), cap, at(0)).unwrap();
        let refused = live.admit(Some("bob"), (NO_TTL, 3), cap, at(0));
        assert!(matches!(
            refused,
            Err(StoreError::QuotaExceeded(QuotaScope::Total))
        ));
        let refused = live.admit(Some("alice"), (NO_TTL, 4), cap, at(0));
        assert!(matches!(
            refused,
            Err(StoreError::QuotaExceeded(QuotaScope::Owner))
        ));
    }

    #[test]
    fn entries_stop_counting_at_their_deadline_and_owners_without_any_are_forgotten() {
        let live = Live::default();
        let cap = quota(Some(1), Some(1));
        live.admit(Some("alice"), (1_000, 1), cap, at(0)).unwrap();
        assert!(live.admit(Some("alice"), (2_000, 2), cap, at(999)).is_err());
        live.admit(Some("alice"), (2_000, 2), cap, at(1_000))
            .unwrap();
        assert_eq!(live.len(), (1, 1), "the due entry was dropped");
        let refused = live.admit(Some("alice"), (3_000, 3), quota(Some(0), None), at(2_000));
        assert!(refused.is_err());
        assert!(
            live.lock_anyway().owned.is_empty(),
            "alice holds nothing live and is forgotten"
        );
    }

    #[test]
    fn removed_entries_no_longer_count() {
        let live = Live::default();
        let cap = quota(Some(1), None);
        live.admit(Some("alice"), (5_000, 1), cap, at(0)).unwrap();
        live.admit(None, (5_000, 2), cap, at(0)).unwrap();
        live.remove(Some("alice"), (5_000, 1));
        live.remove(None, (5_000, 2));
        assert_eq!(live.len(), (0, 0));
        assert!(live.lock_anyway().owned.is_empty());
        live.admit(Some("alice"), (5_000, 3), cap, at(0)).unwrap();
    }

    #[test]
    fn a_cap_of_zero_refuses_everything() {
        let live = Live::default();
        let refused = live.admit(None, (NO_TTL, 1), quota(Some(0), None), at(0));
        assert!(matches!(
            refused,
            Err(StoreError::QuotaExceeded(QuotaScope::Owner))
        ));
        let refused = live.admit(None, (NO_TTL, 1), quota(None, Some(0)), at(0));
        assert!(matches!(
            refused,
            Err(StoreError::QuotaExceeded(QuotaScope::Total))
        ));
    }
}
