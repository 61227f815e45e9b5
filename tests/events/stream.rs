//! `events/stream`: the first message, each change pushed with its cursor,
//! heartbeats, and a stream opened again from the last cursor it delivered
//! that replays what happened while it was closed.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::client::{McpClient, OpenCall};
use super::support::listen::{SUBSCRIPTION_ID, next};
use super::support::wait::{BOUND, wait_until};
use super::{NAME, USER_HEADER, serve, start_as, status_as};
use mcp_tasks::EventsConfig;

async fn open(client: &McpClient, cursor: Value, user: &str) -> (OpenCall, u64) {
    let id = client.next_id();
    let body = client.build_request(
        id,
        "events/stream",
        json!({"name": NAME, "arguments": {}, "cursor": cursor}),
        false,
    );
    let mut headers = McpClient::standard_headers("events/stream", Some(NAME));
    headers.push((USER_HEADER.to_owned(), user.to_owned()));
    (client.open_post(id, &headers, body.to_string()).await, id)
}

/// The next `notifications/events/event` (heartbeats skipped): its params.
async fn next_event(stream: &mut OpenCall, id: u64) -> Value {
    loop {
        let message = next(stream).await;
        assert_eq!(message["params"]["_meta"][SUBSCRIPTION_ID], id, "{message}");
        match message["method"].as_str() {
            Some("notifications/events/event") => return message["params"].clone(),
            Some("notifications/events/heartbeat") => continue,
            _ => panic!("not an event: {message}"),
        }
    }
}

fn change(params: &Value) -> (String, String) {
    (
        params["data"]["taskId"].as_str().unwrap().to_owned(),
        params["data"]["status"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_stream_that_reopens_from_its_last_cursor_misses_no_change() {
    let layered = serve(EventsConfig::new().heartbeat(Duration::from_millis(200))).await;
    let client = layered.client();
    let (mut stream, id) = open(&client, Value::Null, "alice").await;
    let active = next(&mut stream).await;
    assert_eq!(active["method"], "notifications/events/active", "{active}");
    assert_eq!(active["params"]["truncated"], false);
    assert!(active["params"]["cursor"].is_string());

    let first = start_as(&client, "alice", 0.3).await;
    let working = next_event(&mut stream, id).await;
    assert_eq!(change(&working), (first.clone(), "working".into()));
    assert_eq!(working["name"], NAME);
    let completed = next_event(&mut stream, id).await;
    assert_eq!(change(&completed), (first.clone(), "completed".into()));
    let cursor = completed["cursor"].as_str().unwrap().to_owned();
    // A quiet stream gets heartbeats with its position.
    let heartbeat = next(&mut stream).await;
    assert_eq!(
        heartbeat["method"], "notifications/events/heartbeat",
        "{heartbeat}"
    );
    assert_eq!(heartbeat["params"]["cursor"], cursor.as_str());
    drop(stream);

    // Closed: a task runs and ends.
    let second = start_as(&client, "alice", 0.3).await;
    wait_until("the second task completes", BOUND, || async {
        status_as(&client, "alice", &second).await == "completed"
    })
    .await;

    let (mut stream, id) = open(&client, json!(cursor), "alice").await;
    let active = next(&mut stream).await;
    assert_eq!(active["params"]["truncated"], false, "{active}");
    assert_eq!(
        change(&next_event(&mut stream, id).await),
        (second.clone(), "working".into())
    );
    assert_eq!(
        change(&next_event(&mut stream, id).await),
        (second, "completed".into())
    );
}

#[tokio::test]
async fn streams_past_the_cap_are_refused_with_the_limit() {
    let layered = serve(EventsConfig::new().max_streams(1, 10)).await;
    let client = layered.client();
    let (mut kept, _) = open(&client, Value::Null, "alice").await;
    assert_eq!(
        next(&mut kept).await["method"],
        "notifications/events/active"
    );
    let (mut refused, _) = open(&client, Value::Null, "alice").await;
    let answer = next(&mut refused).await;
    assert_eq!(answer["error"]["code"], -32013, "{answer}");
    assert_eq!(answer["error"]["data"]["max"], 1);
    // Another principal has room of its own.
    let (mut bobs, _) = open(&client, Value::Null, "bob").await;
    assert_eq!(
        next(&mut bobs).await["method"],
        "notifications/events/active"
    );
}

#[tokio::test]
async fn a_replay_longer_than_the_streams_buffer_arrives_whole() {
    let layered = serve(EventsConfig::new()).await;
    let client = layered.client();
    let (mut stream, _) = open(&client, Value::Null, "alice").await;
    let active = next(&mut stream).await;
    let cursor = active["params"]["cursor"].as_str().unwrap().to_owned();
    drop(stream);
    // 50 tasks created and completed while no stream is open: 100 changes,
    // more than the 64 a stream holds unread.
    let store = &layered.store;
    for _ in 0..50 {
        let task = mcp_tasks::NewTask {
            id: mcp_tasks::TaskId::generate().unwrap(),
            owner: Some("alice".to_owned()),
            created_at: mcp_tasks::Timestamp::now(),
            ttl: Some(Duration::from_secs(600)),
            poll_interval: None,
            status_message: None,
            quota: mcp_tasks::Quota::default(),
            tool: None,
            rerun: None,
        };
        let id = task.id;
        mcp_tasks::TaskStore::create(store, task).await.unwrap();
        let result = serde_json::value::RawValue::from_string("{}".to_owned()).unwrap();
        mcp_tasks::TaskStore::complete(store, id, result)
            .await
            .unwrap();
    }
    let (mut stream, id) = open(&client, json!(cursor), "alice").await;
    assert_eq!(next(&mut stream).await["params"]["truncated"], false);
    let mut statuses = Vec::new();
    for _ in 0..100 {
        statuses.push(change(&next_event(&mut stream, id).await).1);
    }
    assert_eq!(statuses.iter().filter(|s| *s == "working").count(), 50);
    assert_eq!(statuses.iter().filter(|s| *s == "completed").count(), 50);
}
