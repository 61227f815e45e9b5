//! The shards of a store: one set of keys per hash tag, and which shard an
//! owner's tasks live in.
//!
//! With one shard (the default on a single server) every key is under the
//! tag `{<prefix>}`. With `n > 1` (the default on a Redis Cluster, see
//! [`shards`](super::RedisTaskStoreBuilder::shards)) shard `k` is under
//! `{<prefix>:s<k>}`, so the shards fall on different slots and, on a
//! cluster, on different primaries. Each shard is a complete store of its
//! own (tasks, rounds, owner indexes, live sets, instance leases and
//! driving sets, channels), so every script runs in one slot with its
//! single-server logic. An owner's tasks all live in one shard, chosen by
//! a hash of the owner: the owner's listing and quota stay one script.

use sha2::{Digest, Sha256};

use super::scripts::Keys;

/// The most shards a store may have.
pub(super) const MAX_SHARDS: u16 = 1024;

/// The shards of one prefix.
#[derive(Debug)]
pub(super) struct Shards {
    prefix: String,
    /// The keys of every shard, by index.
    list: Vec<Keys>,
    /// Where the layout's version and the shard count are kept:
    /// `{<prefix>}:meta`, whatever the count.
    meta: Keys,
}

impl Shards {
    /// `count` shards (at least one) under `prefix`; `sharded` announces
    /// changes with sharded pub/sub (a Redis Cluster).
    pub(super) fn new(prefix: String, count: u16, sharded: bool) -> Self {
        let count = count.clamp(1, MAX_SHARDS);
        let keys = |base| Keys::new(prefix.clone(), base, sharded);
        let meta = keys(format!("{{{prefix}}}"));
        let list = if count == 1 {
            vec![keys(format!("{{{prefix}}}"))]
        } else {
            (0..count)
                .map(|k| keys(format!("{{{prefix}:s{k}}}")))
                .collect()
        };
        Self { prefix, list, meta }
    }

    /// The key prefix.
    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// How many shards there are.
    pub(super) fn count(&self) -> usize {
        self.list.len()
    }

    /// The keys of shard `index`.
    pub(super) fn get(&self, index: usize) -> &Keys {
        &self.list[index % self.list.len()]
    }

    /// Every shard's keys, by index.
    pub(super) fn all(&self) -> impl Iterator<Item = (usize, &Keys)> {
        self.list.iter().enumerate()
    }

    /// The keys under `{<prefix>}`, where the layout's meta and migration
    /// lock live (also shard 0's keys when there is one shard).
    pub(super) fn home(&self) -> &Keys {
        &self.meta
    }

    /// The shard that holds `owner`'s tasks: the first eight bytes of
    /// SHA-256 of the owner (a distinct input for no owner), modulo the
    /// count. Stable across versions and machines, as it must be.
    pub(super) fn index_of(&self, owner: Option<&str>) -> usize {
        if self.list.len() == 1 {
            return 0;
        }
        let digest = match owner {
            Some(owner) => Sha256::new().chain_update(b"o:").chain_update(owner),
            None => Sha256::new().chain_update(b"unowned"),
        }
        .finalize();
        let mut head = [0; 8];
        head.copy_from_slice(&digest[..8]);
        // The count is at most `MAX_SHARDS`, so the remainder fits.
        (u64::from_be_bytes(head) % self.list.len() as u64) as usize
    }

    /// `owner`'s shard and its keys.
    pub(super) fn of(&self, owner: Option<&str>) -> (usize, &Keys) {
        let index = self.index_of(owner);
        (index, &self.list[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shard_keeps_the_prefix_tag() {
        let shards = Shards::new("p".into(), 1, false);
        assert_eq!(shards.of(Some("alice")).1.base(), "{p}");
        assert_eq!(shards.of(None).1.base(), "{p}");
        assert_eq!(shards.home().base(), "{p}");
    }

    #[test]
    fn owners_spread_over_the_shards_and_stay_put() {
        let shards = Shards::new("p".into(), 16, false);
        let mut seen = [0usize; 16];
        for n in 0..1600 {
            let owner = format!("user-{n}");
            let index = shards.index_of(Some(&owner));
            assert_eq!(index, shards.index_of(Some(&owner)));
            seen[index] += 1;
        }
        // 100 expected per shard; a hash this uneven would be a bug.
        assert!(seen.iter().all(|&n| (50..=150).contains(&n)), "{seen:?}");
        assert_eq!(shards.get(3).base(), "{p:s3}");
        // A fixed owner always lands in the same shard, on every machine.
        let alice = shards.index_of(Some("alice"));
        assert_eq!(
            Shards::new("q".into(), 16, false).index_of(Some("alice")),
            alice
        );
        assert!(shards.index_of(None) < 16);
    }
}
