//! A run counted for a task whose call broke off (`count_attempt`): only a
//! `working` task with a re-run record and runs left runs again, and the
//! count is the one a restart's re-run takes too, and the operator reads;
//! and a lost instance's task that may run again, held as pending
//! (`orphans_held`) from the sweep that claims it until a layer takes it.

use std::time::Duration;

use mcp_tasks::store::Rerun;
use mcp_tasks::{TaskStatus, TaskStore};

use super::redis_server::RedisServer;
use super::{BOUND, connect, connect_with_lease, drop_lease, fresh_prefix, new_task, raw};

#[tokio::test]
async fn a_broken_call_runs_again_while_its_rerun_record_has_runs_left() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let mut task = new_task(Some("alice"), None);
    task.rerun = Some(Rerun {
        call: raw(r#"{"params":{"name":"reindex"}}"#),
        attempts: 2,
    });
    let id = store.create(task).await.unwrap().snapshot.id;
    let attempt = || async { store.admin_get(id).await.unwrap().unwrap().attempt };
    assert_eq!(attempt().await, 1, "the first run");
    let why = || "The call broke off (the SSE stream broke)".to_owned();
    assert_eq!(store.count_attempt(id, why()).await.unwrap(), Some((2, 2)));
    assert_eq!(attempt().await, 2, "the operator sees the run");
    let read = store.get(id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Working);
    let message = read.status_message.unwrap_or_default();
    assert!(
        message.contains("broke off") && message.contains("attempt 2 of 2"),
        "{message}"
    );
    assert_eq!(store.count_attempt(id, why()).await.unwrap(), None, "spent");

    let plain = store.create(new_task(Some("alice"), None)).await.unwrap();
    let plain = plain.snapshot.id;
    assert_eq!(store.count_attempt(plain, why()).await.unwrap(), None);
    store.cancel(plain, Some("alice")).await.unwrap();
    assert_eq!(store.count_attempt(plain, why()).await.unwrap(), None);
}

#[tokio::test]
async fn a_lost_instances_task_that_may_run_again_is_held_as_pending_until_taken() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // A renews every 10 s; its lease vanishing now stands for a crash.
    let a = connect_with_lease(&server, &prefix, Duration::from_secs(30)).await;
    let b = connect_with_lease(&server, &prefix, Duration::from_millis(200)).await;
    let claimed = b.orphan_signal().expect("a Redis store signals its claims");
    let arrived = claimed.notified();
    let mut task = new_task(Some("alice"), None);
    task.rerun = Some(Rerun {
        call: raw(r#"{"params":{"name":"reindex"}}"#),
        attempts: 2,
    });
    let id = a.create(task).await.unwrap().snapshot.id;
    assert_eq!(b.orphans_held(), 0, "A's task is A's while A lives");

    drop_lease(&server, &prefix, &a).await;
    tokio::time::timeout(BOUND, arrived)
        .await
        .expect("B's sweep claims the task");
    assert_eq!(b.orphans_held(), 1, "pending until a layer takes it");
    let orphans = b.orphans().await.unwrap();
    assert_eq!(orphans.len(), 1);
    assert_eq!((orphans[0].id, orphans[0].attempt), (id, 2));
    assert_eq!(b.orphans_held(), 0, "taken");
}
