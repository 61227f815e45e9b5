//! Reads: a small pool of read-only connections used on tokio's blocking
//! threads, beside the writer.
//!
//! | Choice                                         | Why                                                                  |
//! |------------------------------------------------|----------------------------------------------------------------------|
//! | reads do not go through the writer thread      | WAL lets readers run beside the writer; a `get` never waits for a group's fsync |
//! | each read on `spawn_blocking`                  | a SQLite call blocks; none may run on the async runtime               |
//! | at most [`IDLE`] connections are kept          | a burst opens more, and they close after it; idle ones cost a file handle each |
//! | every read starts a fresh WAL snapshot         | a `create` that resolved (committed) is seen by the next read at once |
//! | expiry and ownership are checked in SQL and Rust alike | an expired or foreign task reads like an unknown one              |

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, params};

use super::row::{self, COLUMNS, Stored, to_sql};
use super::{backend, schema};
use crate::store::cursor::{ListCursor, MAX_PAGE};
use crate::store::{AdminPage, AdminTask, StoreError, TaskCounts, TaskList};
use crate::task::{TaskId, TaskSnapshot, Timestamp};

/// How many idle read connections are kept.
const IDLE: usize = 4;

/// The read connections of one file.
pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    closed: AtomicBool,
}

impl Readers {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            idle: Mutex::default(),
            closed: AtomicBool::new(false),
        }
    }

    /// Runs `read` on a pooled connection on a blocking thread.
    pub(super) async fn run<T, F>(self: &Arc<Self>, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let readers = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let conn = readers.take()?;
            let answer = read(&conn);
            readers.put(conn)?;
            answer
        })
        .await
        .map_err(|e| StoreError::Backend(Box::new(e)))?
    }

    fn take(&self) -> Result<Connection, StoreError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::backend("the SQLite task store is closed"));
        }
        let pooled = self.lock()?.pop();
        match pooled {
            Some(conn) => Ok(conn),
            None => schema::open_reader(&self.path),
        }
    }

    fn put(&self, conn: Connection) -> Result<(), StoreError> {
        let mut idle = self.lock()?;
        if idle.len() < IDLE && !self.closed.load(Ordering::Acquire) {
            idle.push(conn);
        }
        Ok(())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Vec<Connection>>, StoreError> {
        self.idle
            .lock()
            .map_err(|_| StoreError::backend("the SQLite reader pool lock is poisoned"))
    }

    /// Closes the idle connections; later reads are refused.
    pub(super) fn close(&self) -> Result<(), StoreError> {
        self.closed.store(true, Ordering::Release);
        self.lock()?.clear();
        Ok(())
    }
}

/// The task `id` as `owner` sees it now.
pub(super) fn get(
    conn: &Connection,
    id: TaskId,
    owner: Option<&str>,
) -> Result<Option<TaskSnapshot>, StoreError> {
    let now = Timestamp::now();
    Ok(row::fetch(conn, id)?
        .filter(|task| task.visible_to(owner, now))
        .map(|task| task.snapshot))
}

/// The task `id` whoever owns it, unless expired.
pub(super) fn admin_get(conn: &Connection, id: TaskId) -> Result<Option<AdminTask>, StoreError> {
    let now = Timestamp::now();
    Ok(row::fetch(conn, id)?
        .filter(|task| !task.expired(now))
        .map(Stored::admin))
}

/// Up to `limit` live rows after `after`, and the cursor of the last one
/// when more follow. `scope` narrows the rows (an owner, or none).
fn page(
    conn: &Connection,
    scope: &str,
    owner: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<Stored>, Option<String>), StoreError> {
    let after = ListCursor::param(cursor)?.map(ListCursor::key);
    let (created, id) = match after {
        Some((created, id)) => (to_sql(created), TaskId::from_u128(id).to_string()),
        None => (-1, String::new()),
    };
    let limit = limit.clamp(1, MAX_PAGE);
    let sql = format!(
        "SELECT {COLUMNS} FROM tasks WHERE {scope} (created_at, id) > (?2, ?3) \
         AND (expires_at IS NULL OR expires_at > ?4) ORDER BY created_at, id LIMIT ?5"
    );
    let now = to_sql(Timestamp::now().as_millis());
    let mut statement = conn.prepare_cached(&sql).map_err(backend)?;
    let mut rows = statement
        .query(params![owner, created, id, now, to_sql(limit as u64 + 1)])
        .map_err(backend)?;
    let mut tasks = Vec::with_capacity(limit);
    let mut more = false;
    while let Some(row) = rows.next().map_err(backend)? {
        if tasks.len() == limit {
            more = true;
            break;
        }
        tasks.push(row::decode(row)?);
    }
    let next = match tasks.last() {
        Some(last) if more => {
            Some(ListCursor::after(last.snapshot.created_at, last.snapshot.id).to_string())
        }
        _ => None,
    };
    Ok((tasks, next))
}

/// One page of exactly `owner`'s live tasks, over `tasks_by_owner`.
pub(super) fn list(
    conn: &Connection,
    owner: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<TaskList, StoreError> {
    let (tasks, next_cursor) = page(conn, "owner IS ?1 AND", owner, cursor, limit)?;
    Ok(TaskList {
        tasks: tasks.into_iter().map(|task| task.snapshot).collect(),
        next_cursor,
    })
}

/// One page of every owner's live tasks, over `tasks_by_creation`.
pub(super) fn admin_list(
    conn: &Connection,
    cursor: Option<&str>,
    limit: usize,
) -> Result<AdminPage, StoreError> {
    // `?1` (the owner) is bound but not used: SQLite allows it.
    let (tasks, next_cursor) = page(conn, "", None, cursor, limit)?;
    Ok(AdminPage {
        tasks: tasks.into_iter().map(Stored::admin).collect(),
        next_cursor,
    })
}

/// Every live task counted per owner and status.
pub(super) fn admin_counts(conn: &Connection) -> Result<TaskCounts, StoreError> {
    let now = to_sql(Timestamp::now().as_millis());
    let mut statement = conn
        .prepare_cached(
            "SELECT owner, status, count(*) FROM tasks \
             WHERE expires_at IS NULL OR expires_at > ?1 GROUP BY owner, status",
        )
        .map_err(backend)?;
    let mut rows = statement.query([now]).map_err(backend)?;
    let mut counts = TaskCounts::default();
    while let Some(row) = rows.next().map_err(backend)? {
        let owner: Option<String> = row.get(0).map_err(backend)?;
        let status: String = row.get(1).map_err(backend)?;
        let n: i64 = row.get(2).map_err(backend)?;
        let status = row::status(&status)?;
        counts.add_many(owner.as_deref(), status, u64::try_from(n).unwrap_or(0));
    }
    Ok(counts)
}
