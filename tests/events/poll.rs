//! `events/poll`: a poller that stops and comes back with its cursor sees
//! every status change of its own tasks, in order, and nobody else's.

use serde_json::{Value, json};

use super::support::layered::get_as;
use super::support::wait::{BOUND, wait_until};
use super::{NAME, changes, events_request, serve, start_as, status_as};
use mcp_tasks::EventsConfig;

/// Every occurrence after `cursor`, polling page by page (`maxEvents`);
/// the cursor after them.
async fn drain(client: &super::McpClient, user: &str, mut cursor: String) -> (Vec<Value>, String) {
    let mut all = Vec::new();
    loop {
        let polled = events_request(
            client,
            "events/poll",
            json!({"cursor": cursor, "maxEvents": 1}),
            user,
        )
        .await
        .into_response();
        let result = &polled["result"];
        assert_eq!(result["resultType"], "complete", "{polled}");
        assert_eq!(result["truncated"], false, "{polled}");
        assert!(result["nextPollMs"].as_u64().unwrap() >= 1000, "{polled}");
        all.extend(result["events"].as_array().unwrap().iter().cloned());
        cursor = result["cursor"].as_str().unwrap().to_owned();
        if result["hasMore"] != true {
            return (all, cursor);
        }
    }
}

#[tokio::test]
async fn a_poller_that_comes_back_with_its_cursor_misses_no_status_change() {
    let layered = serve(EventsConfig::new()).await;
    let client = layered.client();
    let start = events_request(&client, "events/poll", json!({"cursor": null}), "alice")
        .await
        .into_response();
    assert_eq!(start["result"]["events"], json!([]), "{start}");
    let cursor = start["result"]["cursor"].as_str().unwrap().to_owned();

    // While the poller is away: one task runs to its end, one is
    // cancelled, and bob's task changes too.
    let done = start_as(&client, "alice", 0.3).await;
    let bobs = start_as(&client, "bob", 0.3).await;
    let cancelled = start_as(&client, "alice", 30.0).await;
    let id = client.next_id();
    let cancel = super::support::layered::send(
        &client,
        id,
        "tasks/cancel",
        json!({"taskId": cancelled}),
        true,
        &[(super::USER_HEADER, "alice")],
    )
    .await;
    assert!(cancel.response().is_some_and(|r| r.get("result").is_some()));
    wait_until("alice's first task completes", BOUND, || async {
        status_as(&client, "alice", &done).await == "completed"
    })
    .await;
    wait_until("bob's task completes", BOUND, || async {
        status_as(&client, "bob", &bobs).await == "completed"
    })
    .await;

    let (events, cursor) = drain(&client, "alice", cursor).await;
    let expected = [
        (done.clone(), "working".to_owned()),
        (cancelled.clone(), "working".to_owned()),
        (cancelled.clone(), "cancelled".to_owned()),
        (done.clone(), "completed".to_owned()),
    ];
    let seen = changes(&events);
    // Each task's changes in order; the two tasks interleave as they ran.
    for task in [&done, &cancelled] {
        let mine: Vec<_> = seen.iter().filter(|(id, _)| id == task).collect();
        let want: Vec<_> = expected.iter().filter(|(id, _)| id == task).collect();
        assert_eq!(mine, want, "{events:?}");
    }
    assert_eq!(seen.len(), 4, "only alice's changes: {events:?}");
    for event in &events {
        assert_eq!(event["name"], NAME);
        assert!(event["eventId"].as_str().is_some_and(|id| !id.is_empty()));
        assert!(event["timestamp"].as_str().unwrap().ends_with('Z'));
        assert!(
            event.get("cursor").is_none(),
            "poll carries the cursor once"
        );
        assert!(event["data"].get("result").is_none());
    }
    let mut ids: Vec<_> = events.iter().map(|event| &event["eventId"]).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4);

    // Nothing new: an empty page, the same position.
    let (again, after) = drain(&client, "alice", cursor.clone()).await;
    assert!(again.is_empty());
    assert_eq!(after, cursor);
}

#[tokio::test]
async fn another_principals_task_is_refused_like_one_that_never_existed() {
    let layered = serve(EventsConfig::new()).await;
    let client = layered.client();
    let alices = start_as(&client, "alice", 0.3).await;
    let asked = json!({"cursor": null, "arguments": {"taskIds": [alices]}});
    let foreign = events_request(&client, "events/poll", asked, "bob").await;
    let unknown = events_request(
        &client,
        "events/poll",
        json!({"cursor": null, "arguments": {"taskIds": ["0123456789abcdef0123456789abcdef"]}}),
        "bob",
    )
    .await;
    let id = client.next_id();
    let get = get_as(&client, id, &alices, Some("bob")).await;
    let error = |exchange: &super::Exchange| exchange.response().unwrap()["error"].clone();
    assert_eq!(error(&foreign), error(&get), "{:?}", foreign.body);
    assert_eq!(error(&unknown), error(&get));
    assert_eq!(foreign.status, get.status);
    // Alice may.
    let own = events_request(
        &client,
        "events/poll",
        json!({"cursor": null, "arguments": {"taskIds": [alices]}}),
        "alice",
    )
    .await
    .into_response();
    assert!(own["result"]["cursor"].is_string(), "{own}");
    // Bad arguments and cursors are -32602.
    for params in [
        json!({"cursor": null, "arguments": {"what": 1}}),
        json!({"cursor": "not-a-cursor"}),
    ] {
        let refused = events_request(&client, "events/poll", params, "alice").await;
        assert_eq!(
            refused.response().unwrap()["error"]["code"],
            -32602,
            "{}",
            refused.body
        );
    }
    let _ = NAME;
}
