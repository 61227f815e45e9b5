//! The reference store of the events contract's teeth: the tasks of a
//! [`NaiveStore`], a log kept by logging each change right after the inner
//! store made it, subscriptions in one map under one mutex, and an
//! [`EventFlaw`] switch that breaks exactly one rule.
//!
//! | Flaw | What it breaks |
//! |------|----------------|
//! | `LogsMessages` | a status message alone is logged as a change |
//! | `LogLeaksAcrossOwners` | an owner reads every owner's changes |
//! | `KeepsPayload` | a logged change keeps the result |
//! | `CursorOneEarly` | a page's cursor repeats its last change |
//! | `CursorOneLate` | a page's cursor skips the next change |
//! | `NoCursorReadsFromStart` | no cursor reads the whole log |
//! | `AcceptsAnyCursor` | a cursor it cannot read reads from the start |
//! | `RefreshResetsCursor` | a refresh takes the new cursor |
//! | `IgnoresHookCap` | no per-owner cap on subscriptions |
//! | `RefreshCounted` | a refresh counts against the caps |
//! | `AdvanceNotCompareAndSet` | advancing moves the cursor from anywhere |
//! | `AnyoneRemoves` | any owner removes a subscription |
//! | `ListsLapsed` | lapsed subscriptions are still listed |
//! | `CountsLapsed` | lapsed subscriptions still count |
//! | `LapsedKeepsCursor` | a put over a lapsed subscription keeps its cursor |
//!
//! The log is the list of every change; an owner's view is its own changes
//! (every change with `LogLeaksAcrossOwners`), and a cursor `n<k>` is "after
//! the first `k` of that view".

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use mcp_tasks::store::{EventPage, Hook, StatusEvent, StoreFuture};
use mcp_tasks::{
    CancelOutcome, CreatedTask, InputProgress, InputRound, NewTask, QuotaScope, StoreError, TaskId,
    TaskList, TaskSnapshot, TaskStore, Timestamp,
};
use serde_json::value::RawValue;

use super::naive::{Flaw, NaiveStore};

/// The one events rule an [`EventfulStore`] breaks, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventFlaw {
    /// Keeps every rule.
    None,
    /// `set_status_message` logs a change too.
    LogsMessages,
    /// `status_events` shows every owner's changes.
    LogLeaksAcrossOwners,
    /// A logged change keeps the task's result, error or requests.
    KeepsPayload,
    /// A page that read changes hands out the cursor before its last one.
    CursorOneEarly,
    /// A page that read changes hands out a cursor one past its last one.
    CursorOneLate,
    /// No cursor reads from the start of the log instead of from now.
    NoCursorReadsFromStart,
    /// A cursor it cannot read reads from the start.
    AcceptsAnyCursor,
    /// A refresh of a live subscription takes the cursor it is given.
    RefreshResetsCursor,
    /// The per-owner cap on subscriptions is ignored (the total holds).
    IgnoresHookCap,
    /// A refresh is counted as one more subscription.
    RefreshCounted,
    /// `advance_hook` moves the cursor whatever it is at.
    AdvanceNotCompareAndSet,
    /// `remove_hook` ignores the owner.
    AnyoneRemoves,
    /// `hooks` lists lapsed subscriptions (nothing else sees them).
    ListsLapsed,
    /// Lapsed subscriptions count against the caps.
    CountsLapsed,
    /// A put over a lapsed subscription keeps its old cursor.
    LapsedKeepsCursor,
}

#[derive(Default)]
struct State {
    /// Every change, oldest first, with its task's owner.
    log: Vec<(Option<String>, TaskSnapshot)>,
    owners: HashMap<TaskId, Option<String>>,
    hooks: HashMap<String, Hook>,
}

/// A [`TaskStore`] with task events: a [`NaiveStore`] keeps the tasks.
pub struct EventfulStore {
    flaw: EventFlaw,
    tasks: NaiveStore,
    state: Mutex<State>,
}

fn lapsed(hook: &Hook) -> bool {
    hook.expires_at.is_some_and(|at| at <= Timestamp::now())
}

impl EventfulStore {
    pub fn new(flaw: EventFlaw) -> Self {
        Self {
            flaw,
            tasks: NaiveStore::new(Flaw::None),
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.state
            .lock()
            .map_err(|_| StoreError::backend("eventful store lock poisoned"))
    }

    /// Logs task `id` as it is now.
    async fn log(&self, id: TaskId) -> Result<(), StoreError> {
        let owner = self.lock()?.owners.get(&id).cloned().flatten();
        let Some(task) = self.tasks.get(id, owner.as_deref()).await? else {
            return Ok(());
        };
        let task = if self.flaw == EventFlaw::KeepsPayload {
            task
        } else {
            StatusEvent::strip(&task)
        };
        self.lock()?.log.push((owner, task));
        Ok(())
    }

    /// `owner`'s view of the log.
    fn view<'s>(&self, state: &'s State, owner: Option<&str>) -> Vec<&'s TaskSnapshot> {
        let leak = self.flaw == EventFlaw::LogLeaksAcrossOwners;
        state
            .log
            .iter()
            .filter(|(of, _)| leak || of.as_deref() == owner)
            .map(|(_, task)| task)
            .collect()
    }

    /// How many of the view a cursor is after.
    fn parse(&self, cursor: &str, len: usize) -> Result<usize, StoreError> {
        match cursor
            .strip_prefix('n')
            .and_then(|k| k.parse::<usize>().ok())
        {
            // A cursor past the end (one it handed out too far) reads as the end.
            Some(k) => Ok(k.min(len)),
            _ if self.flaw == EventFlaw::AcceptsAnyCursor => Ok(0),
            _ => Err(StoreError::InvalidCursor),
        }
    }

    /// The cursor a page hands out after reading up to `end` of the view.
    fn page_cursor(&self, end: usize, read: bool) -> String {
        let end = match self.flaw {
            EventFlaw::CursorOneEarly if read => end - 1,
            EventFlaw::CursorOneLate if read => end + 1,
            _ => end,
        };
        format!("n{end}")
    }

    /// The subscriptions a put of `hook` is counted with.
    fn counted<'h>(&self, hooks: &'h HashMap<String, Hook>, hook: &Hook) -> Vec<&'h Hook> {
        hooks
            .values()
            .filter(|held| self.flaw == EventFlaw::CountsLapsed || !lapsed(held))
            .filter(|held| self.flaw == EventFlaw::RefreshCounted || held.id != hook.id)
            .collect()
    }
}

impl TaskStore for EventfulStore {
    fn create(&self, new: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(async move {
            let (id, owner) = (new.id, new.owner.clone());
            let created = self.tasks.create(new).await?;
            self.lock()?.owners.insert(id, owner);
            self.log(id).await?;
            Ok(created)
        })
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        self.tasks.get(id, owner)
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.tasks.set_status_message(id, message).await?;
            if self.flaw == EventFlaw::LogsMessages {
                self.log(id).await?;
            }
            Ok(())
        })
    }

    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.tasks.complete(id, result).await?;
            self.log(id).await
        })
    }

    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.tasks.fail(id, error).await?;
            self.log(id).await
        })
    }

    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        Box::pin(async move {
            let outcome = self.tasks.cancel(id, owner).await?;
            if let Some(CancelOutcome::Cancelled(_)) = outcome {
                self.log(id).await?;
            }
            Ok(outcome)
        })
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.tasks.require_input(id, round).await?;
            self.log(id).await
        })
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        given: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        Box::pin(async move {
            let progress = self.tasks.answer_input(id, owner, given).await?;
            if let Some(InputProgress::RoundComplete { .. }) = progress {
                self.log(id).await?;
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
        self.tasks.list(owner, cursor, limit)
    }

    fn status_events<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventPage> {
        Box::pin(async move {
            let state = self.lock()?;
            let view = self.view(&state, owner);
            let start = match after {
                Some(cursor) => self.parse(cursor, view.len())?,
                None if self.flaw == EventFlaw::NoCursorReadsFromStart => 0,
                None => view.len(),
            };
            let end = view.len().min(start + limit.clamp(1, 1000));
            let events: Vec<StatusEvent> = (start..end)
                .map(|at| StatusEvent {
                    id: format!("ev{at}"),
                    cursor: self.page_cursor(at + 1, true),
                    task: view[at].clone(),
                })
                .collect();
            Ok(EventPage {
                cursor: self.page_cursor(end, !events.is_empty()),
                events,
                truncated: false,
                more: end < view.len(),
            })
        })
    }

    fn put_hook(&self, hook: Hook, per_owner: u32, total: u32) -> StoreFuture<'_, Hook> {
        Box::pin(async move {
            let mut state = self.lock()?;
            let hooks = &mut state.hooks;
            let counted = self.counted(hooks, &hook);
            let mine = counted.iter().filter(|held| held.owner == hook.owner);
            if self.flaw != EventFlaw::IgnoresHookCap && mine.count() >= per_owner as usize {
                return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
            }
            if counted.len() >= total as usize {
                return Err(StoreError::QuotaExceeded(QuotaScope::Total));
            }
            let kept = hooks.get(&hook.id).filter(|held| {
                (self.flaw == EventFlaw::LapsedKeepsCursor || !lapsed(held))
                    && self.flaw != EventFlaw::RefreshResetsCursor
            });
            let stored = match kept {
                Some(held) => Hook {
                    cursor: held.cursor.clone(),
                    ..hook
                },
                None => hook,
            };
            hooks.insert(stored.id.clone(), stored.clone());
            Ok(stored)
        })
    }

    fn remove_hook<'a>(&'a self, owner: Option<&'a str>, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut state = self.lock()?;
            let removable = state.hooks.get(id).is_some_and(|held| {
                !lapsed(held)
                    && (self.flaw == EventFlaw::AnyoneRemoves || held.owner.as_deref() == owner)
            });
            Ok(removable && state.hooks.remove(id).is_some())
        })
    }

    fn hooks(&self) -> StoreFuture<'_, Vec<Hook>> {
        Box::pin(async move {
            let state = self.lock()?;
            let mut hooks: Vec<Hook> = state
                .hooks
                .values()
                .filter(|held| self.flaw == EventFlaw::ListsLapsed || !lapsed(held))
                .cloned()
                .collect();
            hooks.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(hooks)
        })
    }

    fn advance_hook<'a>(
        &'a self,
        id: &'a str,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut state = self.lock()?;
            let Some(held) = state.hooks.get_mut(id).filter(|held| !lapsed(held)) else {
                return Ok(false);
            };
            if held.cursor != from && self.flaw != EventFlaw::AdvanceNotCompareAndSet {
                return Ok(false);
            }
            held.cursor = to.to_owned();
            Ok(true)
        })
    }
}
