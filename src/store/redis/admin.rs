//! The operator's methods of [`RedisTaskStore`]: every owner's tasks, from
//! each shard's index of every task (`<tag>:all`), merged in creation
//! order, and the owner-less read, cancel and delete.

use futures_util::future::try_join_all;
use redis::Value;

use super::scripts::{ANY_OWNER, DELETE, Keys, OWNER_STATUS};
use super::{RedisTaskStore, backend, reply};
use crate::store::cursor::{ListCursor, MAX_PAGE};
use crate::store::{AdminPage, AdminTask, CancelOutcome, StoreError, TaskCounts};
use crate::task::TaskId;

/// Splits the owner flag and owner off the front of an operator's reply.
fn owner(items: &mut impl Iterator<Item = Value>) -> Result<Option<String>, StoreError> {
    let flag = reply::required(items.next(), "owner flag")?;
    let name = reply::text(items.next().unwrap_or(Value::Nil))?.unwrap_or_default();
    Ok((flag == "1").then_some(name))
}

/// Reads an operator's reply (`admin_head` in `lua/prelude.lua`, then the
/// snapshot) as the task `id`.
fn admin_task(id: TaskId, items: Vec<Value>) -> Result<AdminTask, StoreError> {
    let mut items = items.into_iter();
    let owner = owner(&mut items)?;
    let tool = reply::text(items.next().unwrap_or(Value::Nil))?;
    let attempt = match reply::text(items.next().unwrap_or(Value::Nil))? {
        Some(run) => run.parse().map_err(|_| reply::corrupt("an attempt"))?,
        None => 1,
    };
    let snapshot = reply::snapshot(id, items)?;
    Ok(AdminTask {
        owner,
        tool,
        attempt,
        snapshot,
    })
}

impl RedisTaskStore {
    /// [`TaskStore::admin_list`](crate::TaskStore::admin_list): a page of
    /// the index of every task, then the page's snapshots with their owners.
    pub(super) async fn admin_page(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<AdminPage, StoreError> {
        let after = ListCursor::param(cursor)?;
        let limit = limit.clamp(1, MAX_PAGE);
        let pages = self.inner.shards.all().map(|(shard, keys)| async move {
            let page = self
                .page_ids(shard, keys.all(), ANY_OWNER, after, limit)
                .await?;
            let mut tasks = Vec::with_capacity(page.ids.len());
            for (id, items) in self.snapshot_items(shard, ANY_OWNER, &page.ids).await? {
                tasks.push(admin_task(id, items)?);
            }
            Ok::<_, StoreError>((tasks, page.next))
        });
        let pages = try_join_all(pages).await?;
        Ok(merge(pages, limit))
    }

    /// [`TaskStore::admin_counts`](crate::TaskStore::admin_counts): the
    /// index of every task a page of ids at a time, each page's owners and
    /// statuses in one more script call.
    pub(super) async fn admin_tally(&self) -> Result<TaskCounts, StoreError> {
        let mut counts = TaskCounts::default();
        for (shard, keys) in self.inner.shards.all() {
            self.tally_shard(shard, keys, &mut counts).await?;
        }
        Ok(counts)
    }

    /// Adds the tasks of one shard to `counts`.
    async fn tally_shard(
        &self,
        shard: usize,
        keys: &Keys,
        counts: &mut TaskCounts,
    ) -> Result<(), StoreError> {
        let mut after = None;
        loop {
            let page = self
                .page_ids(shard, keys.all(), ANY_OWNER, after, MAX_PAGE)
                .await?;
            if !page.ids.is_empty() {
                let mut call = OWNER_STATUS.prepare_invoke();
                for &id in &page.ids {
                    call.key(keys.task(id));
                }
                let reply: Value = call
                    .invoke_async(&mut self.inner.conn.clone())
                    .await
                    .map_err(backend)?;
                for row in reply::items(reply)? {
                    if reply::is_absent(&row) {
                        continue;
                    }
                    let mut row = reply::items(row)?.into_iter();
                    let owner = owner(&mut row)?;
                    let status = reply::status(&reply::required(row.next(), "status")?)?;
                    counts.add(owner.as_deref(), status);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// [`TaskStore::admin_cancel`](crate::TaskStore::admin_cancel): the
    /// owner's cancel script with any owner.
    pub(super) async fn admin_cancel_task(
        &self,
        id: TaskId,
    ) -> Result<Option<CancelOutcome>, StoreError> {
        let shard = self.locate(id).await?;
        self.cancel_as(id, shard, ANY_OWNER).await
    }

    /// [`TaskStore::admin_delete`](crate::TaskStore::admin_delete): one
    /// script removes the task from everywhere and announces it if it was
    /// running; this instance's stop signal, if it holds one, fires here.
    pub(super) async fn admin_remove(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        let keys: &Keys = self.inner.shards.get(self.locate(id).await?);
        let mut call = DELETE.key(keys.task(id));
        call.key(keys.round(id))
            .key(keys.all())
            .arg(id.to_string())
            .arg(keys.base())
            .arg(keys.channel())
            .arg(keys.driving_head());
        let reply: Value = call
            .invoke_async(&mut self.inner.conn.clone())
            .await
            .map_err(backend)?;
        if reply::is_absent(&reply) {
            return Ok(None);
        }
        self.inner.stops.fire(id);
        if self.inner.shards.count() > 1 {
            // Its place under the total cap is free too.
            self.unreserve(id).await;
        }
        admin_task(id, reply::items(reply)?).map(Some)
    }

    /// [`TaskStore::admin_get`](crate::TaskStore::admin_get): the task's
    /// shard found, then its snapshot with any owner, as the listing reads
    /// it (`snapshots.lua`).
    pub(super) async fn admin_read(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        let shard = self.locate(id).await?;
        let mut found = self.snapshot_items(shard, ANY_OWNER, &[id]).await?;
        match found.pop() {
            Some((id, items)) => admin_task(id, items).map(Some),
            None => Ok(None),
        }
    }
}

/// The first `limit` tasks of the shards' pages, in creation order, and the
/// cursor after them. A shard whose page stopped early (`next` set) has
/// entries past its last one that nobody has seen, so nothing past the
/// earliest such stop is returned: the next page starts there.
fn merge(pages: Vec<(Vec<AdminTask>, Option<ListCursor>)>, limit: usize) -> AdminPage {
    let stop = pages
        .iter()
        .filter_map(|(_, next)| next.map(ListCursor::key))
        .min();
    let mut tasks: Vec<AdminTask> = pages.into_iter().flat_map(|(tasks, _)| tasks).collect();
    let key =
        |task: &AdminTask| ListCursor::after(task.snapshot.created_at, task.snapshot.id).key();
    tasks.sort_by_key(key);
    tasks.retain(|task| stop.is_none_or(|stop| key(task) <= stop));
    let full = tasks.len() > limit;
    tasks.truncate(limit);
    let next = match tasks.last() {
        Some(last) if full || stop.is_some() => Some(ListCursor::after(
            last.snapshot.created_at,
            last.snapshot.id,
        )),
        None => stop.map(|(created, id)| {
            ListCursor::after(
                crate::task::Timestamp::from_millis(created),
                TaskId::from_u128(id),
            )
        }),
        _ => None,
    };
    AdminPage {
        tasks,
        next_cursor: next.map(|cursor| cursor.to_string()),
    }
}
