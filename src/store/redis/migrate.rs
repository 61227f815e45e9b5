//! Moving a store from the first key layout to today's, once, at connect.
//!
//! Layout 1 (the crate before Redis Cluster support) named keys
//! `<prefix>:task:{<id>}`, `<prefix>:owned:<owner>`, `<prefix>:all`, …;
//! layout 2 puts every key under the hash tag `{<prefix>}`
//! (`{<prefix>}:task:<id>`, …; see [`Keys`]). The first instance of this
//! version that connects to a single server renames every layout-1 key of
//! its prefix, keeping values and expiries, then records `v = 2` in
//! `{<prefix>}:meta`; later connects read that field and do nothing else.
//!
//! It refuses while a layout-1 instance still holds its lease: the two
//! layouts cannot share a prefix, so every instance of the previous version
//! stops first. The tasks those instances were running are then swept as
//! after a crash (failed, or claimed and run again), because their registry
//! and driving sets move along. Concurrent connects take turns through a
//! lock key; the renames are idempotent, so one that dies half way is
//! finished by the next.

use std::collections::BTreeSet;
use std::time::Duration;

use redis::AsyncCommands;

use super::backend;
use super::conn::Conn;
use super::scripts::Keys;
use super::shards::Shards;
use crate::store::StoreError;

/// The key layout this version writes.
pub(super) const LAYOUT: u32 = 2;

/// How long the migration lock lives without being renewed (it is renewed
/// at every batch, so only a dead migrator lets it lapse).
const LOCK_TTL: Duration = Duration::from_secs(30);

/// How many keys one `SCAN` step and one rename batch cover.
const BATCH: usize = 500;

/// Renames each pair `KEYS[2i-1]` → `KEYS[2i]` whose source still exists;
/// a single server only (the keys span slots). Replies how many moved.
const RENAME: &str = r"
local moved = 0
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 1])
    moved = moved + 1
  end
end
return moved
";

/// Brings the keys of the prefix to [`LAYOUT`], then checks (or records,
/// the first time) the shard count in `{<prefix>}:meta` (field `n`).
pub(super) async fn run(conn: &Conn, shards: &Shards) -> Result<(), StoreError> {
    let keys = shards.home();
    if shards.count() > 1 && has_v1_keys(&mut conn.clone(), keys.prefix()).await? {
        return Err(StoreError::backend(format!(
            "the Redis keys under prefix `{}` are in layout 1, which moves to one shard only: \
             connect once with `shards(1)` first",
            keys.prefix()
        )));
    }
    to_layout(conn, keys).await?;
    shard_count(&mut conn.clone(), shards).await
}

/// Records the shard count on the first connect; refuses a different one
/// later. A store written before counts were recorded has one shard.
async fn shard_count(conn: &mut Conn, shards: &Shards) -> Result<(), StoreError> {
    let keys = shards.home();
    let meta = keys.meta();
    let mut recorded: Option<usize> = conn.hget(&meta, "n").await.map_err(backend)?;
    if recorded.is_none() {
        let unsharded: u32 = redis::cmd("EXISTS")
            .arg(keys.all())
            .arg(keys.instances())
            .query_async(conn)
            .await
            .map_err(backend)?;
        let count = if unsharded > 0 { 1 } else { shards.count() };
        let _: bool = conn.hset_nx(&meta, "n", count).await.map_err(backend)?;
        recorded = conn.hget(&meta, "n").await.map_err(backend)?;
    }
    match recorded {
        Some(count) if count == shards.count() => Ok(()),
        Some(count) => Err(StoreError::backend(format!(
            "the Redis keys under prefix `{}` are in {count} shard(s), and this store was set \
             to {}: give every instance `shards({count})`",
            keys.prefix(),
            shards.count()
        ))),
        None => Err(StoreError::backend("the shard count vanished from Redis")),
    }
}

/// Brings the keys of `keys`' prefix to [`LAYOUT`]. On a cluster only the
/// layout is checked: layout 1 never ran on one.
async fn to_layout(conn: &Conn, keys: &Keys) -> Result<(), StoreError> {
    let mut conn = conn.clone();
    let cluster = conn.is_cluster();
    let meta = keys.meta();
    loop {
        let layout: Option<u32> = conn.hget(&meta, "v").await.map_err(backend)?;
        match layout {
            Some(LAYOUT) => return Ok(()),
            Some(newer) => {
                return Err(StoreError::backend(format!(
                    "the Redis keys under prefix `{}` use layout {newer}, written by a newer \
                     mcp-tasks; this version reads layout {LAYOUT}",
                    keys.prefix()
                )));
            }
            None => {}
        }
        if cluster || !has_v1_keys(&mut conn, keys.prefix()).await? {
            let _: () = conn.hset(&meta, "v", LAYOUT).await.map_err(backend)?;
            return Ok(());
        }
        let lock = keys.migrating();
        let taken: bool = redis::cmd("SET")
            .arg(&lock)
            .arg("1")
            .arg("NX")
            .arg("PX")
            .arg(LOCK_TTL.as_millis() as u64)
            .query_async::<Option<String>>(&mut conn)
            .await
            .map_err(backend)?
            .is_some();
        if !taken {
            // Another instance migrates: wait for its result, or for its lock
            // to lapse.
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let moved = migrate(&mut conn, keys).await;
        let _: Result<(), _> = conn.del(&lock).await;
        moved?;
        let _: () = conn.hset(&meta, "v", LAYOUT).await.map_err(backend)?;
        return Ok(());
    }
}

/// Whether layout-1 keys of `prefix` exist: every layout-1 deployment that
/// holds a task or a registered instance has one of these.
async fn has_v1_keys(conn: &mut Conn, prefix: &str) -> Result<bool, StoreError> {
    let found: u32 = redis::cmd("EXISTS")
        .arg(format!("{prefix}:all"))
        .arg(format!("{prefix}:instances"))
        .arg(format!("{prefix}:unowned"))
        .query_async(conn)
        .await
        .map_err(backend)?;
    Ok(found > 0)
}

/// The renames, under the lock.
async fn migrate(conn: &mut Conn, keys: &Keys) -> Result<(), StoreError> {
    let prefix = keys.prefix();
    let instances: Vec<String> = conn
        .smembers(format!("{prefix}:instances"))
        .await
        .map_err(backend)?;
    for iid in &instances {
        let alive: bool = conn
            .exists(format!("{prefix}:instance:{{{iid}}}"))
            .await
            .map_err(backend)?;
        if alive {
            return Err(StoreError::backend(format!(
                "an instance of the previous mcp-tasks version ({iid}) still holds its lease \
                 under prefix `{prefix}`: stop every instance of that version, then start \
                 this one (its keys move to the new layout then)"
            )));
        }
    }
    let mut pairs = Vec::new();
    for name in ["all", "instances", "unowned", "live:unowned", "live:all"] {
        pairs.push((
            format!("{prefix}:{name}"),
            format!("{}:{name}", keys.base()),
        ));
    }
    for iid in &instances {
        pairs.push((format!("{prefix}:driving:{{{iid}}}"), keys.driving(iid)));
    }
    rename(conn, keys, &mut pairs, true).await?;
    // The tasks, their rounds, and the indexes of their owners.
    let pattern = format!("{}:task:{{*}}", glob_escape(prefix));
    let mut owners = BTreeSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(BATCH)
            .query_async(conn)
            .await
            .map_err(backend)?;
        for old in found {
            let Some(id) = v1_task_id(prefix, &old).map(str::to_owned) else {
                continue;
            };
            let owner: Option<String> = conn.hget(&old, "w").await.map_err(backend)?;
            if let Some(owner) = owner {
                owners.insert(owner);
            }
            pairs.push((old, format!("{}:task:{id}", keys.base())));
            pairs.push((
                format!("{prefix}:round:{{{id}}}"),
                format!("{}:round:{id}", keys.base()),
            ));
        }
        rename(conn, keys, &mut pairs, false).await?;
        if next == 0 {
            break;
        }
        cursor = next;
    }
    for owner in owners {
        for name in ["owned", "live:owned"] {
            pairs.push((
                format!("{prefix}:{name}:{owner}"),
                format!("{}:{name}:{owner}", keys.base()),
            ));
        }
        rename(conn, keys, &mut pairs, false).await?;
    }
    rename(conn, keys, &mut pairs, true).await
}

/// Renames the pending pairs once there are a batch of them (or `all`), and
/// keeps the lock alive.
async fn rename(
    conn: &mut Conn,
    keys: &Keys,
    pairs: &mut Vec<(String, String)>,
    all: bool,
) -> Result<(), StoreError> {
    if pairs.is_empty() || (!all && pairs.len() < BATCH) {
        return Ok(());
    }
    let script = redis::Script::new(RENAME);
    let mut script = script.prepare_invoke();
    for (old, new) in pairs.drain(..) {
        script.key(old).key(new);
    }
    let _moved: u64 = script.invoke_async(conn).await.map_err(backend)?;
    let _: bool = conn
        .pexpire(keys.migrating(), LOCK_TTL.as_millis() as i64)
        .await
        .map_err(backend)?;
    Ok(())
}

/// The id of a layout-1 task key, `<prefix>:task:{<32 hex digits>}`, or
/// `None` for a key that only matches the pattern (another prefix's).
fn v1_task_id<'k>(prefix: &str, key: &'k str) -> Option<&'k str> {
    let id = key
        .strip_prefix(prefix)?
        .strip_prefix(":task:{")?
        .strip_suffix('}')?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// `text` with the glob characters of `SCAN MATCH` escaped.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_layout_one_task_key_of_this_prefix_gives_an_id() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(v1_task_id("p", &format!("p:task:{{{id}}}")), Some(id));
        assert_eq!(v1_task_id("p", &format!("p:x:task:{{{id}}}")), None);
        assert_eq!(v1_task_id("p", "p:task:{0123}"), None);
        assert_eq!(v1_task_id("p", &format!("q:task:{{{id}}}")), None);
        assert_eq!(v1_task_id("p", &format!("p:task:{{{id}}}:x}}")), None);
    }

    #[test]
    fn glob_characters_of_a_prefix_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
        assert_eq!(glob_escape("mcp-tasks"), "mcp-tasks");
    }
}
