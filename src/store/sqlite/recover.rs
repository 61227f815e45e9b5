//! Opening a file that a stopped process held: one process a file, and
//! what becomes of the tasks it left running.
//!
//! | Rule                                                                  | Why                                                          |
//! |-----------------------------------------------------------------------|--------------------------------------------------------------|
//! | one process holds the file at a time (an OS lock on it, kept while the store lives; a second open fails at once) | the tasks `working` in the file at open are then exactly those of a process that stopped |
//! | at open, every live `working` task that may not run again (no re-run record, or its attempts spent) is `failed` (`-32603`, saying the server stopped while it ran) | nothing else would ever end it: no task stays `working` forever |
//! | the others count one more attempt, say so in their status message, stay `working`, and wait for a layer to take them (`orphans`) | the layer re-issues the call: at least once for a tool that allows it |
//! | `input_required` and terminal tasks are kept as they are              | the first waits for its client, whose answer resumes it in this process; the others are done |
//!
//! The lock is the operating system's (`flock` on Unix), so it goes with the
//! process that held it, whether it exited, crashed or was killed.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, params};
use serde_json::value::RawValue;

use super::backend;
use super::row::to_sql;
use crate::store::StoreError;
use crate::task::{TaskId, Timestamp};
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR};

/// What a task left running by a stopped process reads as.
pub(super) const LOST: &str =
    "The server stopped while this task ran; its call did not finish and was not run again";

/// Takes the file's lock for this process; refused at once when another
/// process (or another store in this one) holds it.
pub(super) fn hold(path: &Path) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::backend(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::backend(format!(
            "{} is in use by another task store (another process, or another store in this \
             one); a task file serves one process at a time",
            path.display()
        ))),
        Err(TryLockError::Error(e)) => Err(StoreError::backend(format!(
            "cannot lock {}: {e}",
            path.display()
        ))),
    }
}

/// A task left running by the file's previous process that may run again,
/// until a layer takes it ([`TaskStore::orphans`](crate::TaskStore::orphans)).
#[derive(Debug)]
pub(super) struct Pending {
    pub id: TaskId,
    pub owner: Option<String>,
    pub created_at: Timestamp,
    pub ttl: Option<Duration>,
    pub call: Box<RawValue>,
    /// The number of the run to come.
    pub attempt: u32,
    pub attempts: u32,
}

/// Ends what the file's previous process left running: every live
/// `working` task that may not run again is failed; the others count one
/// more attempt, say so in their status message, and are returned for a
/// layer to run again.
pub(super) fn recover(conn: &Connection) -> Result<Vec<Pending>, StoreError> {
    let now = to_sql(Timestamp::now().as_millis());
    let live = "status = 'working' AND (expires_at IS NULL OR expires_at > ?1)";
    let lost = ErrorObject::new(INTERNAL_ERROR, LOST.to_owned()).to_raw();
    let failed = conn
        .execute(
            &format!(
                "UPDATE tasks SET status = 'failed', error = ?2, status_message = ?3, \
                 updated_at = ?1 WHERE {live} AND rerun IS NULL"
            ),
            params![now, lost.get(), LOST],
        )
        .map_err(backend)?;
    // Those whose attempts ran out: each message says how many ran.
    let mut spent = conn
        .prepare(&format!(
            "SELECT id, attempts FROM tasks WHERE {live} AND attempt >= attempts"
        ))
        .map_err(backend)?;
    let spent: Vec<(String, i64)> = spent
        .query_map(params![now], |row| Ok((row.get(0)?, row.get(1)?)))
        .and_then(Iterator::collect)
        .map_err(backend)?;
    for (id, attempts) in &spent {
        let message = format!(
            "The server stopped while this task ran, on the last of its {attempts} attempts; \
             it is not run again"
        );
        let error = ErrorObject::new(INTERNAL_ERROR, message.clone()).to_raw();
        conn.execute(
            "UPDATE tasks SET status = 'failed', error = ?2, status_message = ?3, \
             updated_at = ?4 WHERE id = ?1",
            params![id, error.get(), message, now],
        )
        .map_err(backend)?;
    }
    conn.execute(
        &format!(
            "UPDATE tasks SET attempt = attempt + 1, updated_at = ?1, status_message = \
             'The server restarted while this task ran; running its call again (attempt ' \
             || (attempt + 1) || ' of ' || attempts || ')' \
             WHERE {live} AND rerun IS NOT NULL AND attempt < attempts"
        ),
        params![now],
    )
    .map_err(backend)?;
    let mut again = conn
        .prepare(&format!(
            "SELECT id, owner, created_at, ttl, rerun, attempt, attempts FROM tasks \
             WHERE {live} AND rerun IS NOT NULL"
        ))
        .map_err(backend)?;
    let rows = again
        .query_map(params![now], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, Option<String>>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<i64>>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, i64>(6)?,
            ))
        })
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(backend)?;
    let mut pending = Vec::with_capacity(rows.len());
    for (id, owner, created_at, ttl, call, attempt, attempts) in rows {
        let (Some(id), Ok(call)) = (TaskId::parse(&id), RawValue::from_string(call)) else {
            tracing::warn!(task = id, "an unreadable re-run record was left as it is");
            continue;
        };
        pending.push(Pending {
            id,
            owner,
            created_at: Timestamp::from_millis(u64::try_from(created_at).unwrap_or(0)),
            ttl: ttl.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
            call,
            attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
            attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        });
    }
    let ended = failed + spent.len();
    if ended > 0 || !pending.is_empty() {
        tracing::warn!(
            failed = ended,
            again = pending.len(),
            "tasks left running by the task file's previous process: failed, or to run again"
        );
    }
    Ok(pending)
}
