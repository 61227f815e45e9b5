//! Reading the file's log of status changes
//! ([`TaskStore::status_events`](crate::TaskStore::status_events)); the
//! triggers of `schema` write it, in the statement that changes the status.
//!
//! | Case | Answer |
//! |------|--------|
//! | no cursor | no change, and the cursor of the log's end: `s<epoch>-<last seq>` |
//! | a cursor of this file | the owner's changes after its `seq`, over `task_events_by_owner` |
//! | a cursor whose `seq` is below the oldest row kept (rows were pruned after it) | those kept, `truncated` |
//! | a cursor of this file ahead of the log's end | [`StoreError::InvalidCursor`] |
//! | a cursor of another file (another `epoch`) | from the oldest change kept, `truncated` |
//! | anything else | [`StoreError::InvalidCursor`] |
//!
//! `seq` is AUTOINCREMENT, so it is never reused, also after a restart or a
//! prune: a cursor stays exact across reopenings of the file. An event's id
//! is `e<epoch>-<seq>`, the same on every read.

use std::time::Duration;

use rusqlite::{Connection, Row, params};
use serde_json::value::RawValue;

use super::row::{self, to_sql};
use super::{backend, corrupt};
use crate::store::{EventPage, StatusEvent, StoreError};
use crate::task::{TaskId, TaskSnapshot, TaskState, TaskStatus, Timestamp};

/// Where a read starts.
#[derive(Debug, PartialEq, Eq)]
enum After {
    /// From now.
    Now,
    /// After this sequence number.
    Seq(u64),
    /// A cursor of another file: from the oldest change kept, truncated.
    Stale,
}

/// Reads `cursor` against the file's `epoch`.
fn parse(epoch: &str, cursor: Option<&str>) -> Result<After, StoreError> {
    let Some(cursor) = cursor else {
        return Ok(After::Now);
    };
    let (theirs, seq) = cursor
        .strip_prefix('s')
        .and_then(|rest| rest.split_once('-'))
        .filter(|(theirs, _)| {
            !theirs.is_empty()
                && theirs.len() <= 16
                && theirs.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .and_then(|(theirs, seq)| Some((theirs, seq.parse::<u64>().ok()?)))
        .ok_or(StoreError::InvalidCursor)?;
    Ok(if theirs == epoch {
        After::Seq(seq)
    } else {
        After::Stale
    })
}

fn cursor(epoch: &str, seq: u64) -> String {
    format!("s{epoch}-{seq}")
}

/// A whole number from SQLite, never negative.
fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// `owner`'s changes after `after`, at most `limit` (clamp 1..=1000).
pub(super) fn read(
    conn: &Connection,
    owner: Option<&str>,
    after: Option<&str>,
    limit: usize,
) -> Result<EventPage, StoreError> {
    // One read snapshot: the end, the oldest row and the page agree.
    let tx = conn.unchecked_transaction().map_err(backend)?;
    let epoch: String = tx
        .query_row("SELECT epoch FROM log_info", [], |row| row.get(0))
        .map_err(backend)?;
    let after = parse(&epoch, after)?;
    let (last, oldest): (i64, Option<i64>) = tx
        .query_row(
            "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'task_events'), 0), \
             (SELECT min(seq) FROM task_events)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(backend)?;
    let last = count(last);
    // Every change up to here left the log (all of them when it is empty).
    let dropped = oldest.map_or(last, |oldest| count(oldest).saturating_sub(1));
    let (from, truncated) = match after {
        After::Now => {
            return Ok(EventPage {
                events: Vec::new(),
                cursor: cursor(&epoch, last),
                truncated: false,
                more: false,
            });
        }
        After::Seq(seq) if seq > last => return Err(StoreError::InvalidCursor),
        After::Seq(seq) => (seq, seq < dropped),
        After::Stale => (0, true),
    };
    let limit = limit.clamp(1, 1000);
    let mut statement = tx
        .prepare_cached(
            "SELECT seq, task, status, status_message, created_at, updated_at, ttl, \
             poll_interval FROM task_events WHERE owner IS ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )
        .map_err(backend)?;
    let mut rows = statement
        .query(params![owner, to_sql(from), to_sql(limit as u64 + 1)])
        .map_err(backend)?;
    let mut events = Vec::with_capacity(limit);
    let mut more = false;
    while let Some(row) = rows.next().map_err(backend)? {
        if events.len() == limit {
            more = true;
            break;
        }
        let (seq, task) = decode(row)?;
        events.push(StatusEvent {
            id: format!("e{epoch}-{seq}"),
            cursor: cursor(&epoch, seq),
            task,
        });
    }
    let cursor = match (more, events.last()) {
        (true, Some(last)) => last.cursor.clone(),
        _ => cursor(&epoch, last.max(from)),
    };
    Ok(EventPage {
        events,
        cursor,
        truncated,
        more,
    })
}

/// A `task_events` row as its sequence number and stripped snapshot.
fn decode(row: &Row<'_>) -> Result<(u64, TaskSnapshot), StoreError> {
    let seq: i64 = row.get(0).map_err(backend)?;
    let id: String = row.get(1).map_err(backend)?;
    let id = TaskId::parse(&id).ok_or_else(|| corrupt(format!("{id:?} is not a task id")))?;
    let status: String = row.get(2).map_err(backend)?;
    let empty = || RawValue::from_string("{}".to_owned()).map_err(|e| corrupt(e.to_string()));
    let state = match row::status(&status)? {
        TaskStatus::Working => TaskState::Working,
        TaskStatus::Cancelled => TaskState::Cancelled,
        TaskStatus::InputRequired => TaskState::InputRequired { requests: empty()? },
        TaskStatus::Completed => TaskState::Completed { result: empty()? },
        TaskStatus::Failed => TaskState::Failed { error: empty()? },
    };
    let millis = |column: usize| -> Result<Option<u64>, StoreError> {
        let value: Option<i64> = row.get(column).map_err(backend)?;
        Ok(value.map(count))
    };
    let task = TaskSnapshot {
        id,
        state,
        status_message: row.get(3).map_err(backend)?,
        created_at: Timestamp::from_millis(millis(4)?.unwrap_or_default()),
        last_updated_at: Timestamp::from_millis(millis(5)?.unwrap_or_default()),
        ttl: millis(6)?.map(Duration::from_millis),
        poll_interval: millis(7)?.map(Duration::from_millis),
    };
    Ok((count(seq), task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_of_this_file_another_file_and_garbage() {
        assert_eq!(parse("0a1b2c3d", None).unwrap(), After::Now);
        assert_eq!(
            parse("0a1b2c3d", Some("s0a1b2c3d-42")).unwrap(),
            After::Seq(42)
        );
        assert_eq!(
            parse("0a1b2c3d", Some("sffffffff-42")).unwrap(),
            After::Stale
        );
        for garbage in [
            "",
            "s",
            "s-1",
            "sxyz-1",
            "s0a1b2c3d-",
            "s0a1b2c3d-x",
            "m1-1",
        ] {
            assert!(
                matches!(
                    parse("0a1b2c3d", Some(garbage)),
                    Err(StoreError::InvalidCursor)
                ),
                "{garbage:?}"
            );
        }
    }
}
