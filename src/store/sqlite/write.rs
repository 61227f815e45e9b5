//! Every write of the store, as a job for the writer thread: each runs in
//! its own savepoint, so an error here undoes exactly this job's writes.
//!
//! | Rule                                              | How                                                              |
//! |---------------------------------------------------|------------------------------------------------------------------|
//! | quotas are checked and the task inserted at once  | the count and the insert run in one job, on the only writer      |
//! | an expired task is unknown to every write         | each job reads the row and checks the deadline against its time  |
//! | ownership is plain equality                       | [`Stored::visible_to`]                                           |
//! | terminal states never change                      | a terminal row refuses every transition                          |
//! | a failed task's message is its error's `message`  | [`error_message`], in the same `UPDATE`                          |

use rusqlite::{ErrorCode, OptionalExtension, params};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::pairs::{self, Pairs};
use super::row::{self, Stored, duration_sql, to_sql};
use super::shared::Effect;
use super::writer::Step;
use super::{backend, corrupt};
use crate::store::{
    AdminTask, CancelOutcome, InputProgress, InputRound, NewTask, Quota, QuotaScope, StoreError,
};
use crate::task::{TaskId, TaskSnapshot, TaskStatus};
use crate::wire::jsonrpc::error_message;

/// The most rows one reaper job deletes.
pub(super) const REAP_BATCH: usize = 500;

/// [`REAP_BATCH`] as SQLite binds it.
const REAP_LIMIT: i64 = REAP_BATCH as i64;

/// The task `id` whoever owns it, unless unknown or expired.
fn live(step: &Step<'_>, id: TaskId) -> Result<Option<Stored>, StoreError> {
    Ok(row::fetch(step.conn, id)?.filter(|task| !task.expired(step.now)))
}

/// The task `id` as `owner` sees it.
fn owned(step: &Step<'_>, id: TaskId, owner: Option<&str>) -> Result<Option<Stored>, StoreError> {
    Ok(row::fetch(step.conn, id)?.filter(|task| task.visible_to(owner, step.now)))
}

/// The task as it is now, after this job's own writes.
fn reread(step: &Step<'_>, id: TaskId) -> Result<TaskSnapshot, StoreError> {
    row::fetch(step.conn, id)?
        .map(|task| task.snapshot)
        .ok_or_else(|| StoreError::backend(format!("task {id} vanished inside its own write")))
}

/// Whether `count` live tasks fill `cap`.
fn full(cap: Option<u32>, count: i64) -> bool {
    cap.is_some_and(|cap| count >= i64::from(cap))
}

/// Refuses a creation past `quota`; the per-owner cap is reported first.
fn admit(step: &Step<'_>, owner: Option<&str>, quota: Quota) -> Result<(), StoreError> {
    let now = to_sql(step.now.as_millis());
    let live = "counted = 1 AND (expires_at IS NULL OR expires_at > ?1)";
    if quota.per_owner.is_some() {
        let sql = format!("SELECT count(*) FROM tasks WHERE owner IS ?2 AND {live}");
        let held: i64 = step
            .conn
            .prepare_cached(&sql)
            .and_then(|mut s| s.query_row(params![now, owner], |row| row.get(0)))
            .map_err(backend)?;
        if full(quota.per_owner, held) {
            return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
        }
    }
    if quota.total.is_some() {
        let sql = format!("SELECT count(*) FROM tasks WHERE {live}");
        let held: i64 = step
            .conn
            .prepare_cached(&sql)
            .and_then(|mut s| s.query_row(params![now], |row| row.get(0)))
            .map_err(backend)?;
        if full(quota.total, held) {
            return Err(StoreError::QuotaExceeded(QuotaScope::Total));
        }
    }
    Ok(())
}

/// Stores a new `working` task under its quota; holds `stop` once committed.
pub(super) fn create(
    step: &mut Step<'_>,
    task: NewTask,
    stop: CancellationToken,
) -> Result<TaskSnapshot, StoreError> {
    let counted = task.quota != Quota::default();
    if counted {
        admit(step, task.owner.as_deref(), task.quota)?;
    }
    let deadline = task
        .ttl
        .map(|ttl| task.created_at.saturating_add(ttl).as_millis());
    let inserted = step
        .conn
        .prepare_cached(
            "INSERT INTO tasks (id, owner, status, status_message, created_at, updated_at, \
             ttl, expires_at, poll_interval, counted, rerun, attempts, tool) \
             VALUES (?1, ?2, 'working', ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut s| {
            s.execute(params![
                task.id.to_string(),
                task.owner,
                task.status_message,
                to_sql(task.created_at.as_millis()),
                task.ttl.map(duration_sql),
                deadline.map(to_sql),
                task.poll_interval.map(duration_sql),
                counted,
                task.rerun.as_ref().map(|rerun| rerun.call.get()),
                task.rerun.as_ref().map_or(1, |rerun| rerun.attempts.max(1)),
                task.tool,
            ])
        });
    match inserted {
        Ok(_) => {}
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::ConstraintViolation => {
            return Err(StoreError::backend("task id collision"));
        }
        Err(other) => return Err(backend(other)),
    }
    step.effect(Effect::Hold(task.id.as_u128(), stop, deadline));
    Ok(task.into_working())
}

/// Sets the message of a live, non-terminal task.
pub(super) fn set_status_message(
    step: &mut Step<'_>,
    id: TaskId,
    message: String,
) -> Result<(), StoreError> {
    let task = live(step, id)?.ok_or(StoreError::NotFound)?;
    let from = task.status();
    if from.is_terminal() {
        return Err(StoreError::InvalidTransition { from, to: from });
    }
    update(
        step,
        "UPDATE tasks SET status_message = ?2, updated_at = ?3 WHERE id = ?1",
        params![id.to_string(), message, to_sql(step.now.as_millis())],
    )?;
    step.effect(Effect::Changed(id.as_u128()));
    Ok(())
}

/// Counts one more run of a live `working` task with a re-run record and
/// runs left, its status message saying so: the run to come and the runs
/// in all; `None` when it may not run again.
pub(super) fn count_attempt(
    step: &mut Step<'_>,
    id: TaskId,
    why: &str,
) -> Result<Option<(u32, u32)>, StoreError> {
    let Some(task) = live(step, id)? else {
        return Ok(None);
    };
    if task.status() != TaskStatus::Working {
        return Ok(None);
    }
    let counted: Option<(i64, i64)> = step
        .conn
        .query_row(
            "UPDATE tasks SET attempt = attempt + 1, updated_at = ?2, status_message = ?3 \
             || '; running its call again (attempt ' || (attempt + 1) || ' of ' || attempts || ')' \
             WHERE id = ?1 AND rerun IS NOT NULL AND attempt < attempts RETURNING attempt, attempts",
            params![id.to_string(), to_sql(step.now.as_millis()), why],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(backend)?;
    let Some((attempt, attempts)) = counted else {
        return Ok(None);
    };
    step.effect(Effect::Changed(id.as_u128()));
    let count = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(Some((count(attempt), count(attempts))))
}

/// Moves a live task to `completed` or `failed`.
pub(super) fn finish(
    step: &mut Step<'_>,
    id: TaskId,
    to: TaskStatus,
    payload: Box<RawValue>,
) -> Result<(), StoreError> {
    let task = live(step, id)?.ok_or(StoreError::NotFound)?;
    let from = task.status();
    if from.is_terminal() {
        return Err(StoreError::InvalidTransition { from, to });
    }
    let now = to_sql(step.now.as_millis());
    let key = id.to_string();
    match to {
        TaskStatus::Completed => update(
            step,
            "UPDATE tasks SET status = 'completed', result = ?2, updated_at = ?3, \
             input_requests = NULL, input_answers = NULL, input_resume = NULL WHERE id = ?1",
            params![key, payload.get(), now],
        )?,
        TaskStatus::Failed => update(
            step,
            "UPDATE tasks SET status = 'failed', error = ?2, updated_at = ?3, \
             status_message = coalesce(?4, status_message), \
             input_requests = NULL, input_answers = NULL, input_resume = NULL WHERE id = ?1",
            params![key, payload.get(), now, error_message(&payload)],
        )?,
        other => {
            return Err(StoreError::InvalidTransition { from, to: other });
        }
    }
    step.effect(Effect::Finished(id.as_u128()));
    Ok(())
}

/// Cancels `task` unless it is terminal; its stop signal fires on commit.
fn cancel_task(step: &mut Step<'_>, task: Stored) -> Result<CancelOutcome, StoreError> {
    if task.status().is_terminal() {
        return Ok(CancelOutcome::AlreadyTerminal(task.snapshot));
    }
    let id = task.snapshot.id;
    update(
        step,
        "UPDATE tasks SET status = 'cancelled', updated_at = ?2, \
         input_requests = NULL, input_answers = NULL, input_resume = NULL WHERE id = ?1",
        params![id.to_string(), to_sql(step.now.as_millis())],
    )?;
    step.effect(Effect::Stopped(id.as_u128()));
    Ok(CancelOutcome::Cancelled(reread(step, id)?))
}

/// Cancels a task as `owner`; `None` when `owner` does not see it.
pub(super) fn cancel(
    step: &mut Step<'_>,
    id: TaskId,
    owner: Option<&str>,
) -> Result<Option<CancelOutcome>, StoreError> {
    owned(step, id, owner)?
        .map(|task| cancel_task(step, task))
        .transpose()
}

/// Cancels a task whoever owns it; `None` when unknown or expired.
pub(super) fn admin_cancel(
    step: &mut Step<'_>,
    id: TaskId,
) -> Result<Option<CancelOutcome>, StoreError> {
    live(step, id)?
        .map(|task| cancel_task(step, task))
        .transpose()
}

/// Removes a task whoever owns it; its stop signal fires on commit.
pub(super) fn admin_delete(
    step: &mut Step<'_>,
    id: TaskId,
) -> Result<Option<AdminTask>, StoreError> {
    let Some(task) = live(step, id)? else {
        return Ok(None);
    };
    update(
        step,
        "DELETE FROM tasks WHERE id = ?1",
        params![id.to_string()],
    )?;
    step.effect(Effect::Stopped(id.as_u128()));
    Ok(Some(task.admin()))
}

/// `working` → `input_required` with a new round.
pub(super) fn require_input(
    step: &mut Step<'_>,
    id: TaskId,
    round: InputRound,
) -> Result<(), StoreError> {
    let task = live(step, id)?.ok_or(StoreError::NotFound)?;
    let from = task.status();
    if from != TaskStatus::Working {
        return Err(StoreError::InvalidTransition {
            from,
            to: TaskStatus::InputRequired,
        });
    }
    update(
        step,
        "UPDATE tasks SET status = 'input_required', updated_at = ?2, \
         input_requests = ?3, input_answers = '{}', input_resume = ?4 WHERE id = ?1",
        params![
            id.to_string(),
            to_sql(step.now.as_millis()),
            pairs::render(&round.requests),
            round.resume.get(),
        ],
    )?;
    step.effect(Effect::Changed(id.as_u128()));
    Ok(())
}

/// The round a task waits on: outstanding requests, answers, resume.
fn round(step: &Step<'_>, id: TaskId) -> Result<(Pairs, Pairs, Box<RawValue>), StoreError> {
    let (requests, answers, resume): (Option<String>, Option<String>, Option<String>) = step
        .conn
        .prepare_cached(
            "SELECT input_requests, input_answers, input_resume FROM tasks WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([id.to_string()], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
        })
        .map_err(backend)?;
    let missing = || corrupt(format!("task {id} waits for input without a round"));
    let resume = RawValue::from_string(resume.ok_or_else(missing)?)
        .map_err(|e| corrupt(format!("task {id}: the resume column is not JSON: {e}")))?;
    Ok((
        pairs::parse(&requests.ok_or_else(missing)?)?,
        pairs::parse(answers.as_deref().unwrap_or("{}"))?,
        resume,
    ))
}

/// Records answers to outstanding keys as `owner`.
pub(super) fn answer_input(
    step: &mut Step<'_>,
    id: TaskId,
    owner: Option<&str>,
    given: Pairs,
) -> Result<Option<InputProgress>, StoreError> {
    let Some(task) = owned(step, id, owner)? else {
        return Ok(None);
    };
    if task.status() != TaskStatus::InputRequired {
        return Ok(Some(InputProgress::NotWaiting));
    }
    let (mut outstanding, mut answers, resume) = round(step, id)?;
    for (key, answer) in given {
        if let Some(at) = outstanding.iter().position(|(k, _)| *k == key) {
            outstanding.remove(at);
            answers.push((key, answer));
        }
    }
    let now = to_sql(step.now.as_millis());
    if !outstanding.is_empty() {
        update(
            step,
            "UPDATE tasks SET input_requests = ?2, input_answers = ?3, updated_at = ?4 \
             WHERE id = ?1",
            params![
                id.to_string(),
                pairs::render(&outstanding),
                pairs::render(&answers),
                now
            ],
        )?;
        return Ok(Some(InputProgress::Pending));
    }
    update(
        step,
        "UPDATE tasks SET status = 'working', updated_at = ?2, \
         input_requests = NULL, input_answers = NULL, input_resume = NULL WHERE id = ?1",
        params![id.to_string(), now],
    )?;
    step.effect(Effect::Changed(id.as_u128()));
    Ok(Some(InputProgress::RoundComplete {
        answers,
        resume,
        // Handed out here, on the writer thread, before any later cancel
        // of this task can run: that cancel fires this very token.
        stop: step.shared.hand_out(id.as_u128()),
    }))
}

/// Deletes up to [`REAP_BATCH`] expired rows, stopping their work; the
/// number deleted and the next deadline (ms), if any.
pub(super) fn reap(step: &mut Step<'_>) -> Result<(usize, Option<u64>), StoreError> {
    let now = to_sql(step.now.as_millis());
    let ids: Vec<String> = step
        .conn
        .prepare_cached(
            "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE expires_at <= ?1 \
             ORDER BY expires_at LIMIT ?2) RETURNING id",
        )
        .and_then(|mut s| {
            s.query_map(params![now, REAP_LIMIT], |row| row.get(0))?
                .collect()
        })
        .map_err(backend)?;
    for id in &ids {
        // Ids this store wrote; one edited by hand has no stop signal here.
        if let Some(id) = TaskId::parse(id) {
            step.effect(Effect::Stopped(id.as_u128()));
        }
    }
    let next: Option<i64> = step
        .conn
        .prepare_cached("SELECT min(expires_at) FROM tasks")
        .and_then(|mut s| s.query_row([], |row| row.get(0)))
        .map_err(backend)?;
    let next = next.map(|at| u64::try_from(at).unwrap_or(0));
    step.shared.set_next_due(next.unwrap_or(u64::MAX));
    Ok((ids.len(), next))
}

/// Runs one write statement.
fn update(step: &Step<'_>, sql: &str, params: impl rusqlite::Params) -> Result<(), StoreError> {
    step.conn
        .prepare_cached(sql)
        .and_then(|mut s| s.execute(params))
        .map(drop)
        .map_err(backend)
}
