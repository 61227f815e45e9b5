//! One owner's live tasks, a page at a time, from the owner index.

use super::scripts::{Keys, LIST, SNAPSHOTS, owner_args};
use super::{RedisTaskStore, backend, reply};
use crate::store::cursor::{ListCursor, MAX_PAGE};
use crate::store::{StoreError, TaskList};
use crate::task::{TaskId, TaskSnapshot, Timestamp};

/// A page of one owner's live task ids, oldest first.
#[derive(Clone, Debug, Default)]
pub struct TaskPage {
    /// Live (unexpired) task ids of the owner, in creation order.
    pub ids: Vec<TaskId>,
    /// Where the next page starts; `None` when the index is exhausted.
    pub next: Option<ListCursor>,
}

/// The most index entries one page may inspect beyond `limit`.
const SLACK: usize = 64;

impl RedisTaskStore {
    /// Lists the live tasks of `owner` (exactly that owner: `None` lists
    /// unowned tasks only), `limit` at most (clamped to 1..=1000), starting
    /// after `after`.
    ///
    /// One script call over the owner's sorted set: O(log n + k) for k
    /// inspected entries. Entries whose task expired are skipped and removed
    /// from the index on the way; at most `4 × limit + 64` entries are
    /// inspected per call, so a page may hold fewer than `limit` ids while
    /// `next` is still set. Another owner's task is never listed: each entry
    /// is checked against the task's own owner field too.
    pub async fn list_owned(
        &self,
        owner: Option<&str>,
        after: Option<ListCursor>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let (shard, keys) = self.inner.shards.of(owner);
        self.page_ids(shard, keys.index(owner), owner_args(owner), after, limit)
            .await
    }

    /// One page of the ids in `index` that `owner` (the script's owner
    /// arguments; `ANY_OWNER` for every task) may see, after `after`.
    pub(super) async fn page_ids(
        &self,
        shard: usize,
        index: String,
        [has_owner, owner_text]: [&str; 2],
        after: Option<ListCursor>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let keys: &Keys = self.inner.shards.get(shard);
        let (score, id) = match after {
            Some(cursor) => (
                cursor.created.as_millis().to_string(),
                cursor.id.to_string(),
            ),
            None => (String::new(), String::new()),
        };
        let mut call = LIST.key(index);
        call.arg(keys.task_head())
            .arg(has_owner)
            .arg(owner_text)
            .arg(score)
            .arg(id)
            .arg(limit)
            .arg(limit * 4 + SLACK);
        let mut conn = self.inner.conn.clone();
        let reply: redis::Value = call.invoke_async(&mut conn).await.map_err(backend)?;
        let mut items = reply::items(reply)?.into_iter();
        let more = reply::required(items.next(), "list flag")? == "1";
        let last_score = reply::text(items.next().unwrap_or(redis::Value::Nil))?;
        let last_id = reply::text(items.next().unwrap_or(redis::Value::Nil))?;
        let ids = items
            .map(|item| {
                reply::text(item)?
                    .as_deref()
                    .and_then(TaskId::parse)
                    .ok_or_else(|| reply::corrupt("an index entry"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let next = match (more, last_score, last_id) {
            (true, Some(score), Some(id)) => Some(ListCursor::after(
                Timestamp::from_millis(
                    score
                        .parse()
                        .map_err(|_| reply::corrupt("an index score"))?,
                ),
                TaskId::parse(&id).ok_or_else(|| reply::corrupt("an index entry"))?,
            )),
            _ => None,
        };
        Ok(TaskPage { ids, next })
    }

    /// [`TaskStore::list`](crate::store::TaskStore::list): one page of
    /// [`list_owned`](Self::list_owned), then every listed task's snapshot
    /// in one more script call. A task that ended its life (or changed
    /// hands) between the two calls is left out.
    pub(super) async fn list_page(
        &self,
        owner: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskList, StoreError> {
        let after = ListCursor::param(cursor)?;
        let page = self.list_owned(owner, after, limit).await?;
        let shard = self.inner.shards.index_of(owner);
        let tasks = self.snapshots(shard, owner, &page.ids).await?;
        Ok(TaskList {
            tasks,
            next_cursor: page.next.map(|cursor| cursor.to_string()),
        })
    }

    /// The snapshots of the tasks `owner` may still see among `ids`, in order.
    async fn snapshots(
        &self,
        shard: usize,
        owner: Option<&str>,
        ids: &[TaskId],
    ) -> Result<Vec<TaskSnapshot>, StoreError> {
        let mut tasks = Vec::with_capacity(ids.len());
        for (id, items) in self.snapshot_items(shard, owner_args(owner), ids).await? {
            tasks.push(reply::snapshot(id, items)?);
        }
        Ok(tasks)
    }

    /// The `SNAPSHOTS` script's replies for the tasks the owner arguments
    /// may still see among `ids`, in order (with `ANY_OWNER`, each reply
    /// starts with the task's owner flag and owner).
    pub(super) async fn snapshot_items(
        &self,
        shard: usize,
        [has_owner, owner_text]: [&str; 2],
        ids: &[TaskId],
    ) -> Result<Vec<(TaskId, Vec<redis::Value>)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: &Keys = self.inner.shards.get(shard);
        let mut call = SNAPSHOTS.arg(has_owner);
        call.arg(owner_text);
        for &id in ids {
            call.key(keys.task(id)).key(keys.round(id));
        }
        let mut conn = self.inner.conn.clone();
        let reply: redis::Value = call.invoke_async(&mut conn).await.map_err(backend)?;
        let items = reply::items(reply)?;
        if items.len() != ids.len() {
            return Err(reply::corrupt("a snapshot list of the wrong length"));
        }
        let mut found = Vec::with_capacity(ids.len());
        for (&id, item) in ids.iter().zip(items) {
            if !reply::is_absent(&item) {
                found.push((id, reply::items(item)?));
            }
        }
        Ok(found)
    }
}
