//! `SqliteTaskStore` keeps the store contract, and its tasks outlive the
//! store, and the process, that created them. Every store opens a fresh
//! file under the system's temporary directory, removed at the end.

use crate::contract;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::store::SqliteTaskStore;
use mcp_tasks::{
    NewTask, Quota, Rerun, StoreError, TaskId, TaskState, TaskStatus, TaskStore, Timestamp,
};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Barrier;

/// A task file under the temporary directory, removed (with its WAL and
/// shared-memory files) when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> Self {
        let name = format!("mcp-tasks-test-{}.db", TaskId::generate().unwrap());
        Self(std::env::temp_dir().join(name))
    }

    fn path(&self) -> &Path {
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

/// Files of the stores `fresh` opened, removed at the end of the test.
#[derive(Clone, Default)]
struct Files(Arc<std::sync::Mutex<Vec<TempFile>>>);

impl Files {
    /// A store on a new file.
    async fn fresh(&self) -> SqliteTaskStore {
        let file = TempFile::new();
        let store = SqliteTaskStore::open(file.path()).await.unwrap();
        self.0.lock().unwrap().push(file);
        store
    }
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

fn new_task(owner: Option<&str>, ttl: Option<Duration>) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        owner: owner.map(str::to_owned),
        created_at: Timestamp::now(),
        ttl,
        poll_interval: Some(Duration::from_millis(250)),
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    }
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_store_contract() {
    let files = Files::default();
    contract::run(|| files.fresh()).await;
}

#[tokio::test]
async fn the_sqlite_store_announces_its_changes() {
    let files = Files::default();
    contract::changes::run(|| files.fresh()).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_events_contract() {
    let files = Files::default();
    contract::events::run(|| files.fresh()).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_operators_contract() {
    let files = Files::default();
    contract::admin::run(|| files.fresh()).await;
}

/// The contract's creates come from one task; here they race on several
/// threads, and the writer commits them in groups.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_racing_on_several_threads_never_overshoot_a_quota() {
    let files = Files::default();
    let store = files.fresh().await;
    let quota = Quota {
        per_owner: Some(10),
        total: Some(15),
    };
    let start = Arc::new(Barrier::new(100));
    let creates: Vec<_> = (0..100)
        .map(|i| {
            let (store, start) = (store.clone(), start.clone());
            let owner = if i % 2 == 0 { "alice" } else { "bob" };
            tokio::spawn(async move {
                let mut task = new_task(Some(owner), None);
                task.quota = quota;
                start.wait().await;
                match store.create(task).await {
                    Ok(_) => true,
                    Err(StoreError::QuotaExceeded(_)) => false,
                    Err(other) => panic!("a refusal is QuotaExceeded, got {other:?}"),
                }
            })
        })
        .collect();
    let mut admitted = 0;
    for create in creates {
        admitted += usize::from(create.await.unwrap());
    }
    assert_eq!(admitted, 15, "the total cap holds exactly");
    for owner in ["alice", "bob"] {
        let held = store
            .list(Some(owner), None, 100)
            .await
            .unwrap()
            .tasks
            .len();
        assert!(held <= 10, "{owner} holds {held}, past the per-owner cap");
    }
    let counts = store.admin_counts().await.unwrap();
    assert_eq!(counts.total(), 15, "refused tasks are not stored");
}

#[tokio::test]
async fn a_reopened_store_finds_every_task_with_its_terminal_result() {
    let file = TempFile::new();
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    let ttl = Some(Duration::from_secs(600));
    let done = store.create(new_task(Some("alice"), ttl)).await.unwrap();
    let done = done.snapshot.id;
    store
        .complete(done, raw(r#"{"content":[1]}"#))
        .await
        .unwrap();
    let broken = store
        .create(new_task(None, None))
        .await
        .unwrap()
        .snapshot
        .id;
    let error = r#"{"code":-32603,"message":"the disk is full"}"#;
    store.fail(broken, raw(error)).await.unwrap();
    let running = store
        .create(new_task(Some("bob"), ttl))
        .await
        .unwrap()
        .snapshot
        .id;
    store.close().await;
    assert!(
        matches!(
            store.get(done, Some("alice")).await,
            Err(StoreError::Backend(_))
        ),
        "a closed store answers a backend error, not \"not found\""
    );

    let reopened = SqliteTaskStore::open(file.path()).await.unwrap();
    let read = reopened.get(done, Some("alice")).await.unwrap().unwrap();
    match read.state {
        TaskState::Completed { result } => assert_eq!(result.get(), r#"{"content":[1]}"#),
        other => panic!("the result survives the store, got {other:?}"),
    }
    assert_eq!(read.ttl, ttl);
    let read = reopened.get(broken, None).await.unwrap().unwrap();
    assert!(matches!(&read.state, TaskState::Failed { error: e } if e.get() == error));
    assert_eq!(read.status_message.as_deref(), Some("the disk is full"));
    let read = reopened.get(running, Some("bob")).await.unwrap().unwrap();
    assert_eq!(
        read.status(),
        TaskStatus::Failed,
        "a task left working by the previous process is failed, never left working"
    );
    assert!(
        read.status_message
            .as_deref()
            .is_some_and(|m| m.contains("stopped while this task ran")),
        "the reason says the server stopped, got {:?}",
        read.status_message
    );
    assert!(
        reopened
            .get(running, Some("alice"))
            .await
            .unwrap()
            .is_none()
    );
    let listed = reopened.admin_list(None, 10).await.unwrap();
    assert_eq!(listed.tasks.len(), 3, "every task is found again");
    reopened.close().await;
}

#[tokio::test]
async fn the_log_and_the_hooks_outlive_the_store_and_cursors_keep_increasing() {
    let file = TempFile::new();
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    let start = store.status_events(None, None, 10).await.unwrap().cursor;
    let done = store
        .create(new_task(None, None))
        .await
        .unwrap()
        .snapshot
        .id;
    store.complete(done, raw("{}")).await.unwrap();
    let running = store
        .create(new_task(None, None))
        .await
        .unwrap()
        .snapshot
        .id;
    let hook = mcp_tasks::store::Hook {
        id: format!("sub_{:032x}", 7),
        owner: None,
        url: "https://example.com/hook".into(),
        name: "task.status".into(),
        arguments: "{}".into(),
        secret: "whsec_x".into(),
        expires_at: None,
        cursor: start.clone(),
    };
    store.put_hook(hook.clone(), 10, 10).await.unwrap();
    store.close().await;
    let reopened = SqliteTaskStore::open(file.path()).await.unwrap();
    assert_eq!(
        reopened.hooks().await.unwrap(),
        vec![hook],
        "hooks outlive the store"
    );
    let next = reopened
        .create(new_task(None, None))
        .await
        .unwrap()
        .snapshot
        .id;
    let page = reopened
        .status_events(None, Some(&start), 10)
        .await
        .unwrap();
    let seen: Vec<_> = page
        .events
        .iter()
        .map(|e| (e.task.id, e.task.status()))
        .collect();
    use TaskStatus::{Completed, Failed, Working};
    assert_eq!(
        seen,
        [
            (done, Working),
            (done, Completed),
            (running, Working),
            (running, Failed),
            (next, Working)
        ],
        "the log outlives the store; the reopen's failing of a task left running is logged"
    );
    assert!(!page.truncated && !page.more);
    let mut ids: Vec<_> = page.events.iter().map(|e| e.id.clone()).collect();
    ids.dedup();
    assert_eq!(
        ids.len(),
        5,
        "a reopened store gives new ids, never old ones again"
    );
    let resumed = reopened
        .status_events(None, Some(&page.events[3].cursor), 10)
        .await
        .unwrap();
    assert_eq!(
        resumed.events.len(),
        1,
        "a cursor of before the reopen resumes exactly"
    );
    assert_eq!(resumed.events[0].task.id, next);
    reopened.close().await;
}

#[tokio::test]
async fn an_expired_task_is_reaped_from_the_file_without_any_read() {
    let file = TempFile::new();
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    let mut feed = store.changes().unwrap();
    let created = store
        .create(new_task(None, Some(Duration::from_millis(100))))
        .await
        .unwrap();
    let kept = store
        .create(new_task(None, None))
        .await
        .unwrap()
        .snapshot
        .id;
    let reaped = tokio::time::timeout(Duration::from_secs(5), created.stop.cancelled()).await;
    assert!(
        reaped.is_ok(),
        "the reaper fires the stop signal on its own"
    );
    let announced = tokio::time::timeout(Duration::from_secs(1), feed.recv()).await;
    assert_eq!(
        announced.unwrap().unwrap(),
        mcp_tasks::TaskChange::Changed(created.snapshot.id),
        "the reaped task is announced"
    );
    assert_eq!(
        store.held_stop_signals(),
        1,
        "only the live task's signal is held"
    );
    store.close().await;
    // A fresh store on the file, whose own reaper has nothing to do yet:
    // the row is gone from the file, not just hidden by the deadline.
    let reopened = SqliteTaskStore::open(file.path()).await.unwrap();
    let page = reopened.admin_list(None, 10).await.unwrap();
    let ids: Vec<TaskId> = page.tasks.iter().map(|task| task.snapshot.id).collect();
    assert_eq!(ids, vec![kept]);
    assert!(
        reopened
            .admin_delete(created.snapshot.id)
            .await
            .unwrap()
            .is_none()
    );
    reopened.close().await;
}

/// Offset of the schema version (`PRAGMA user_version`) in the header of a
/// SQLite file: four bytes, big-endian (sqlite.org/fileformat.html).
const USER_VERSION_OFFSET: usize = 60;

#[tokio::test]
async fn a_file_of_a_newer_schema_version_is_refused_with_a_clear_error() {
    let file = TempFile::new();
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    store.create(new_task(None, None)).await.unwrap();
    // Closed: the WAL is checkpointed into the file, whose header we edit.
    store.close().await;
    drop(store);
    let mut bytes = std::fs::read(file.path()).unwrap();
    let version = &mut bytes[USER_VERSION_OFFSET..USER_VERSION_OFFSET + 4];
    assert_eq!(version, 4u32.to_be_bytes(), "this build writes version 4");
    version.copy_from_slice(&5u32.to_be_bytes());
    std::fs::File::create(file.path())
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let refused = SqliteTaskStore::open(file.path()).await;
    let message = match refused {
        Err(StoreError::Backend(error)) => error.to_string(),
        other => panic!("a newer file is a backend error, got {other:?}"),
    };
    assert!(
        message.contains("schema version 5") && message.contains("newer"),
        "the error says why: {message}"
    );
}

/// The child's environment variable: the file it creates its task in.
const CHILD_FILE: &str = "MCP_TASKS_SQLITE_CHILD_FILE";

/// Runs only in the child process of the SIGKILL test: creates a completed
/// task and a running one, prints their ids, and waits to be killed.
#[tokio::test]
#[ignore = "the child process of a_task_created_before_a_sigkill_is_found_by_the_next_process"]
async fn sigkill_child() {
    let Ok(path) = std::env::var(CHILD_FILE) else {
        return;
    };
    let store = SqliteTaskStore::open(path).await.unwrap();
    let done = store.create(new_task(Some("alice"), None)).await.unwrap();
    let done = done.snapshot.id;
    store
        .complete(done, raw(r#"{"content":["done"]}"#))
        .await
        .unwrap();
    let running = store.create(new_task(Some("alice"), None)).await.unwrap();
    println!("CREATED {done} {}", running.snapshot.id);
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_task_created_before_a_sigkill_is_found_by_the_next_process() {
    use std::os::unix::process::ExitStatusExt;

    let file = TempFile::new();
    // The harness names a test by its module path, without the crate's name.
    let child_test = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::sigkill_child"),
        None => "sigkill_child".to_owned(),
    };
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            &child_test,
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_FILE, file.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            // The harness prints `test sigkill_child ... ` before it.
            if let Some((_, ids)) = line.split_once("CREATED ") {
                return ids.to_owned();
            }
        }
        panic!("the child ended without creating its tasks");
    })
    .await
    .expect("the child creates its tasks within a minute");
    // Killed right after `create` returned: no destructor, no checkpoint.
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.signal(), Some(9), "the child died of SIGKILL");

    let (done, running) = line.split_once(' ').unwrap();
    let (done, running) = (
        TaskId::parse(done).unwrap(),
        TaskId::parse(running).unwrap(),
    );
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    let read = store.get(done, Some("alice")).await.unwrap();
    let read = read.expect("a completed task survives kill -9");
    assert!(
        matches!(&read.state, TaskState::Completed { result } if result.get() == r#"{"content":["done"]}"#)
    );
    let read = store.get(running, Some("alice")).await.unwrap();
    let read = read.expect("a task whose create returned survives kill -9");
    assert_eq!(
        read.status(),
        TaskStatus::Failed,
        "the killed process's running task is failed with a reason"
    );
    store.close().await;
}

#[tokio::test]
async fn a_file_serves_one_store_at_a_time() {
    let file = TempFile::new();
    let first = SqliteTaskStore::open(file.path()).await.unwrap();
    let second = SqliteTaskStore::open(file.path()).await;
    match second {
        Err(StoreError::Backend(error)) => assert!(
            error.to_string().contains("in use by another task store"),
            "a clear reason, got {error}"
        ),
        Err(other) => panic!("a backend error, got {other:?}"),
        Ok(_) => panic!("a second store opened a file the first holds"),
    }
    first.close().await;
    let again = SqliteTaskStore::open(file.path()).await;
    assert!(again.is_ok(), "the file is free once its store is closed");
    drop(again);
    drop(first);
}

/// Alice's task whose call may run `attempts` times in all.
fn rerun_task(attempts: u32) -> mcp_tasks::NewTask {
    let mut task = new_task(Some("alice"), Some(Duration::from_secs(600)));
    task.rerun = Some(Rerun {
        call: raw(r#"{"params":{"name":"reindex"}}"#),
        attempts,
    });
    task
}

#[tokio::test]
async fn a_task_that_may_run_again_is_handed_out_once_with_its_next_attempt() {
    let file = TempFile::new();
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    let id = store.create(rerun_task(3)).await.unwrap().snapshot.id;
    assert!(
        store.orphans().await.unwrap().is_empty(),
        "a task of this process is no orphan"
    );
    assert_eq!(store.orphans_held(), 0);
    store.close().await;

    let reopened = SqliteTaskStore::open(file.path()).await.unwrap();
    let read = reopened.get(id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Working);
    assert!(
        read.status_message
            .as_deref()
            .is_some_and(|m| m.contains("attempt 2 of 3")),
        "{:?}",
        read.status_message
    );
    assert_eq!(reopened.orphans_held(), 1, "held until a layer takes it");
    let orphans = reopened.orphans().await.unwrap();
    assert_eq!(reopened.orphans_held(), 0, "taken");
    assert_eq!(orphans.len(), 1);
    let orphan = &orphans[0];
    assert_eq!((orphan.id, orphan.attempt), (id, 2));
    assert_eq!(orphan.owner.as_deref(), Some("alice"));
    assert_eq!(orphan.rerun.call.get(), r#"{"params":{"name":"reindex"}}"#);
    assert!(
        reopened.orphans().await.unwrap().is_empty(),
        "each orphan is handed out once"
    );
    reopened.cancel(id, Some("alice")).await.unwrap();
    assert!(
        orphan.stop.is_cancelled(),
        "a cancel fires the stop signal handed out with the orphan"
    );
    reopened.close().await;
}

#[tokio::test]
async fn a_broken_call_is_counted_as_a_run_with_those_a_restart_takes() {
    let file = TempFile::new();
    let store = SqliteTaskStore::open(file.path()).await.unwrap();
    let id = store.create(rerun_task(3)).await.unwrap().snapshot.id;
    let attempt = |store: SqliteTaskStore| async move {
        let read = store.admin_get(id).await.unwrap();
        read.expect("the operator finds the task").attempt
    };
    assert_eq!(attempt(store.clone()).await, 1, "the first run");
    let why = || "The call broke off (the SSE stream broke)".to_owned();
    assert_eq!(store.count_attempt(id, why()).await.unwrap(), Some((2, 3)));
    assert_eq!(attempt(store.clone()).await, 2, "the operator sees the run");
    let read = store.get(id, Some("alice")).await.unwrap().unwrap();
    let message = read.status_message.unwrap_or_default();
    assert!(
        message.contains("broke off") && message.contains("attempt 2 of 3"),
        "{message}"
    );
    store.close().await;

    // The restart's re-run is the third and last.
    let reopened = SqliteTaskStore::open(file.path()).await.unwrap();
    let orphans = reopened.orphans().await.unwrap();
    assert_eq!(orphans.len(), 1);
    assert_eq!(orphans[0].attempt, 3);
    assert_eq!(attempt(reopened.clone()).await, 3, "and the restart's");
    assert_eq!(
        reopened.count_attempt(id, why()).await.unwrap(),
        None,
        "spent"
    );
    let plain = reopened.create(new_task(None, None)).await.unwrap();
    let plain = plain.snapshot.id;
    assert_eq!(reopened.count_attempt(plain, why()).await.unwrap(), None);
    reopened.close().await;
}
