//! Unit tests of [`SqliteTaskStore`] that look inside it: the query plans
//! behind the cost promises, and the schema version check.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{Synchronous, log, schema};
use crate::store::StoreError;
use crate::task::TaskId;

/// A file under the temporary directory, removed with its WAL when dropped.
pub(super) struct TempFile(PathBuf);

impl TempFile {
    pub(super) fn new() -> Self {
        let name = format!("mcp-tasks-unit-{}.db", TaskId::generate().unwrap());
        Self(std::env::temp_dir().join(name))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// The `detail` lines of SQLite's plan for `sql`.
fn plan(conn: &Connection, sql: &str) -> String {
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let details: Vec<String> = statement
        .query_map([], |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    details.join("; ")
}

#[test]
fn listings_walk_their_index_in_order_without_sorting() {
    let file = TempFile::new();
    let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
    let where_live = "(created_at, id) > (1, '') AND (expires_at IS NULL OR expires_at > 5) \
                      ORDER BY created_at, id LIMIT 10";
    for owner in ["'alice'", "NULL"] {
        let by_owner = plan(
            &conn,
            &format!("SELECT * FROM tasks WHERE owner IS {owner} AND {where_live}"),
        );
        assert!(
            by_owner.contains("USING INDEX tasks_by_owner") && !by_owner.contains("TEMP B-TREE"),
            "list of {owner} walks (owner, created_at, id): {by_owner}"
        );
    }
    let all = plan(&conn, &format!("SELECT * FROM tasks WHERE {where_live}"));
    assert!(
        all.contains("USING INDEX tasks_by_creation") && !all.contains("TEMP B-TREE"),
        "admin_list walks (created_at, id): {all}"
    );
    let due = plan(
        &conn,
        "SELECT id FROM tasks WHERE expires_at <= 5 ORDER BY expires_at LIMIT 500",
    );
    assert!(
        due.contains("tasks_by_expiry"),
        "the reaper finds due rows by index: {due}"
    );
}

#[test]
fn a_file_of_a_newer_schema_version_is_refused_and_left_as_it_was() {
    let file = TempFile::new();
    drop(schema::open_writer(file.path(), Synchronous::Normal).unwrap());
    let conn = Connection::open(file.path()).unwrap();
    conn.execute_batch("PRAGMA user_version = 7").unwrap();
    drop(conn);
    let refused = schema::open_writer(file.path(), Synchronous::Full);
    let Err(StoreError::Backend(error)) = refused else {
        panic!("a newer schema is refused");
    };
    assert!(
        error.to_string().contains("schema version 7, newer"),
        "{error}"
    );
    let conn = Connection::open(file.path()).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 7, "the refused file is not touched");
}

#[test]
fn a_database_of_another_program_is_refused_not_taken_over() {
    let file = TempFile::new();
    let conn = Connection::open(file.path()).unwrap();
    conn.execute_batch("CREATE TABLE tasks (name TEXT)")
        .unwrap();
    drop(conn);
    let refused = schema::open_writer(file.path(), Synchronous::Normal);
    assert!(
        matches!(&refused, Err(StoreError::Backend(e)) if e.to_string().contains("another program")),
        "got {:?}",
        refused.err()
    );
}

/// Undoes what version 4 added: the tool column.
const WITHOUT_TOOL: &str = "ALTER TABLE tasks DROP COLUMN tool;";

/// Undoes what version 3 added: the log, its triggers, the hooks.
const WITHOUT_LOG: &str = "DROP TRIGGER tasks_log_create; DROP TRIGGER tasks_log_status; \
     DROP TRIGGER task_events_bound; DROP TABLE task_events; DROP TABLE log_info; \
     DROP TABLE hooks;";

#[test]
fn a_version_1_file_is_upgraded_in_place_and_keeps_its_tasks() {
    let file = TempFile::new();
    {
        let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
        // Back to version 1: without the re-run columns, one task in it.
        conn.execute_batch(WITHOUT_TOOL).unwrap();
        conn.execute_batch(WITHOUT_LOG).unwrap();
        conn.execute_batch(
            "ALTER TABLE tasks DROP COLUMN rerun; ALTER TABLE tasks DROP COLUMN attempt; \
             ALTER TABLE tasks DROP COLUMN attempts; PRAGMA user_version = 1; \
             INSERT INTO tasks (id, status, created_at, updated_at) \
             VALUES ('00000000000000000000000000000001', 'completed', 1, 1);",
        )
        .unwrap();
    }
    let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, schema::VERSION);
    let (attempt, attempts, rerun): (i64, i64, Option<String>) = conn
        .query_row("SELECT attempt, attempts, rerun FROM tasks", [], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .unwrap();
    assert_eq!(
        (attempt, attempts, rerun),
        (1, 1, None),
        "runs at most once"
    );
}

#[test]
fn the_log_keeps_its_last_changes_and_a_reader_behind_them_reads_truncated() {
    let file = TempFile::new();
    let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
    let kept = schema::LOG_KEPT;
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {kept} + 5) \
         INSERT INTO task_events (owner, task, status, created_at, updated_at, logged_at) \
         SELECT NULL, printf('%032x', i), 'working', 1, 1, 1 FROM n"
    ))
    .unwrap();
    let (count, oldest): (i64, i64) = conn
        .query_row("SELECT count(*), min(seq) FROM task_events", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (count, oldest),
        (kept, 6),
        "the last LOG_KEPT changes are kept"
    );
    let epoch: String = conn
        .query_row("SELECT epoch FROM log_info", [], |row| row.get(0))
        .unwrap();
    let behind = log::read(&conn, None, Some(&format!("s{epoch}-2")), 2).unwrap();
    assert!(behind.truncated, "changes 3 to 5 were dropped");
    assert_eq!(behind.events[0].cursor, format!("s{epoch}-6"));
    let caught_up = log::read(&conn, None, Some(&format!("s{epoch}-5")), 2).unwrap();
    assert!(!caught_up.truncated, "nothing after 5 was dropped");
    let foreign = log::read(&conn, None, Some("s00000000-3"), 2).unwrap();
    assert!(
        foreign.truncated || epoch == "00000000",
        "a cursor of another file reads from the oldest, truncated"
    );
    let ahead = log::read(&conn, None, Some(&format!("s{epoch}-{}", kept + 6)), 2);
    assert!(matches!(ahead, Err(StoreError::InvalidCursor)));
}

#[test]
fn a_version_2_file_gains_the_log_and_logs_from_then_on() {
    let file = TempFile::new();
    {
        let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
        conn.execute_batch(WITHOUT_TOOL).unwrap();
        conn.execute_batch(WITHOUT_LOG).unwrap();
        conn.execute_batch(
            "PRAGMA user_version = 2; \
             INSERT INTO tasks (id, status, created_at, updated_at) \
             VALUES ('00000000000000000000000000000001', 'working', 1, 1);",
        )
        .unwrap();
    }
    let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
    conn.execute_batch(
        "UPDATE tasks SET status = 'completed', result = '{}'; \
         UPDATE tasks SET status_message = 'only a message';",
    )
    .unwrap();
    let logged: Vec<String> = conn
        .prepare("SELECT status FROM task_events ORDER BY seq")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        logged,
        ["completed"],
        "a status change is logged, a message is not"
    );
}

#[tokio::test]
async fn a_version_3_file_gains_the_tool_column_and_its_tasks_read_no_tool() {
    use crate::store::{NewTask, Quota, TaskStore};
    use crate::task::{TaskStatus, Timestamp};

    let file = TempFile::new();
    let old = TaskId::from_u128(1);
    {
        let conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
        conn.execute_batch(WITHOUT_TOOL).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA user_version = 3; \
             INSERT INTO tasks (id, owner, status, result, created_at, updated_at) \
             VALUES ('{old}', 'alice', 'completed', '{{}}', 1, 1);"
        ))
        .unwrap();
    }
    let store = super::SqliteTaskStore::open(file.path()).await.unwrap();
    let read = store
        .admin_get(old)
        .await
        .unwrap()
        .expect("the old task is kept");
    assert_eq!(read.owner.as_deref(), Some("alice"));
    assert_eq!(read.tool, None, "a task of version 3 has no known tool");
    assert_eq!(read.attempt, 1);
    assert_eq!(read.snapshot.status(), TaskStatus::Completed);
    let id = TaskId::generate().unwrap();
    let new = NewTask {
        id,
        owner: None,
        created_at: Timestamp::now(),
        ttl: None,
        poll_interval: None,
        status_message: None,
        quota: Quota::default(),
        tool: Some("slow_compute".into()),
        rerun: None,
    };
    store.create(new).await.unwrap();
    let read = store.admin_get(id).await.unwrap().expect("created");
    assert_eq!(
        read.tool.as_deref(),
        Some("slow_compute"),
        "new tasks keep their tool"
    );
    store.close().await;
    let conn = Connection::open(file.path()).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, schema::VERSION);
}
