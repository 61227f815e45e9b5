//! The reference store of the contract's teeth: one mutex over one map,
//! everything checked in the plainest possible way, and a [`Flaw`] switch
//! that breaks exactly one rule.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use mcp_tasks::store::StoreFuture;
use mcp_tasks::{
    CancelOutcome, CreatedTask, InputProgress, InputRound, NewTask, Quota, QuotaScope, StoreError,
    TaskId, TaskList, TaskSnapshot, TaskState, TaskStatus, TaskStore, Timestamp,
};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

/// The one rule a [`NaiveStore`] breaks, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flaw {
    /// Keeps every rule.
    None,
    /// A later `complete`/`fail` overwrites a completed or failed task
    /// (cancelled stays protected, so only one rule is broken).
    TerminalOverwritten,
    /// A late `complete`/`fail` overwrites a cancelled task.
    LateOutcomeOverwritesCancelled,
    /// Ignores the TTL: tasks never expire and the stop signal never fires.
    NeverExpires,
    /// Ignores the owner on `get`, `cancel` and `answer_input`.
    LeaksAcrossOwners,
    /// `list` shows every owner's tasks (everything else checks the owner).
    ListLeaksAcrossOwners,
    /// `list` shows expired tasks (which are kept until listed; reads and
    /// the stop signal still honour the TTL).
    ListShowsExpired,
    /// `list` takes a cursor it cannot read as "from the start".
    ListAcceptsAnyCursor,
    /// `list` hands out a cursor even on the last page.
    ListCursorNeverEnds,
    /// `create` ignores every quota.
    IgnoresQuota,
    /// `create` ignores the total cap (the per-owner one holds).
    IgnoresTotalQuota,
    /// The per-owner cap counts every owner's tasks, not just the creator's.
    QuotaPoolsOwners,
    /// Each unowned task counts as an owner of its own, so the per-owner
    /// cap never refuses one.
    QuotaCountsUnownedApart,
    /// Expired tasks still count (the store keeps them; reads and listings
    /// honour the TTL).
    QuotaCountsExpired,
    /// Only `working` and `input_required` tasks count.
    QuotaCountsOnlyRunning,
    /// The caps are checked under the lock, then the lock is let go (and
    /// the task yields) before the insert: concurrent creates overshoot.
    QuotaCheckedApart,
}

/// What a task is doing, with exactly what the store needs for it.
enum State {
    Working,
    InputRequired {
        /// Requests not answered yet, in the order they were asked.
        outstanding: Vec<(String, Box<RawValue>)>,
        /// Answers recorded so far, in the order they came.
        answers: Vec<(String, Box<RawValue>)>,
        resume: Box<RawValue>,
    },
    Completed(Box<RawValue>),
    Failed(Box<RawValue>),
    Cancelled,
}

impl State {
    fn status(&self) -> TaskStatus {
        match self {
            Self::Working => TaskStatus::Working,
            Self::InputRequired { .. } => TaskStatus::InputRequired,
            Self::Completed(_) => TaskStatus::Completed,
            Self::Failed(_) => TaskStatus::Failed,
            Self::Cancelled => TaskStatus::Cancelled,
        }
    }
}

struct Task {
    owner: Option<String>,
    created_at: Timestamp,
    updated_at: Timestamp,
    ttl: Option<Duration>,
    poll_interval: Option<Duration>,
    message: Option<String>,
    state: State,
    stop: CancellationToken,
    /// Created under a quota: counted by later quotas.
    counted: bool,
}

impl Task {
    fn snapshot(&self, id: TaskId) -> TaskSnapshot {
        let state = match &self.state {
            State::Working => TaskState::Working,
            State::InputRequired { outstanding, .. } => TaskState::InputRequired {
                requests: json_object(outstanding),
            },
            State::Completed(result) => TaskState::Completed {
                result: result.clone(),
            },
            State::Failed(error) => TaskState::Failed {
                error: error.clone(),
            },
            State::Cancelled => TaskState::Cancelled,
        };
        TaskSnapshot {
            id,
            state,
            status_message: self.message.clone(),
            created_at: self.created_at,
            last_updated_at: self.updated_at,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
        }
    }
}

/// `[(key, value)]` as one JSON object, keys escaped, values verbatim.
fn json_object(pairs: &[(String, Box<RawValue>)]) -> Box<RawValue> {
    let members: Vec<String> = pairs
        .iter()
        .map(|(key, value)| format!("{}:{}", serde_json::to_string(key).unwrap(), value.get()))
        .collect();
    RawValue::from_string(format!("{{{}}}", members.join(","))).unwrap()
}

type Tasks = HashMap<TaskId, Task>;

/// A reference [`TaskStore`]: one mutex over one map, everything checked in
/// the plainest possible way, and one sleeping tokio task per TTL.
pub struct NaiveStore {
    flaw: Flaw,
    tasks: Arc<Mutex<Tasks>>,
}

impl NaiveStore {
    pub fn new(flaw: Flaw) -> Self {
        Self {
            flaw,
            tasks: Arc::default(),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Tasks>, StoreError> {
        self.tasks
            .lock()
            .map_err(|_| StoreError::backend("naive store lock poisoned"))
    }

    fn expired(&self, task: &Task) -> bool {
        if self.flaw == Flaw::NeverExpires {
            return false;
        }
        task.ttl
            .is_some_and(|ttl| task.created_at.saturating_add(ttl) <= Timestamp::now())
    }

    fn may_see(&self, task: &Task, owner: Option<&str>) -> bool {
        self.flaw == Flaw::LeaksAcrossOwners || task.owner.as_deref() == owner
    }

    /// Whether `task` counts against a quota now.
    fn counts(&self, task: &Task) -> bool {
        let live = self.flaw == Flaw::QuotaCountsExpired || !self.expired(task);
        let running = !task.state.status().is_terminal();
        task.counted && live && (running || self.flaw != Flaw::QuotaCountsOnlyRunning)
    }

    /// Refuses a task of `owner` that `quota` has no room for among `tasks`.
    fn check_quota(
        &self,
        tasks: &Tasks,
        owner: Option<&str>,
        quota: Quota,
    ) -> Result<(), StoreError> {
        if self.flaw == Flaw::IgnoresQuota {
            return Ok(());
        }
        let full = |cap: Option<u32>, count: usize| cap.is_some_and(|cap| count >= cap as usize);
        let live: Vec<&Task> = tasks.values().filter(|task| self.counts(task)).collect();
        let mine = live
            .iter()
            .filter(|task| self.flaw == Flaw::QuotaPoolsOwners || task.owner.as_deref() == owner)
            .count();
        let apart = self.flaw == Flaw::QuotaCountsUnownedApart && owner.is_none();
        if !apart && full(quota.per_owner, mine) {
            return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
        }
        if self.flaw != Flaw::IgnoresTotalQuota && full(quota.total, live.len()) {
            return Err(StoreError::QuotaExceeded(QuotaScope::Total));
        }
        Ok(())
    }

    /// Runs `f` on a live task, whoever owns it (the layer's own calls).
    fn with_live<T>(
        &self,
        id: TaskId,
        f: impl FnOnce(&mut Task) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut tasks = self.lock()?;
        match tasks.get_mut(&id) {
            Some(task) if !self.expired(task) => f(task),
            _ => Err(StoreError::NotFound),
        }
    }

    /// Runs `f` on a live task `owner` may see; `None` when it may not.
    fn with_owned<T>(
        &self,
        id: TaskId,
        owner: Option<&str>,
        f: impl FnOnce(&mut Task) -> T,
    ) -> Result<Option<T>, StoreError> {
        let mut tasks = self.lock()?;
        Ok(match tasks.get_mut(&id) {
            Some(task) if !self.expired(task) && self.may_see(task, owner) => Some(f(task)),
            _ => None,
        })
    }

    /// Reads this store's own cursor text, `<created ms>:<id>`.
    fn parse_cursor(&self, text: &str) -> Result<Option<(u64, TaskId)>, StoreError> {
        let parsed = text.split_once(':').and_then(|(created, id)| {
            let created = created.parse().ok()?;
            Some((created, TaskId::parse(id)?))
        });
        match parsed {
            Some(key) => Ok(Some(key)),
            None if self.flaw == Flaw::ListAcceptsAnyCursor => Ok(None),
            None => Err(StoreError::InvalidCursor),
        }
    }

    /// Moves a task to a terminal outcome, unless it already has one.
    fn finish(&self, task: &mut Task, outcome: State) -> Result<(), StoreError> {
        let from = task.state.status();
        let overwrite = match from {
            TaskStatus::Completed | TaskStatus::Failed => self.flaw == Flaw::TerminalOverwritten,
            TaskStatus::Cancelled => self.flaw == Flaw::LateOutcomeOverwritesCancelled,
            TaskStatus::Working | TaskStatus::InputRequired => true,
        };
        if !overwrite {
            return Err(StoreError::InvalidTransition {
                from,
                to: outcome.status(),
            });
        }
        task.state = outcome;
        task.updated_at = Timestamp::now();
        Ok(())
    }
}

/// Sleeps until `deadline`, then forgets the task and fires its stop signal.
async fn expire(
    tasks: Weak<Mutex<Tasks>>,
    id: TaskId,
    deadline: Timestamp,
    stop: CancellationToken,
    keep: bool,
) {
    let wait = deadline
        .as_millis()
        .saturating_sub(Timestamp::now().as_millis());
    // The reference store's expiry: one sleeping task per TTL, as documented above.
    tokio::time::sleep(Duration::from_millis(wait)).await;
    if let Some(tasks) = tasks.upgrade()
        && !keep
        && let Ok(mut tasks) = tasks.lock()
    {
        tasks.remove(&id);
    }
    stop.cancel();
}

impl TaskStore for NaiveStore {
    fn create(&self, new: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(async move {
            let stop = CancellationToken::new();
            let task = Task {
                owner: new.owner,
                created_at: new.created_at,
                updated_at: new.created_at,
                ttl: new.ttl,
                poll_interval: new.poll_interval,
                message: new.status_message,
                state: State::Working,
                stop: stop.clone(),
                counted: new.quota != Quota::default(),
            };
            let snapshot = task.snapshot(new.id);
            let apart = self.flaw == Flaw::QuotaCheckedApart;
            if apart {
                self.check_quota(&*self.lock()?, task.owner.as_deref(), new.quota)?;
                tokio::task::yield_now().await;
            }
            {
                let mut tasks = self.lock()?;
                if tasks.contains_key(&new.id) {
                    return Err(StoreError::backend("task id collision"));
                }
                if !apart {
                    self.check_quota(&tasks, task.owner.as_deref(), new.quota)?;
                }
                tasks.insert(new.id, task);
            }
            if let Some(ttl) = new.ttl
                && self.flaw != Flaw::NeverExpires
            {
                let deadline = new.created_at.saturating_add(ttl);
                let tasks = Arc::downgrade(&self.tasks);
                let keep = matches!(self.flaw, Flaw::ListShowsExpired | Flaw::QuotaCountsExpired);
                tokio::spawn(expire(tasks, new.id, deadline, stop.clone(), keep));
            }
            Ok(CreatedTask { snapshot, stop })
        })
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        Box::pin(async move { self.with_owned(id, owner, |task| task.snapshot(id)) })
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.with_live(id, |task| {
                let from = task.state.status();
                if from.is_terminal() {
                    return Err(StoreError::InvalidTransition { from, to: from });
                }
                task.message = Some(message);
                task.updated_at = Timestamp::now();
                Ok(())
            })
        })
    }

    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(
            async move { self.with_live(id, |task| self.finish(task, State::Completed(result))) },
        )
    }

    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let message = serde_json::from_str::<serde_json::Value>(error.get())
                .ok()
                .and_then(|e| e.get("message")?.as_str().map(str::to_owned));
            self.with_live(id, |task| {
                self.finish(task, State::Failed(error))?;
                task.message = message.or(task.message.take());
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
            self.with_owned(id, owner, |task| {
                if task.state.status().is_terminal() {
                    return CancelOutcome::AlreadyTerminal(task.snapshot(id));
                }
                task.state = State::Cancelled;
                task.updated_at = Timestamp::now();
                task.stop.cancel();
                CancelOutcome::Cancelled(task.snapshot(id))
            })
        })
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.with_live(id, |task| {
                let from = task.state.status();
                if from != TaskStatus::Working {
                    let to = TaskStatus::InputRequired;
                    return Err(StoreError::InvalidTransition { from, to });
                }
                task.state = State::InputRequired {
                    outstanding: round.requests,
                    answers: Vec::new(),
                    resume: round.resume,
                };
                task.updated_at = Timestamp::now();
                Ok(())
            })
        })
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        given: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        Box::pin(async move {
            self.with_owned(id, owner, |task| {
                let State::InputRequired {
                    outstanding,
                    answers,
                    ..
                } = &mut task.state
                else {
                    return InputProgress::NotWaiting;
                };
                for (key, value) in given {
                    // Only outstanding keys count; the rest is ignored.
                    if let Some(at) = outstanding.iter().position(|(k, _)| *k == key) {
                        outstanding.remove(at);
                        answers.push((key, value));
                    }
                }
                task.updated_at = Timestamp::now();
                if !outstanding.is_empty() {
                    return InputProgress::Pending;
                }
                let State::InputRequired {
                    answers, resume, ..
                } = std::mem::replace(&mut task.state, State::Working)
                else {
                    unreachable!("matched input_required above")
                };
                InputProgress::RoundComplete {
                    answers,
                    resume,
                    stop: task.stop.clone(),
                }
            })
        })
    }

    /// Sorts every task there is: plainly correct, and O(n log n).
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        Box::pin(async move {
            let after = cursor
                .map(|text| self.parse_cursor(text))
                .transpose()?
                .flatten();
            let tasks = self.lock()?;
            let mut listed: Vec<(u64, TaskId, &Task)> = tasks
                .iter()
                .filter(|(_, task)| {
                    self.flaw == Flaw::ListLeaksAcrossOwners || task.owner.as_deref() == owner
                })
                .filter(|(_, task)| self.flaw == Flaw::ListShowsExpired || !self.expired(task))
                .map(|(&id, task)| (task.created_at.as_millis(), id, task))
                .filter(|&(created, id, _)| after.is_none_or(|after| (created, id) > after))
                .collect();
            listed.sort_by_key(|&(created, id, _)| (created, id));
            let limit = limit.clamp(1, 1000);
            let more = listed.len() > limit;
            listed.truncate(limit);
            let next_cursor = listed
                .last()
                .filter(|_| more || self.flaw == Flaw::ListCursorNeverEnds)
                .map(|(created, id, _)| format!("{created}:{id}"));
            Ok(TaskList {
                tasks: listed
                    .iter()
                    .map(|&(_, id, task)| task.snapshot(id))
                    .collect(),
                next_cursor,
            })
        })
    }
}
