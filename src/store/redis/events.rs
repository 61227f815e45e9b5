//! The log of status changes and the webhook subscriptions of
//! [`RedisTaskStore`] (task events).
//!
//! | Key | Type | Holds |
//! |-----|------|-------|
//! | `{<shard>}:events:owned:<owner>` / `{<shard>}:events:unowned` | stream | the owner's status changes, in the owner's shard (so in the slot of the tasks whose scripts append to it) |
//! | `{<shard>}:events:dropped` | hash | per stream key, the id of the last entry trimmed |
//! | `{<prefix>}:hooks` | hash | subscription id → its record (JSON: owner, URL, name, arguments, secret, expiry) |
//! | `{<prefix>}:hooks:cursor` | hash | subscription id → its delivery cursor |
//! | `{<prefix>}:hooks:owner` | hash | subscription id → its owner (`1:<owner>` or `0`), for the per-owner cap |
//! | `{<prefix>}:hooks:expiry` | sorted set | subscription id by expiry, ms (`+inf`: never) |
//! | `{<prefix>}:hooks:claim:<id>` | string | the instance that delivers the subscription, `PX` = the claim's lease |
//!
//! | Case | How |
//! |------|-----|
//! | a status change and its entry are one atomic step | the scripts that change a status append to the stream (`logged` in `lua/prelude.lua`) |
//! | the log stays bounded | an owner's stream keeps its last 10,000 entries (`LOG_KEPT` in `lua/prelude.lua`): at 10,100, the oldest 100 are trimmed (`XTRIM MINID`) and the last of them recorded |
//! | a cursor is a position in the owner's stream | `r<ms>-<seq>`, the stream entry id; an event's id is `e<ms>-<seq>.<task id>`, unique in the store (one task has one owner) |
//! | no cursor | the id of the stream's last entry (`r0-0` before the first) |
//! | a cursor behind the last entry trimmed | the entries kept after it, `truncated` |
//! | a cursor past the stream's last entry | no change, `truncated`, the cursor of the end: after a failover that lost the newest entries (Redis replicates asynchronously), a reader that had read them resumes at the new end and is told it may have missed changes, rather than failing with [`StoreError::InvalidCursor`] (which the layer would answer `-32602`) forever; a cursor of another owner, or of a store whose stream was lost, reads the same (entry ids are times) |
//! | hooks: put, remove, list, advance | one script each on the home slot (`lua/hook_*.lua`): the caps, the compare-and-set and the lapse checks are atomic |
//! | one instance delivers a subscription | `SET … NX PX`, renewed by the instance that holds it (`lua/hook_claim.lua`) |

use std::time::Duration;

use redis::Value;
use serde::{Deserialize, Serialize};

use super::scripts::{self, Keys};
use super::{RedisTaskStore, backend, reply};
use crate::store::{EventPage, Hook, QuotaScope, StatusEvent, StoreError};
use crate::task::{TaskId, Timestamp};

/// A stream entry id: milliseconds, sequence.
type EntryId = (u64, u64);

fn parse_id(text: &str) -> Option<EntryId> {
    let (ms, seq) = text.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

fn cursor((ms, seq): EntryId) -> String {
    format!("r{ms}-{seq}")
}

/// The stream of `owner`'s changes in its shard `keys`.
fn stream(keys: &Keys, owner: Option<&str>) -> String {
    match owner {
        Some(owner) => format!("{}:events:owned:{owner}", keys.base()),
        None => format!("{}:events:unowned", keys.base()),
    }
}

/// A subscription as `{<prefix>}:hooks` keeps it, its cursor apart.
#[derive(Serialize, Deserialize)]
struct Record {
    owner: Option<String>,
    url: String,
    name: String,
    arguments: String,
    secret: String,
    expires_at: Option<u64>,
}

impl Record {
    fn of(hook: &Hook) -> Self {
        Self {
            owner: hook.owner.clone(),
            url: hook.url.clone(),
            name: hook.name.clone(),
            arguments: hook.arguments.clone(),
            secret: hook.secret.clone(),
            expires_at: hook.expires_at.map(Timestamp::as_millis),
        }
    }

    fn into_hook(self, id: String, cursor: String) -> Hook {
        Hook {
            id,
            owner: self.owner,
            url: self.url,
            name: self.name,
            arguments: self.arguments,
            secret: self.secret,
            expires_at: self.expires_at.map(Timestamp::from_millis),
            cursor,
        }
    }
}

fn owner_key(owner: Option<&str>) -> String {
    owner.map_or_else(|| "0".to_owned(), |owner| format!("1:{owner}"))
}

fn now_ms() -> String {
    Timestamp::now().as_millis().to_string()
}

impl RedisTaskStore {
    /// The keys of the subscriptions, in `hook_put.lua`'s order.
    fn hook_keys(&self) -> [String; 4] {
        let base = self.inner.shards.home().base();
        [
            format!("{base}:hooks"),
            format!("{base}:hooks:cursor"),
            format!("{base}:hooks:owner"),
            format!("{base}:hooks:expiry"),
        ]
    }

    /// [`TaskStore::status_events`](crate::TaskStore::status_events).
    pub(super) async fn read_events(
        &self,
        owner: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<EventPage, StoreError> {
        let after = after
            .map(|after| {
                after
                    .strip_prefix('r')
                    .and_then(parse_id)
                    .filter(|&id| id != (u64::MAX, u64::MAX))
                    .ok_or(StoreError::InvalidCursor)
            })
            .transpose()?;
        let limit = limit.clamp(1, 1000);
        let keys = self.inner.shards.of(owner).1;
        let mut call = scripts::EVENTS.key(stream(keys, owner));
        call.key(format!("{}:events:dropped", keys.base()))
            .arg(
                after
                    .map(|(ms, seq)| format!("{ms}-{seq}"))
                    .unwrap_or_default(),
            )
            .arg(limit + 1);
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let mut items = reply::items(reply)?.into_iter();
        let mut id = || -> Result<EntryId, StoreError> {
            reply::text(items.next().unwrap_or(Value::Nil))?
                .as_deref()
                .and_then(parse_id)
                .ok_or_else(|| reply::corrupt("a stream entry id"))
        };
        let (last, dropped) = (id()?, id()?);
        let Some(after) = after else {
            return Ok(EventPage {
                events: Vec::new(),
                cursor: cursor(last),
                truncated: false,
                more: false,
            });
        };
        if after > last {
            // Past the end: the newest entries were lost (a failover to a
            // replica that never had them). Nothing to read, and the reader
            // resumes at the end, told it may have missed changes.
            return Ok(EventPage {
                events: Vec::new(),
                cursor: cursor(last),
                truncated: true,
                more: false,
            });
        }
        let entries = reply::items(items.next().unwrap_or(Value::Array(Vec::new())))?;
        let more = entries.len() > limit;
        let mut events = Vec::with_capacity(limit);
        for entry in entries.into_iter().take(limit) {
            events.push(event(entry)?);
        }
        let cursor = match (more, events.last()) {
            (true, Some(last)) => last.cursor.clone(),
            _ => cursor(last.max(after)),
        };
        Ok(EventPage {
            events,
            cursor,
            truncated: after < dropped,
            more,
        })
    }

    /// [`TaskStore::put_hook`](crate::TaskStore::put_hook).
    pub(super) async fn store_hook(
        &self,
        hook: Hook,
        per_owner: u32,
        total: u32,
    ) -> Result<Hook, StoreError> {
        let [records, cursors, owners, expiry] = self.hook_keys();
        let record = serde_json::to_string(&Record::of(&hook))
            .map_err(|e| StoreError::backend(e.to_string()))?;
        let score = hook
            .expires_at
            .map_or_else(|| "+inf".to_owned(), |at| at.as_millis().to_string());
        let mut call = scripts::HOOK_PUT.key(records);
        call.key(cursors).key(owners).key(expiry);
        call.arg(now_ms())
            .arg(&hook.id)
            .arg(record)
            .arg(owner_key(hook.owner.as_deref()))
            .arg(score)
            .arg(&hook.cursor)
            .arg(per_owner)
            .arg(total);
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let mut items = reply::items(reply)?.into_iter().map(reply::text);
        let tag = items.next().transpose()?.flatten();
        match tag.as_deref() {
            Some("new") => Ok(hook),
            Some("kept") => {
                let kept = items.next().transpose()?.flatten();
                Ok(Hook {
                    cursor: kept.ok_or_else(|| reply::corrupt("a hook without cursor"))?,
                    ..hook
                })
            }
            Some("owner") => Err(StoreError::QuotaExceeded(QuotaScope::Owner)),
            Some("total") => Err(StoreError::QuotaExceeded(QuotaScope::Total)),
            _ => Err(reply::corrupt("a put_hook reply")),
        }
    }

    /// [`TaskStore::remove_hook`](crate::TaskStore::remove_hook).
    pub(super) async fn drop_hook(
        &self,
        owner: Option<&str>,
        id: &str,
    ) -> Result<bool, StoreError> {
        let [records, cursors, owners, expiry] = self.hook_keys();
        let mut call = scripts::HOOK_REMOVE.key(records);
        call.key(cursors).key(owners).key(expiry);
        call.arg(now_ms()).arg(id).arg(owner_key(owner));
        let removed: i64 = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        Ok(removed == 1)
    }

    /// [`TaskStore::hooks`](crate::TaskStore::hooks).
    pub(super) async fn live_hooks(&self) -> Result<Vec<Hook>, StoreError> {
        let [records, cursors, owners, expiry] = self.hook_keys();
        let mut call = scripts::HOOK_LIST.key(records);
        call.key(cursors).key(owners).key(expiry).arg(now_ms());
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let items: Vec<Option<String>> = reply::items(reply)?
            .into_iter()
            .map(reply::text)
            .collect::<Result<_, _>>()?;
        let mut hooks = Vec::with_capacity(items.len() / 3);
        for triple in items.chunks(3) {
            let [Some(id), Some(record), Some(cursor)] = triple else {
                return Err(reply::corrupt("a hook listing"));
            };
            let record: Record = serde_json::from_str(record)
                .map_err(|_| reply::corrupt("a hook record that is not JSON"))?;
            hooks.push(record.into_hook(id.clone(), cursor.clone()));
        }
        Ok(hooks)
    }

    /// [`TaskStore::advance_hook`](crate::TaskStore::advance_hook).
    pub(super) async fn move_hook(
        &self,
        id: &str,
        from: &str,
        to: &str,
    ) -> Result<bool, StoreError> {
        let [_, cursors, _, _] = self.hook_keys();
        let mut call = scripts::HOOK_ADVANCE.key(cursors);
        call.arg(id).arg(from).arg(to);
        let moved: i64 = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        Ok(moved == 1)
    }

    /// [`TaskStore::claim_hook`](crate::TaskStore::claim_hook): held by
    /// this instance's id.
    pub(super) async fn claim(&self, id: &str, lease: Duration) -> Result<bool, StoreError> {
        let base = self.inner.shards.home().base();
        let mut call = scripts::HOOK_CLAIM.key(format!("{base}:hooks:claim:{id}"));
        call.arg(self.instance_id())
            .arg(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1));
        let held: i64 = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        Ok(held == 1)
    }
}

/// One `XRANGE` entry as an event: `[id, [field, value, …]]`.
fn event(entry: Value) -> Result<StatusEvent, StoreError> {
    let mut parts = reply::items(entry)?.into_iter();
    let entry_id = reply::text(parts.next().unwrap_or(Value::Nil))?
        .as_deref()
        .and_then(parse_id)
        .ok_or_else(|| reply::corrupt("a stream entry id"))?;
    let fields = reply::items(parts.next().unwrap_or(Value::Nil))?
        .into_iter()
        .map(reply::text)
        .collect::<Result<Vec<_>, _>>()?;
    let field = |name: &str| {
        fields
            .chunks(2)
            .find(|pair| pair[0].as_deref() == Some(name))
            .and_then(|pair| pair.get(1).cloned().flatten())
    };
    let task = field("i")
        .as_deref()
        .and_then(TaskId::parse)
        .ok_or_else(|| reply::corrupt("a logged change without its task"))?;
    // The snapshot as `reply::snapshot` reads it, payloads stripped to `{}`.
    let snapshot = ["s", "c", "u", "t", "p", "m"]
        .iter()
        .map(|name| field(name).map_or(Value::Nil, |v| Value::BulkString(v.into_bytes())))
        .chain([
            Value::BulkString(b"{}".to_vec()),
            Value::BulkString(b"{}".to_vec()),
        ]);
    let (ms, seq) = entry_id;
    Ok(StatusEvent {
        id: format!("e{ms}-{seq}.{task}"),
        cursor: cursor(entry_id),
        task: reply::snapshot(task, snapshot)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_keep_the_bound_these_docs_say() {
        let prelude = include_str!("lua/prelude.lua");
        assert!(prelude.contains("local LOG_KEPT = 10000\nlocal LOG_BATCH = 100\n"));
    }

    #[test]
    fn entry_ids_order_as_numbers_and_cursors_round_trip() {
        assert!(parse_id("9-5") < parse_id("10-0"));
        assert_eq!(parse_id("1712-3"), Some((1712, 3)));
        assert_eq!(cursor((1712, 3)), "r1712-3");
        for garbage in ["", "12", "-", "1-", "x-1", "1-2-3"] {
            assert_eq!(parse_id(garbage), None, "{garbage:?}");
        }
    }
}
