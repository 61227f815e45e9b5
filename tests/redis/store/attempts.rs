//! A run counted for a task whose call broke off (`count_attempt`): only a
//! `working` task with a re-run record and runs left runs again, and the
//! count is the one a restart's re-run takes too, and the operator reads.

use mcp_tasks::store::Rerun;
use mcp_tasks::{TaskStatus, TaskStore};

use super::redis_server::RedisServer;
use super::{connect, fresh_prefix, new_task, raw};

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
