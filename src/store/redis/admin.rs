//! The operator's methods of [`RedisTaskStore`]: every owner's tasks, from
//! the index of every task (`<prefix>:all`), and the owner-less cancel and
//! delete.

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

impl RedisTaskStore {
    /// [`TaskStore::admin_list`](crate::TaskStore::admin_list): a page of
    /// the index of every task, then the page's snapshots with their owners.
    pub(super) async fn admin_page(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<AdminPage, StoreError> {
        let after = ListCursor::param(cursor)?;
        let page = self
            .page_ids(self.inner.keys.all(), ANY_OWNER, after, limit)
            .await?;
        let mut tasks = Vec::with_capacity(page.ids.len());
        for (id, items) in self.snapshot_items(ANY_OWNER, &page.ids).await? {
            let mut items = items.into_iter();
            let owner = owner(&mut items)?;
            let snapshot = reply::snapshot(id, items)?;
            tasks.push(AdminTask { owner, snapshot });
        }
        Ok(AdminPage {
            tasks,
            next_cursor: page.next.map(|cursor| cursor.to_string()),
        })
    }

    /// [`TaskStore::admin_counts`](crate::TaskStore::admin_counts): the
    /// index of every task a page of ids at a time, each page's owners and
    /// statuses in one more script call.
    pub(super) async fn admin_tally(&self) -> Result<TaskCounts, StoreError> {
        let keys: &Keys = &self.inner.keys;
        let mut counts = TaskCounts::default();
        let mut after = None;
        loop {
            let page = self
                .page_ids(keys.all(), ANY_OWNER, after, MAX_PAGE)
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
                None => return Ok(counts),
            }
        }
    }

    /// [`TaskStore::admin_cancel`](crate::TaskStore::admin_cancel): the
    /// owner's cancel script with any owner.
    pub(super) async fn admin_cancel_task(
        &self,
        id: TaskId,
    ) -> Result<Option<CancelOutcome>, StoreError> {
        self.cancel_as(id, ANY_OWNER).await
    }

    /// [`TaskStore::admin_delete`](crate::TaskStore::admin_delete): one
    /// script removes the task from everywhere and announces it if it was
    /// running; this instance's stop signal, if it holds one, fires here.
    pub(super) async fn admin_remove(&self, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
        let keys: &Keys = &self.inner.keys;
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
        let mut items = reply::items(reply)?.into_iter();
        let owner = owner(&mut items)?;
        let snapshot = reply::snapshot(id, items)?;
        Ok(Some(AdminTask { owner, snapshot }))
    }
}
