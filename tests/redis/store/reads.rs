//! `get` is one `HMGET` of the task hash, no script: the outstanding requests
//! of an input round are kept rendered in the hash, and read back exactly
//! as the listing (a script) renders them.

use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{InputRound, TaskSnapshot, TaskState, TaskStore};

use super::redis_server::RedisServer;
use super::{connect, fresh_prefix, new_task, raw, raw_connection};

/// Calls per command name since the last `CONFIG RESETSTAT`.
async fn calls(conn: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let head = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(head.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |count| count.parse().unwrap())
}

fn requests(snapshot: &TaskSnapshot) -> String {
    match &snapshot.state {
        TaskState::InputRequired { requests } => requests.get().to_owned(),
        other => panic!("expected a task waiting for input, got {other:?}"),
    }
}

/// A round whose keys need escaping (quote, backslash, slash, non-ASCII).
fn awkward_round() -> InputRound {
    InputRound {
        requests: vec![
            (
                "1.\"a\\/é".into(),
                raw(r#"{"method":"elicitation/create"}"#),
            ),
            ("1.b".into(), raw(r#"{ "method" : "roots/list" }"#)),
            ("1.c".into(), raw("[1, 2]")),
        ],
        resume: raw("{}"),
    }
}

fn task_key(store: &RedisTaskStore, id: mcp_tasks::TaskId) -> String {
    format!("{{{}}}:task:{id}", store.prefix())
}

#[tokio::test]
async fn a_get_costs_one_hmget_and_no_script() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let mut conn = raw_connection(&server).await;
    let hour = Some(Duration::from_secs(3600));
    let working = new_task(Some("alice"), hour);
    store.create(working.clone()).await.unwrap();
    let waiting = new_task(Some("alice"), hour);
    store.create(waiting.clone()).await.unwrap();
    store
        .require_input(waiting.id, awkward_round())
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
    for _ in 0..50 {
        for id in [working.id, waiting.id] {
            assert!(store.get(id, Some("alice")).await.unwrap().is_some());
            assert!(store.get(id, Some("mallory")).await.unwrap().is_none());
        }
    }
    assert_eq!(calls(&mut conn, "hmget").await, 200);
    assert_eq!(calls(&mut conn, "evalsha").await, 0, "no script per get");
    assert_eq!(calls(&mut conn, "eval").await, 0, "no script per get");
}

#[tokio::test]
async fn the_requests_read_by_get_match_the_listing_through_a_partial_answer() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let task = new_task(Some("alice"), Some(Duration::from_secs(3600)));
    store.create(task.clone()).await.unwrap();
    store.require_input(task.id, awkward_round()).await.unwrap();
    let read = requests(&store.get(task.id, Some("alice")).await.unwrap().unwrap());
    assert_eq!(
        read,
        r#"{"1.\"a\\/é":{"method":"elicitation/create"},"1.b":{ "method" : "roots/list" },"1.c":[1, 2]}"#,
        "keys encoded as JSON strings (no escaped slash), requests verbatim, in order"
    );
    let listed = store.list(Some("alice"), None, 10).await.unwrap();
    assert_eq!(requests(&listed.tasks[0]), read);

    store
        .answer_input(task.id, Some("alice"), vec![("1.b".into(), raw("{}"))])
        .await
        .unwrap();
    let read = requests(&store.get(task.id, Some("alice")).await.unwrap().unwrap());
    assert_eq!(
        read, r#"{"1.\"a\\/é":{"method":"elicitation/create"},"1.c":[1, 2]}"#,
        "the answered request is gone from the next read"
    );
    let listed = store.list(Some("alice"), None, 10).await.unwrap();
    assert_eq!(requests(&listed.tasks[0]), read);

    let answers = vec![("1.c".into(), raw("{}")), ("1.\"a\\/é".into(), raw("{}"))];
    store
        .answer_input(task.id, Some("alice"), answers)
        .await
        .unwrap();
    let snapshot = store.get(task.id, Some("alice")).await.unwrap().unwrap();
    assert!(matches!(snapshot.state, TaskState::Working));
    let mut conn = raw_connection(&server).await;
    let kept: bool = redis::cmd("HEXISTS")
        .arg(task_key(&store, task.id))
        .arg("q")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!kept, "a resumed task keeps no rendered requests");
}

#[tokio::test]
async fn a_round_opened_before_the_task_kept_its_requests_still_reads() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let task = new_task(None, Some(Duration::from_secs(3600)));
    store.create(task.clone()).await.unwrap();
    store.require_input(task.id, awkward_round()).await.unwrap();
    let before = requests(&store.get(task.id, None).await.unwrap().unwrap());
    // What an instance of an earlier version leaves: the round, no `q`.
    let mut conn = raw_connection(&server).await;
    let removed: u32 = redis::cmd("HDEL")
        .arg(task_key(&store, task.id))
        .arg("q")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let after = requests(&store.get(task.id, None).await.unwrap().unwrap());
    assert_eq!(after, before);
    assert!(store.get(task.id, Some("alice")).await.unwrap().is_none());
}
