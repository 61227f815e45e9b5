//! [`Hub`]: which subscription watches which task, and the one reader of
//! the store's change feed that wakes them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;

use crate::config::SubscriptionLimits;
use crate::runtime::background::Background;
use crate::store::{TaskChange, TaskStore};
use crate::task::TaskId;

/// What one subscription was woken for: the ids that changed since it last
/// looked, or everything (the feed lagged).
#[derive(Default)]
pub(crate) struct Dirty {
    pub ids: HashSet<TaskId>,
    pub all: bool,
}

/// The hub's side of one subscription: what changed, and how to wake it.
#[derive(Default)]
pub(crate) struct Mailbox {
    dirty: Mutex<Dirty>,
    pub wake: Notify,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Dirty> {
        self.dirty.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mark(&self, id: TaskId) {
        self.lock().ids.insert(id);
        self.wake.notify_one();
    }

    fn mark_all(&self) {
        self.lock().all = true;
        self.wake.notify_one();
    }

    /// What changed since the last call.
    pub(crate) fn take(&self) -> Dirty {
        std::mem::take(&mut *self.lock())
    }
}

#[derive(Default)]
struct Table {
    /// Task → the subscriptions watching it.
    watchers: HashMap<TaskId, Vec<(u64, Arc<Mailbox>)>>,
    /// Subscriptions per owner, for the caps.
    owners: HashMap<Option<String>, u32>,
    total: u32,
    /// Whether the feed reader runs.
    reading: bool,
}

/// The subscriptions of one layer.
pub(crate) struct Hub {
    limits: SubscriptionLimits,
    /// Where the reader of the store's change feed runs.
    background: Arc<Background>,
    table: Arc<Mutex<Table>>,
    next: AtomicU64,
}

/// Why a subscription was refused.
pub(crate) enum Refused {
    /// The principal holds as many as it may.
    Owner,
    /// The layer holds as many as it may.
    Total,
}

/// One subscription, registered until dropped.
pub(crate) struct Watch {
    key: u64,
    ids: Vec<TaskId>,
    owner: Option<String>,
    pub mailbox: Arc<Mailbox>,
    /// Whether the store's change feed wakes this watch; without one, the
    /// subscription reads its tasks again on a timer.
    pub fed: bool,
    table: Arc<Mutex<Table>>,
    /// Keeps the store announcing this owner's changes here.
    _listening: Option<crate::store::Listening>,
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    // Plain maps, never left half-updated by a panic.
    table.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hub {
    pub(crate) fn new(limits: SubscriptionLimits, background: Arc<Background>) -> Self {
        Self {
            limits,
            background,
            table: Arc::default(),
            next: AtomicU64::new(0),
        }
    }

    pub(crate) fn limits(&self) -> SubscriptionLimits {
        self.limits
    }

    /// Registers a subscription of `owner` to `ids`, unless a cap refuses
    /// it; the first one starts the reader of `store`'s change feed.
    pub(crate) fn watch(
        &self,
        store: &Arc<dyn TaskStore>,
        owner: Option<&str>,
        ids: Vec<TaskId>,
    ) -> Result<Watch, Refused> {
        let mut table = lock(&self.table);
        let owner = owner.map(str::to_owned);
        let held = table.owners.get(&owner).copied().unwrap_or(0);
        if held >= self.limits.per_owner {
            return Err(Refused::Owner);
        }
        if table.total >= self.limits.total {
            return Err(Refused::Total);
        }
        *table.owners.entry(owner.clone()).or_default() += 1;
        table.total += 1;
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let mailbox = Arc::new(Mailbox::default());
        for &id in &ids {
            table
                .watchers
                .entry(id)
                .or_default()
                .push((key, mailbox.clone()));
        }
        if !table.reading
            && let Some(feed) = store.changes()
        {
            table.reading = true;
            self.background
                .spawn_detached(read(feed, Arc::downgrade(&self.table)));
        }
        let listening = store.listen(owner.as_deref());
        Ok(Watch {
            key,
            ids,
            owner,
            fed: table.reading,
            mailbox,
            table: self.table.clone(),
            _listening: listening,
        })
    }
}

/// Wakes the subscriptions watching each id the feed gives, until the hub
/// or the feed is gone.
async fn read(
    mut feed: tokio::sync::broadcast::Receiver<TaskChange>,
    table: std::sync::Weak<Mutex<Table>>,
) {
    loop {
        let next = feed.recv().await;
        let Some(table) = table.upgrade() else { return };
        let mut table = lock(&table);
        match next {
            Ok(TaskChange::Changed(id)) => {
                for (_, mailbox) in table.watchers.get(&id).into_iter().flatten() {
                    mailbox.mark(id);
                }
            }
            Ok(TaskChange::Missed) | Err(RecvError::Lagged(_)) => {
                for (_, mailbox) in table.watchers.values().flatten() {
                    mailbox.mark_all();
                }
            }
            Err(RecvError::Closed) => {
                table.reading = false;
                return;
            }
        }
    }
}

impl Watch {
    /// Stops watching `id` (the task ended or is gone).
    pub(crate) fn forget(&mut self, id: TaskId) {
        self.ids.retain(|&watched| watched != id);
        unwatch(&mut lock(&self.table), id, self.key);
    }
}

fn unwatch(table: &mut Table, id: TaskId, key: u64) {
    if let Some(list) = table.watchers.get_mut(&id) {
        list.retain(|(k, _)| *k != key);
        if list.is_empty() {
            table.watchers.remove(&id);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut table = lock(&self.table);
        for &id in &self.ids {
            unwatch(&mut table, id, self.key);
        }
        if let Some(n) = table.owners.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                table.owners.remove(&self.owner);
            }
        }
        table.total -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_reader_wakes_the_watchers_of_a_change_and_everyone_after_a_miss() {
        let table = Arc::new(Mutex::new(Table::default()));
        let (watched, other) = (TaskId::from_u128(1), TaskId::from_u128(2));
        let mailbox = Arc::new(Mailbox::default());
        lock(&table)
            .watchers
            .insert(watched, vec![(0, mailbox.clone())]);
        let (feed, rx) = tokio::sync::broadcast::channel(8);
        let reader = tokio::spawn(read(rx, Arc::downgrade(&table)));

        feed.send(TaskChange::Changed(other)).unwrap();
        feed.send(TaskChange::Changed(watched)).unwrap();
        mailbox.wake.notified().await;
        let dirty = mailbox.take();
        assert_eq!(dirty.ids, HashSet::from([watched]), "only the watched id");
        assert!(!dirty.all);

        feed.send(TaskChange::Missed).unwrap();
        mailbox.wake.notified().await;
        assert!(mailbox.take().all, "a miss wakes every watch to read all");

        drop(feed);
        reader.await.unwrap();
        assert!(!lock(&table).reading, "a closed feed can be started again");
    }
}
