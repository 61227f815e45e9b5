//! The per-owner index of [`MemoryTaskStore`](super::MemoryTaskStore): each
//! owner's task keys in creation order, so that listing one owner's tasks
//! costs O(log n + page), never a scan of the store or of other owners.
//!
//! The index is sharded by a hash of the owner, like the tasks by id, so that
//! creates for different owners rarely wait for each other. Its locks are
//! innermost: nothing else is locked while one is held (a listing reads the
//! tasks between batches of keys), so the store may take one while holding a
//! task shard's lock without risking a deadlock.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

/// A task's place in its owner's listing: creation time (ms), then id.
pub(super) type Key = (u64, u128);

const SHARDS: usize = 16;

/// Keys by owner, in creation order.
pub(super) struct Owners {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
}

#[derive(Default)]
struct Shard {
    /// Tasks created without a principal: an owner of their own.
    unowned: BTreeSet<Key>,
    owned: HashMap<Box<str>, BTreeSet<Key>>,
}

impl Shard {
    fn keys(&self, owner: Option<&str>) -> Option<&BTreeSet<Key>> {
        match owner {
            None => Some(&self.unowned),
            Some(owner) => self.owned.get(owner),
        }
    }
}

impl Default for Owners {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
        }
    }
}

/// What the store found for one indexed key.
pub(super) enum Found<T> {
    /// The task is live and belongs to the owner.
    Live(T),
    /// The task is gone or expired: drop its key from the index.
    Gone,
}

impl Owners {
    fn shard(&self, owner: Option<&str>) -> MutexGuard<'_, Shard> {
        let at = (self.hasher.hash_one(owner) as usize) % SHARDS;
        // The index holds nothing a panic could leave half-written in a way
        // that matters: a stale key is skipped and dropped by the next list.
        self.shards[at].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a new task of `owner`.
    pub(super) fn insert(&self, owner: Option<&str>, key: Key) {
        let mut shard = self.shard(owner);
        match owner {
            None => shard.unowned.insert(key),
            Some(owner) => match shard.owned.get_mut(owner) {
                Some(keys) => keys.insert(key),
                None => shard.owned.entry(owner.into()).or_default().insert(key),
            },
        };
    }

    /// Forgets a task of `owner`; an owner with no task left is forgotten too.
    pub(super) fn remove(&self, owner: Option<&str>, key: Key) {
        let mut shard = self.shard(owner);
        match owner {
            None => {
                shard.unowned.remove(&key);
            }
            Some(owner) => {
                if let Some(keys) = shard.owned.get_mut(owner) {
                    keys.remove(&key);
                    if keys.is_empty() {
                        shard.owned.remove(owner);
                    }
                }
            }
        }
    }

    /// Up to `n` keys of `owner` after `after` (exclusive), appended to
    /// `out`; whether more keys follow them.
    fn take(&self, owner: Option<&str>, after: Option<Key>, n: usize, out: &mut Vec<Key>) -> bool {
        let shard = self.shard(owner);
        let Some(keys) = shard.keys(owner) else {
            return false;
        };
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut range = keys.range((start, Bound::Unbounded));
        out.extend(range.by_ref().take(n));
        range.next().is_some()
    }

    /// One page of `owner`'s tasks after `after`: at most `limit` items that
    /// `read` finds live, oldest first, and the key of the last one when more
    /// keys follow it. Keys `read` reports gone are dropped from the index.
    ///
    /// Reads keys in batches with no index lock held while `read` runs, so
    /// the cost is O(log n + page + keys stepped over), and a key stepped
    /// over is dropped, so each stale key costs once.
    pub(super) fn page<T, E>(
        &self,
        owner: Option<&str>,
        mut after: Option<Key>,
        limit: usize,
        mut read: impl FnMut(Key) -> Result<Found<T>, E>,
    ) -> Result<(Vec<T>, Option<Key>), E> {
        let mut items = Vec::new();
        let mut gone = Vec::new();
        let mut batch = Vec::new();
        let mut more = true;
        let mut last = None;
        while items.len() < limit && more {
            batch.clear();
            more = self.take(owner, after, limit - items.len(), &mut batch);
            for &key in &batch {
                after = Some(key);
                match read(key) {
                    Ok(Found::Live(item)) => {
                        items.push(item);
                        last = Some(key);
                    }
                    Ok(Found::Gone) => gone.push(key),
                    Err(error) => {
                        self.forget(owner, &gone);
                        return Err(error);
                    }
                }
            }
        }
        self.forget(owner, &gone);
        Ok((items, if more { last } else { None }))
    }

    fn forget(&self, owner: Option<&str>, keys: &[Key]) {
        for &key in keys {
            self.remove(owner, key);
        }
    }

    /// How many keys the index holds, over all owners (O(owners); tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let shard = shard.lock().unwrap_or_else(|p| p.into_inner());
                shard.unowned.len() + shard.owned.values().map(BTreeSet::len).sum::<usize>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn live(gone: &HashSet<Key>) -> impl FnMut(Key) -> Result<Found<Key>, ()> + '_ {
        move |key| {
            Ok(if gone.contains(&key) {
                Found::Gone
            } else {
                Found::Live(key)
            })
        }
    }

    #[test]
    fn pages_walk_one_owner_in_key_order_and_end_without_a_cursor() {
        let owners = Owners::default();
        for id in (0..10u128).rev() {
            owners.insert(Some("alice"), (u64::try_from(id / 3).unwrap(), id));
            owners.insert(Some("bob"), (0, 100 + id));
        }
        owners.insert(None, (0, 200));
        let none = HashSet::new();
        let (first, next) = owners.page(Some("alice"), None, 4, live(&none)).unwrap();
        assert_eq!(first, vec![(0, 0), (0, 1), (0, 2), (1, 3)]);
        assert_eq!(next, Some((1, 3)));
        let (rest, next) = owners.page(Some("alice"), next, 6, live(&none)).unwrap();
        assert_eq!(rest.len(), 6);
        assert_eq!(next, None, "the last page has no cursor");
        let (unowned, _) = owners.page(None, None, 100, live(&none)).unwrap();
        assert_eq!(unowned, vec![(0, 200)]);
        let (nobody, next) = owners.page(Some("eve"), None, 100, live(&none)).unwrap();
        assert!(nobody.is_empty() && next.is_none());
    }

    #[test]
    fn gone_keys_are_skipped_dropped_and_do_not_shorten_the_page() {
        let owners = Owners::default();
        for id in 0..6u128 {
            owners.insert(Some("alice"), (1, id));
        }
        let gone: HashSet<Key> = [(1, 0), (1, 1), (1, 3)].into();
        let (page, next) = owners.page(Some("alice"), None, 2, live(&gone)).unwrap();
        assert_eq!(page, vec![(1, 2), (1, 4)]);
        assert_eq!(next, Some((1, 4)));
        assert_eq!(owners.len(), 3, "the gone keys stepped over were dropped");
        owners.remove(Some("alice"), (1, 2));
        owners.remove(Some("alice"), (1, 4));
        owners.remove(Some("alice"), (1, 5));
        assert_eq!(owners.len(), 0);
        assert!(
            owners.shard(Some("alice")).owned.is_empty(),
            "owner forgotten"
        );
    }

    #[test]
    fn a_page_that_fills_exactly_at_the_end_has_no_cursor() {
        let owners = Owners::default();
        owners.insert(None, (1, 1));
        owners.insert(None, (1, 2));
        let none = HashSet::new();
        let (page, next) = owners.page(None, None, 2, live(&none)).unwrap();
        assert_eq!(page.len(), 2);
        assert_eq!(next, None);
    }
}
