//! A write that ran although its caller saw an error (its reply lost, or
//! the command held up in Redis past the response timeout) leaves no task
//! `working` with no call behind it: the store looks for what the write
//! did and settles it. A write that only looks doubtful (an answer to a
//! task that runs elsewhere) changes nothing.

use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{InputProgress, TaskStatus, TaskStore};

use super::redis_server::RedisServer;
use super::wait::{BOUND, wait_until};
use super::{connect, fresh_prefix, new_task, raw, raw_connection, waiting_task};

/// A store that gives up on a reply after 100 ms.
async fn impatient(server: &RedisServer, prefix: &str) -> RedisTaskStore {
    RedisTaskStore::builder(server.url())
        .prefix(prefix)
        .response_timeout(Duration::from_millis(100))
        .connect()
        .await
        .expect("connect to the test redis-server")
}

/// Holds every write on the server for 600 ms (`CLIENT PAUSE … WRITE`): a
/// script sent meanwhile runs when the pause ends, after its caller gave up.
async fn pause_writes(conn: &mut redis::aio::MultiplexedConnection) {
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(600)
        .arg("WRITE")
        .query_async::<()>(conn)
        .await
        .unwrap();
}

async fn status_field(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(key)
        .arg("s")
        .query_async(conn)
        .await
        .unwrap()
}

fn answer() -> Vec<(String, Box<serde_json::value::RawValue>)> {
    vec![("1.a".into(), raw(r#"{"action":"accept"}"#))]
}

#[tokio::test]
async fn a_create_that_ran_after_its_caller_gave_up_is_deleted() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = impatient(&server, &fresh_prefix()).await;
    let mut conn = raw_connection(&server).await;
    // The script is loaded, so that the held-up call runs it at once.
    store.create(new_task(Some("alice"), None)).await.unwrap();

    let task = new_task(Some("alice"), Some(Duration::from_secs(60)));
    let key = store.task_key(task.id, Some("alice"));
    pause_writes(&mut conn).await;
    let created = store.create(task.clone()).await;
    assert!(
        created.is_err(),
        "the create outlived the pause: {created:?}"
    );
    // When the pause ends the script runs: a task nobody was told of,
    // `working` under this live instance, with no call behind it.
    wait_until("the held-up create ran", BOUND, || {
        let (mut conn, key) = (conn.clone(), key.clone());
        async move { status_field(&mut conn, &key).await.is_some() }
    })
    .await;
    assert_eq!(store.writes_in_doubt(), 1);

    wait_until("the store deleted the task", BOUND, || async {
        store.get(task.id, Some("alice")).await.unwrap().is_none()
    })
    .await;
    assert_eq!(store.writes_in_doubt(), 0);
    assert_eq!(store.held_stop_signals(), 1, "only the first task's");
}

/// How the caller of a held-up `answer_input` gives up on it.
enum GiveUp {
    /// The store's response timeout (100 ms) ends the call with an error.
    Timeout,
    /// The caller drops the call (its client hung up).
    Drop,
}

/// A round-completing answer held up in Redis past its caller's patience:
/// the script runs when the pause ends, leaving the task `working` under
/// this instance with no call, and the store fails it.
async fn a_held_up_resume_fails_its_task(give_up: GiveUp) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = impatient(&server, &fresh_prefix()).await;
    let mut conn = raw_connection(&server).await;
    // Resumed normally (which also loads the script): left alone below.
    let warm = waiting_task(&store).await;
    let resumed = store.answer_input(warm.id, Some("alice"), answer()).await;
    assert!(matches!(
        resumed,
        Ok(Some(InputProgress::RoundComplete { .. }))
    ));

    let task = waiting_task(&store).await;
    let key = store.task_key(task.id, Some("alice"));
    pause_writes(&mut conn).await;
    let answering = store.answer_input(task.id, Some("alice"), answer());
    match give_up {
        GiveUp::Timeout => assert!(answering.await.is_err(), "the answer outlived the pause"),
        GiveUp::Drop => {
            let dropped = tokio::time::timeout(Duration::from_millis(50), answering).await;
            assert!(dropped.is_err(), "the answer outlived the pause");
        }
    }
    assert_eq!(store.writes_in_doubt(), 1);
    wait_until("the held-up answer ran", BOUND, || {
        let (mut conn, key) = (conn.clone(), key.clone());
        async move { status_field(&mut conn, &key).await.as_deref() != Some("input_required") }
    })
    .await;

    wait_until("the store failed the task", BOUND, || async {
        let read = store.get(task.id, Some("alice")).await.unwrap();
        read.expect("the task is kept").status() == TaskStatus::Failed
    })
    .await;
    let read = store.get(task.id, Some("alice")).await.unwrap().unwrap();
    let message = read.status_message.unwrap_or_default();
    assert!(message.contains("not run again"), "{message}");
    assert_eq!(store.writes_in_doubt(), 0);
    let warm = store.get(warm.id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(warm.status(), TaskStatus::Working);
}

#[tokio::test]
async fn a_resume_that_ran_after_its_caller_timed_out_fails_its_task() {
    a_held_up_resume_fails_its_task(GiveUp::Timeout).await;
}

#[tokio::test]
async fn a_resume_whose_caller_went_away_mid_write_fails_its_task() {
    a_held_up_resume_fails_its_task(GiveUp::Drop).await;
}

#[tokio::test]
async fn a_failed_answer_that_never_ran_leaves_the_retried_resume_alone() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = impatient(&server, &fresh_prefix()).await;
    let mut conn = raw_connection(&server).await;
    let task = waiting_task(&store).await;
    pause_writes(&mut conn).await;
    let answered = store.answer_input(task.id, Some("alice"), answer()).await;
    assert!(answered.is_err(), "the answer outlived the pause");
    assert_eq!(store.writes_in_doubt(), 1);
    // The held-up script is dropped with its connection: it never runs.
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    let key = store.task_key(task.id, Some("alice"));
    assert_eq!(
        status_field(&mut conn, &key).await.as_deref(),
        Some("input_required")
    );

    // The client tries again and this call resumes the task: it runs here.
    let again = loop {
        // The store's connection comes back on its own.
        if let Ok(again) = store.answer_input(task.id, Some("alice"), answer()).await {
            break again;
        }
    };
    assert!(matches!(again, Some(InputProgress::RoundComplete { .. })));
    wait_until("the doubt was settled", BOUND, || async {
        store.writes_in_doubt() == 0
    })
    .await;
    let read = store.get(task.id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(
        read.status(),
        TaskStatus::Working,
        "the running task was left alone"
    );
}

#[tokio::test]
async fn a_create_sent_again_by_the_same_instance_takes_once() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let (store, other) = (
        connect(&server, &prefix).await,
        connect(&server, &prefix).await,
    );
    let task = new_task(Some("alice"), Some(Duration::from_secs(60)));
    store.create(task.clone()).await.unwrap();
    // What a cluster client's retry of the same command does.
    store
        .create(task.clone())
        .await
        .expect("the same create again");
    let listed = store.list(Some("alice"), None, 10).await.unwrap();
    assert_eq!(listed.tasks.len(), 1);
    // Another instance's create of the same id is a collision.
    assert!(other.create(task).await.is_err());
}
