//! The file's layout: one `tasks` table an operator can read with the
//! `sqlite3` shell, its indexes, the pragmas every connection sets, and the
//! schema version kept in `PRAGMA user_version`.
//!
//! | Column           | Holds                                                         |
//! |------------------|---------------------------------------------------------------|
//! | `id`             | the task id as on the wire: 32 lowercase hex digits           |
//! | `owner`          | the owner key; `NULL` for a task created without a principal  |
//! | `status`         | `working`, `input_required`, `completed`, `failed`, `cancelled` |
//! | `status_message` | the status message, if any                                    |
//! | `created_at`     | creation time, ms since the Unix epoch                        |
//! | `updated_at`     | last change, ms since the Unix epoch                          |
//! | `ttl`            | lifetime from creation, ms; `NULL` is unlimited               |
//! | `expires_at`     | `created_at + ttl`, ms; `NULL` never                          |
//! | `poll_interval`  | suggested polling interval, ms                                |
//! | `counted`        | 1 when created under a quota (counts against it while live)   |
//! | `result`         | `completed`: the inner result, JSON                           |
//! | `error`          | `failed`: the JSON-RPC error object, JSON                     |
//! | `input_requests` | `input_required`: the outstanding requests, a JSON object     |
//! | `input_answers`  | `input_required`: the answers so far, a JSON object           |
//! | `input_resume`   | `input_required`: what the layer needs to re-issue the call   |
//! | `rerun`          | the call as the layer would send it again after a restart; `NULL`: run at most once |
//! | `attempt`        | how many times the call was started (1 at creation)          |
//! | `attempts`       | how many times it may start in all                           |
//! | `tool`           | the name of the tool whose call made the task; `NULL`: unknown |
//!
//! Version 2 added `rerun`, `attempt` and `attempts`; a version 1 file is
//! upgraded in place at open (its tasks run at most once, as before).
//! Version 4 added `tool`, upgraded in place too (the tasks already in the
//! file read no tool).
//!
//! Version 3 added the log of status changes and the webhook subscriptions
//! (task events), upgraded in place too (the log of an upgraded file starts
//! empty):
//!
//! | Table         | Holds                                                                      |
//! |---------------|----------------------------------------------------------------------------|
//! | `task_events` | one row per status change: `seq` (AUTOINCREMENT, never reused), the owner, the task's id, status, message, times, TTL and poll interval right after it (no payload), `logged_at` (ms) |
//! | `log_info`    | one row: `epoch`, 8 hex digits drawn when the log was created, so a cursor of another file is not read as a position of this one |
//! | `hooks`       | one row per webhook subscription: its key, secret, expiry (ms; `NULL` never) and delivery cursor |
//!
//! | Trigger             | Writes                                                       | Why                                                   |
//! |---------------------|--------------------------------------------------------------|-------------------------------------------------------|
//! | `tasks_log_create`  | a `task_events` row for every inserted task (`working`)     | the change is logged in the very statement that makes it, whatever path wrote it (a job, the recovery at open) |
//! | `tasks_log_status`  | a `task_events` row when an `UPDATE` changes `status`       | a message-only update is not a status change          |
//! | `task_events_bound` | deletes rows [`LOG_KEPT`] or more behind the newest one      | bounded retention, pruned in the writer's transaction |
//!
//! | Index               | Serves                                                   | Why                              |
//! |---------------------|----------------------------------------------------------|----------------------------------|
//! | `tasks_by_owner`    | `list`: `(owner, created_at, id)`                        | O(log n + page) per owner        |
//! | `tasks_by_creation` | `admin_list`: `(created_at, id)`                         | O(log n + page) over every owner |
//! | `tasks_by_expiry`   | the reaper: `expires_at`                                 | the due rows and the next deadline without a scan |
//! | `tasks_counted`     | quotas: `(owner, expires_at)` of the counted rows        | a count reads only counted rows  |
//! | `task_events_by_owner` | `status_events`: `(owner, seq)`                       | O(log n + page) per owner        |
//!
//! Ids are fixed-width lowercase hex, so their text order is their numeric
//! order, and `(created_at, id)` orders exactly like the memory store's
//! `(created ms, id)` keys and the crate's [`ListCursor`](crate::store::ListCursor).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::backend;
use super::sync::Synchronous;
use crate::store::StoreError;

/// The schema this build writes and reads.
pub(super) const VERSION: i64 = 4;

/// How many status changes the log keeps, all owners together.
pub(super) const LOG_KEPT: i64 = 100_000;

/// How long a connection waits for another one's lock (another process
/// writing the same file, or a checkpoint) before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const CREATE: &str = "
CREATE TABLE tasks (
    id             TEXT PRIMARY KEY NOT NULL,
    owner          TEXT,
    status         TEXT NOT NULL,
    status_message TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    ttl            INTEGER,
    expires_at     INTEGER,
    poll_interval  INTEGER,
    counted        INTEGER NOT NULL DEFAULT 0,
    result         TEXT,
    error          TEXT,
    input_requests TEXT,
    input_answers  TEXT,
    input_resume   TEXT,
    rerun          TEXT,
    attempt        INTEGER NOT NULL DEFAULT 1,
    attempts       INTEGER NOT NULL DEFAULT 1,
    tool           TEXT
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);
CREATE INDEX tasks_by_creation ON tasks (created_at, id);
CREATE INDEX tasks_by_expiry ON tasks (expires_at);
CREATE INDEX tasks_counted ON tasks (owner, expires_at) WHERE counted = 1;
";

/// The log of status changes and the webhook subscriptions (version 3).
fn log_tables() -> String {
    let row = "(owner, task, status, status_message, created_at, updated_at, ttl, \
               poll_interval, logged_at) VALUES (new.owner, new.id, new.status, \
               new.status_message, new.created_at, new.updated_at, new.ttl, \
               new.poll_interval, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))";
    format!(
        "
CREATE TABLE task_events (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner          TEXT,
    task           TEXT NOT NULL,
    status         TEXT NOT NULL,
    status_message TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    ttl            INTEGER,
    poll_interval  INTEGER,
    logged_at      INTEGER NOT NULL
);
CREATE INDEX task_events_by_owner ON task_events (owner, seq);
CREATE TABLE log_info (epoch TEXT NOT NULL);
INSERT INTO log_info (epoch) VALUES (lower(hex(randomblob(4))));
CREATE TABLE hooks (
    id         TEXT PRIMARY KEY NOT NULL,
    owner      TEXT,
    url        TEXT NOT NULL,
    name       TEXT NOT NULL,
    arguments  TEXT NOT NULL,
    secret     TEXT NOT NULL,
    expires_at INTEGER,
    cursor     TEXT NOT NULL
);
CREATE TRIGGER tasks_log_create AFTER INSERT ON tasks BEGIN
    INSERT INTO task_events {row};
END;
CREATE TRIGGER tasks_log_status AFTER UPDATE OF status ON tasks
WHEN old.status IS NOT new.status BEGIN
    INSERT INTO task_events {row};
END;
CREATE TRIGGER task_events_bound AFTER INSERT ON task_events BEGIN
    DELETE FROM task_events WHERE seq <= new.seq - {LOG_KEPT};
END;
"
    )
}

/// Version 1 to 2: what a re-run needs.
const UPGRADE_FROM_1: &str = "
ALTER TABLE tasks ADD COLUMN rerun TEXT;
ALTER TABLE tasks ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
";

/// Version 3 to 4: the tool of each task, unknown for those already there.
const UPGRADE_FROM_3: &str = "ALTER TABLE tasks ADD COLUMN tool TEXT;";

/// Opens (creating it if needed) the writer's connection: WAL journal, the
/// chosen sync level, and the schema created or checked.
pub(super) fn open_writer(path: &Path, synchronous: Synchronous) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path).map_err(|e| opening(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(backend)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::backend(format!(
            "{}: SQLite would not switch to WAL journal mode (it stays in {mode:?})",
            path.display()
        )));
    }
    let level = synchronous.pragma();
    conn.execute_batch(&format!("PRAGMA synchronous = {level}"))
        .map_err(backend)?;
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// Opens a reader's connection on a file the writer already prepared.
pub(super) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| opening(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    conn.execute_batch("PRAGMA query_only = ON")
        .map_err(backend)?;
    Ok(conn)
}

fn opening(path: &Path, error: rusqlite::Error) -> StoreError {
    StoreError::backend(format!("cannot open {}: {error}", path.display()))
}

/// Creates the schema in a new file, accepts this version, and refuses a
/// file written by a newer build (or one that is not a task file).
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    // One write lock from the check to the creation: two processes opening
    // a new file at once do not both create the table.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(backend)?;
    match version {
        0 => {
            tx.execute_batch(&format!("{CREATE}{}", log_tables())).map_err(|e| {
                StoreError::backend(format!(
                    "{}: cannot create the tasks table (is this another program's database?): {e}",
                    path.display()
                ))
            })?;
            tx.execute_batch(&format!("PRAGMA user_version = {VERSION}"))
                .map_err(backend)?;
        }
        1..=3 => {
            if version == 1 {
                tx.execute_batch(UPGRADE_FROM_1).map_err(backend)?;
            }
            if version <= 2 {
                tx.execute_batch(&log_tables()).map_err(backend)?;
            }
            tx.execute_batch(UPGRADE_FROM_3).map_err(backend)?;
            tx.execute_batch(&format!("PRAGMA user_version = {VERSION}"))
                .map_err(backend)?;
        }
        VERSION => {}
        newer if newer > VERSION => {
            return Err(StoreError::backend(format!(
                "{}: the task file has schema version {newer}, newer than this build of \
                 mcp-tasks knows ({VERSION}); open it with a newer mcp-tasks",
                path.display()
            )));
        }
        other => {
            return Err(StoreError::backend(format!(
                "{}: unknown task file schema version {other}",
                path.display()
            )));
        }
    }
    tx.commit().map_err(backend)
}
