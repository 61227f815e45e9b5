//! [`MemoryTaskStore`]: tasks in this process, the default store.
//!
//! Tasks sit in a fixed number of hash-map shards keyed by the 128-bit id, so
//! every operation is O(1) in the number of tasks and callers on different
//! shards never wait for each other. Expiry is enforced twice: every read
//! checks the deadline (so an expired task is invisible at once), and a reaper
//! task over per-TTL deadline queues (`expiry.rs`, O(1) per task)
//! removes it and fires its stop signal without anyone calling a sweep.
//! Each owner's tasks are also kept in creation order (`owners.rs`), so that
//! listing one owner's tasks costs O(log n + page); the reaper keeps that
//! index in step, and a listing drops the keys of expired tasks it steps over.
//! Tasks created under a [`Quota`] are counted by deadline (`live.rs`), so that
//! `create` checks the caps and inserts in one step, exactly at any moment.
//!
//! | File         | Holds                                                        |
//! |--------------|--------------------------------------------------------------|
//! | `mod.rs`     | the store, its task entries and the [`TaskStore`] methods    |
//! | `expiry.rs`  | the deadline queues and the reaper that empties them         |
//! | `owners.rs`  | the per-owner index that `list` pages through                |
//! | `live.rs`    | the live-task counts that [`Quota`]s are checked against     |
//! | `admin.rs`   | the operator's methods, over every owner's tasks             |

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::cursor::{ListCursor, MAX_PAGE};
use super::{
    AdminPage, AdminTask, CHANGES, CancelOutcome, CreatedTask, EventPage, Hook, InputProgress,
    InputRound, NewTask, Quota, StoreError, StoreFuture, TaskChange, TaskCounts, TaskList,
    TaskStore,
};
use crate::task::{TaskId, TaskSnapshot, TaskStatus, Timestamp};
use crate::wire::jsonrpc::error_message;
use entry::{Entry, Round, State};
use expiry::Expiry;
use live::Live;
use owners::{Found, Owners};

const SHARDS: usize = 16;

/// The in-memory [`TaskStore`].
///
/// Cloning is cheap and every clone shares the same tasks. Use it when one
/// process serves all requests for a task; behind a load balancer, use a
/// shared store instead. It must be used from within a tokio runtime: the
/// first task with a TTL starts its reaper there (and again on a later
/// runtime if that one has gone away).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use mcp_tasks::{MemoryTaskStore, NewTask, Quota, TaskId, TaskStatus, TaskStore, Timestamp};
///
/// let store = MemoryTaskStore::new();
/// let id = TaskId::generate().unwrap();
/// store
///     .create(NewTask {
///         id,
///         owner: Some("alice".into()),
///         created_at: Timestamp::now(),
///         ttl: Some(Duration::from_secs(60)),
///         poll_interval: None,
///         status_message: None,
///         quota: Quota::default(),
///         tool: Some("slow_compute".into()),
///         rerun: None,
///     })
///     .await
///     .unwrap();
///
/// let seen = store.get(id, Some("alice")).await.unwrap().unwrap();
/// assert_eq!(seen.status(), TaskStatus::Working);
/// // Another principal, or none, sees nothing at all.
/// assert!(store.get(id, Some("bob")).await.unwrap().is_none());
/// assert!(store.get(id, None).await.unwrap().is_none());
/// # }
/// ```
#[derive(Clone, Default)]
pub struct MemoryTaskStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("shards", &self.inner.shards.len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    shards: Box<[Mutex<HashMap<u128, Entry>>]>,
    expiry: Expiry,
    /// Each owner's task keys in creation order, for `list`.
    owners: Owners,
    /// The live tasks created under a quota, for the next quota's check.
    live: Live,
    /// The reaper task; started again if its runtime went away.
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The ids of tasks that changed ([`TaskStore::changes`]).
    changes: broadcast::Sender<TaskChange>,
    /// The status changes ([`TaskStore::status_events`]).
    log: log::Log,
    /// The webhook subscriptions.
    hooks: hooks::Hooks,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            expiry: Expiry::default(),
            owners: Owners::default(),
            live: Live::default(),
            reaper: Mutex::new(None),
            changes: broadcast::channel(CHANGES).0,
            log: log::Log::default(),
            hooks: hooks::Hooks::default(),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Lets a sleeping reaper notice that the store is gone.
        self.expiry.wake.notify_one();
    }
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tasks the store holds, expired ones not yet reaped included.
    pub fn len(&self) -> usize {
        self.inner
            .shards
            .iter()
            .map(|shard| shard.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    /// The ids of every task the store holds (O(n); for diagnostics and tests).
    pub fn ids(&self) -> Vec<TaskId> {
        let mut ids = Vec::new();
        for shard in self.inner.shards.iter() {
            let map = shard.lock().unwrap_or_else(|p| p.into_inner());
            ids.extend(map.keys().map(|&id| TaskId::from_u128(id)));
        }
        ids
    }

    /// Whether the store holds no task at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, id: u128) -> Result<MutexGuard<'_, HashMap<u128, Entry>>, StoreError> {
        // Ids are uniformly random, so their low bits spread evenly.
        self.inner.shards[(id as usize) % SHARDS]
            .lock()
            .map_err(|_| StoreError::backend("memory task store lock poisoned"))
    }

    /// Runs `f` on a task the layer created, whoever owns it, unless
    /// expired; a change that `f` made is announced.
    fn with_live<T>(
        &self,
        id: TaskId,
        f: impl FnOnce(&mut Entry, Timestamp) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let now = Timestamp::now();
        let mut shard = self.shard(id.as_u128())?;
        let done = match shard.get_mut(&id.as_u128()) {
            Some(entry) if !entry.expired(now) => {
                let before = entry.state.status();
                let done = f(entry, now);
                self.logged(entry, id.as_u128(), before);
                done
            }
            _ => Err(StoreError::NotFound),
        };
        drop(shard);
        if done.is_ok() {
            self.changed(id);
        }
        done
    }

    /// Announces a change of `id` to the receivers of `changes`, if any.
    fn changed(&self, id: TaskId) {
        // No receiver is not an error: nobody listens.
        let _ = self.inner.changes.send(TaskChange::Changed(id));
    }

    /// Runs `f` on a task as `owner` sees it; `None` when it does not.
    fn with_owned<T>(
        &self,
        id: TaskId,
        owner: Option<&str>,
        f: impl FnOnce(&mut Entry, Timestamp) -> T,
    ) -> Result<Option<T>, StoreError> {
        let now = Timestamp::now();
        let mut shard = self.shard(id.as_u128())?;
        Ok(match shard.get_mut(&id.as_u128()) {
            Some(entry) if entry.visible_to(owner, now) => {
                let before = entry.state.status();
                let done = f(entry, now);
                self.logged(entry, id.as_u128(), before);
                Some(done)
            }
            _ => None,
        })
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(async move {
            let id = task.id.as_u128();
            let stop = CancellationToken::new();
            let entry = Entry {
                owner: task.owner.map(String::into_boxed_str),
                tool: task.tool.map(String::into_boxed_str),
                created_at: task.created_at,
                updated_at: task.created_at,
                ttl: task.ttl,
                poll_interval: task.poll_interval,
                message: task.status_message.map(String::into_boxed_str),
                state: State::Working,
                stop: stop.clone(),
                counted: task.quota != Quota::default(),
            };
            let snapshot = entry.snapshot(id);
            {
                let mut shard = self.shard(id)?;
                if shard.contains_key(&id) {
                    return Err(StoreError::backend("task id collision"));
                }
                // Counted and indexed in the same step (both locks innermost).
                if entry.counted {
                    let (owner, key) = (entry.owner.as_deref(), entry.live_key(id));
                    self.inner
                        .live
                        .admit(owner, key, task.quota, Timestamp::now())?;
                }
                let key = (task.created_at.as_millis(), id);
                self.inner.owners.insert(entry.owner.as_deref(), key);
                let log = &self.inner.log;
                log.record(entry.owner.as_deref(), || snapshot.clone());
                shard.insert(id, entry);
            }
            if let Some(ttl) = task.ttl {
                let deadline = task.created_at.saturating_add(ttl);
                self.schedule_expiry(id, ttl, deadline);
            }
            self.changed(snapshot.id);
            Ok(CreatedTask { snapshot, stop })
        })
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        Box::pin(async move { self.with_owned(id, owner, |entry, _| entry.snapshot(id.as_u128())) })
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.with_live(id, |entry, now| {
                let from = entry.state.status();
                if from.is_terminal() {
                    return Err(StoreError::InvalidTransition { from, to: from });
                }
                entry.message = Some(message.into_boxed_str());
                entry.updated_at = now;
                Ok(())
            })
        })
    }

    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.with_live(id, |entry, now| entry.finish(State::Completed(result), now))
        })
    }

    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let message = error_message(&error);
            self.with_live(id, |entry, now| {
                entry.finish(State::Failed(error), now)?;
                if let Some(message) = message {
                    entry.message = Some(message.into_boxed_str());
                }
                Ok(())
            })
        })
    }

    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        Box::pin(async move {
            let outcome =
                self.with_owned(id, owner, |entry, now| entry.cancel(id.as_u128(), now))?;
            if let Some(CancelOutcome::Cancelled(_)) = &outcome {
                self.changed(id);
            }
            Ok(outcome)
        })
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.with_live(id, |entry, now| {
                let from = entry.state.status();
                if from != TaskStatus::Working {
                    return Err(StoreError::InvalidTransition {
                        from,
                        to: TaskStatus::InputRequired,
                    });
                }
                entry.state = State::Input(Box::new(Round {
                    outstanding: round.requests,
                    answers: Vec::new(),
                    resume: round.resume,
                }));
                entry.updated_at = now;
                Ok(())
            })
        })
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        Box::pin(async move {
            let progress = self.with_owned(id, owner, |entry, now| {
                let State::Input(round) = &mut entry.state else {
                    return InputProgress::NotWaiting;
                };
                for (key, answer) in answers {
                    if let Some(at) = round.outstanding.iter().position(|(k, _)| *k == key) {
                        round.outstanding.remove(at);
                        round.answers.push((key, answer));
                    }
                }
                if !round.outstanding.is_empty() {
                    entry.updated_at = now;
                    return InputProgress::Pending;
                }
                match std::mem::replace(&mut entry.state, State::Working) {
                    State::Input(round) => {
                        entry.updated_at = now;
                        InputProgress::RoundComplete {
                            answers: round.answers,
                            resume: round.resume,
                            stop: entry.stop.clone(),
                        }
                    }
                    other => {
                        entry.state = other;
                        InputProgress::NotWaiting
                    }
                }
            })?;
            if let Some(InputProgress::RoundComplete { .. }) = &progress {
                self.changed(id);
            }
            Ok(progress)
        })
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        Box::pin(async move {
            let after = ListCursor::param(cursor)?;
            let now = Timestamp::now();
            let limit = limit.clamp(1, MAX_PAGE);
            let read = |(_, id): (u64, u128)| {
                let shard = self.shard(id)?;
                Ok(match shard.get(&id) {
                    Some(entry) if entry.visible_to(owner, now) => Found::Live(entry.snapshot(id)),
                    // Gone, expired (the reaper may lag), or not this owner's.
                    _ => Found::Gone,
                })
            };
            let (tasks, last) =
                self.inner
                    .owners
                    .page(owner, after.map(ListCursor::key), limit, read)?;
            let next_cursor = last.map(|(created, id)| {
                ListCursor::after(Timestamp::from_millis(created), TaskId::from_u128(id))
                    .to_string()
            });
            Ok(TaskList { tasks, next_cursor })
        })
    }

    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        Box::pin(async move { self.admin_page(cursor, limit) })
    }

    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        Box::pin(async move { self.admin_tally() })
    }

    fn admin_cancel(&self, id: TaskId) -> StoreFuture<'_, Option<CancelOutcome>> {
        Box::pin(async move { self.admin_cancel_task(id) })
    }

    fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(async move { self.admin_read(id) })
    }

    fn admin_delete(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(async move { self.admin_remove(id) })
    }

    fn changes(&self) -> Option<broadcast::Receiver<TaskChange>> {
        Some(self.inner.changes.subscribe())
    }

    fn status_events<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventPage> {
        Box::pin(async move { self.inner.log.read(owner, after, limit) })
    }

    fn put_hook(&self, hook: Hook, per_owner: u32, total: u32) -> StoreFuture<'_, Hook> {
        Box::pin(async move { self.inner.hooks.put(hook, per_owner, total) })
    }

    fn remove_hook<'a>(&'a self, owner: Option<&'a str>, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move { Ok(self.inner.hooks.remove(owner, id)) })
    }

    fn hooks(&self) -> StoreFuture<'_, Vec<Hook>> {
        Box::pin(async move { Ok(self.inner.hooks.live()) })
    }

    fn advance_hook<'a>(
        &'a self,
        id: &'a str,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move { Ok(self.inner.hooks.advance(id, from, to)) })
    }
}

mod admin;
mod entry;
mod expiry;
mod hooks;
mod live;
mod log;
mod owners;
#[cfg(test)]
mod tests;
