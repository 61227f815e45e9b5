//! A map that keeps at most a number of entries, forgetting the oldest
//! first: what the bridge keeps per client (sessions, relayed questions)
//! stays bounded whatever clients do.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// At most `max` entries; inserting one more forgets the oldest.
pub(super) struct Capped<K, V> {
    entries: HashMap<K, V>,
    /// The keys, oldest first.
    order: VecDeque<K>,
    max: usize,
}

impl<K: Hash + Eq + Clone, V> Capped<K, V> {
    pub(super) fn new(max: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            max: max.max(1),
        }
    }

    /// Keeps `value` under `key`, forgetting the oldest entry when full.
    pub(super) fn insert(&mut self, key: K, value: V) {
        if self.order.len() >= self.max
            && let Some(oldest) = self.order.pop_front()
        {
            self.entries.remove(&oldest);
        }
        self.entries.insert(key.clone(), value);
        self.order.push_back(key);
    }

    pub(super) fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.entries.get(key)
    }

    /// The entry of `key`, taken out.
    pub(super) fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let value = self.entries.remove(key)?;
        self.order.retain(|kept| kept.borrow() != key);
        Some(value)
    }

    /// Keeps only the entries `keep` says yes to.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        self.entries.retain(|_, value| keep(value));
        let entries = &self.entries;
        self.order.retain(|key| entries.contains_key(key));
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.order.clear();
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entry_goes_first_and_removed_ones_leave_no_trace() {
        let mut capped = Capped::new(2);
        capped.insert(1, "a");
        capped.insert(2, "b");
        assert_eq!(capped.remove(&1), Some("a"));
        capped.insert(3, "c");
        capped.insert(4, "d");
        assert_eq!(capped.get(&2), None, "the oldest went");
        assert_eq!((capped.get(&3), capped.get(&4)), (Some(&"c"), Some(&"d")));
        capped.retain(|value| *value != "c");
        assert_eq!(capped.len(), 1);
        capped.clear();
        assert_eq!(capped.len(), 0);
    }
}
