//! One row of the `tasks` table read back as a task: the columns every read
//! selects, and their decoding into a [`TaskSnapshot`].
//!
//! The file is this store's own, but an operator may edit it: a value that
//! does not decode (an unknown status, a negative time, JSON that does not
//! parse) is a [`StoreError::Backend`], never a panic and never "not found".

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row};
use serde_json::value::RawValue;

use super::{backend, corrupt};
use crate::store::{AdminTask, StoreError};
use crate::task::{TaskId, TaskSnapshot, TaskState, TaskStatus, Timestamp};

/// The columns [`decode`] reads, in its order.
pub(super) const COLUMNS: &str = "id, owner, status, status_message, created_at, updated_at, \
     ttl, expires_at, poll_interval, result, error, input_requests, tool, attempt";

/// A task as stored: its snapshot, owner, tool, run and deadline.
pub(super) struct Stored {
    pub(super) owner: Option<String>,
    pub(super) tool: Option<String>,
    /// Which run of the call this is (1 for the first).
    pub(super) attempt: u32,
    /// `created_at + ttl` in ms; `None` never.
    pub(super) expires_at: Option<u64>,
    pub(super) snapshot: TaskSnapshot,
}

impl Stored {
    /// Whether the TTL has run out at `now`.
    pub(super) fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| at <= now.as_millis())
    }

    /// Whether `owner` may see the task at `now`: plain equality, and live.
    pub(super) fn visible_to(&self, owner: Option<&str>, now: Timestamp) -> bool {
        self.owner.as_deref() == owner && !self.expired(now)
    }

    pub(super) fn status(&self) -> TaskStatus {
        self.snapshot.status()
    }

    pub(super) fn admin(self) -> AdminTask {
        AdminTask {
            owner: self.owner,
            tool: self.tool,
            attempt: self.attempt,
            snapshot: self.snapshot,
        }
    }
}

/// The task `id`, expired or not; `None` when there is no such row.
pub(super) fn fetch(conn: &Connection, id: TaskId) -> Result<Option<Stored>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1");
    let mut statement = conn.prepare_cached(&sql).map_err(backend)?;
    statement
        .query_row([id.to_string()], |row| Ok(decode(row)))
        .optional()
        .map_err(backend)?
        .transpose()
}

/// Decodes a row of [`COLUMNS`].
pub(super) fn decode(row: &Row<'_>) -> Result<Stored, StoreError> {
    let id: String = row.get(0).map_err(backend)?;
    let id = TaskId::parse(&id).ok_or_else(|| corrupt(format!("{id:?} is not a task id")))?;
    let status: String = row.get(2).map_err(backend)?;
    let state = match self::status(&status)? {
        TaskStatus::Working => TaskState::Working,
        TaskStatus::InputRequired => TaskState::InputRequired {
            requests: json(row, 11)?,
        },
        TaskStatus::Completed => TaskState::Completed {
            result: json(row, 9)?,
        },
        TaskStatus::Failed => TaskState::Failed {
            error: json(row, 10)?,
        },
        TaskStatus::Cancelled => TaskState::Cancelled,
    };
    let snapshot = TaskSnapshot {
        id,
        state,
        status_message: row.get(3).map_err(backend)?,
        created_at: Timestamp::from_millis(millis(row, 4)?.unwrap_or_default()),
        last_updated_at: Timestamp::from_millis(millis(row, 5)?.unwrap_or_default()),
        ttl: millis(row, 6)?.map(Duration::from_millis),
        poll_interval: millis(row, 8)?.map(Duration::from_millis),
    };
    let attempt: i64 = row.get(13).map_err(backend)?;
    Ok(Stored {
        owner: row.get(1).map_err(backend)?,
        tool: row.get(12).map_err(backend)?,
        attempt: u32::try_from(attempt)
            .map_err(|_| corrupt(format!("attempt {attempt} is out of range")))?,
        expires_at: millis(row, 7)?,
        snapshot,
    })
}

/// A `status` column's text as a status.
pub(super) fn status(text: &str) -> Result<TaskStatus, StoreError> {
    TaskStatus::ALL
        .into_iter()
        .find(|status| status.as_str() == text)
        .ok_or_else(|| corrupt(format!("unknown status {text:?}")))
}

/// A JSON column a status requires.
fn json(row: &Row<'_>, column: usize) -> Result<Box<RawValue>, StoreError> {
    let text: Option<String> = row.get(column).map_err(backend)?;
    let text = text.ok_or_else(|| corrupt(format!("column {column} is empty for its status")))?;
    RawValue::from_string(text).map_err(|e| corrupt(format!("column {column} is not JSON: {e}")))
}

/// A column of milliseconds, never negative.
fn millis(row: &Row<'_>, column: usize) -> Result<Option<u64>, StoreError> {
    let value: Option<i64> = row.get(column).map_err(backend)?;
    value
        .map(|value| {
            u64::try_from(value).map_err(|_| corrupt(format!("column {column} is negative")))
        })
        .transpose()
}

/// Milliseconds as SQLite stores them (saturating past `i64::MAX`).
pub(super) fn to_sql(millis: u64) -> i64 {
    i64::try_from(millis).unwrap_or(i64::MAX)
}

/// A duration in milliseconds as SQLite stores it (saturating).
pub(super) fn duration_sql(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
