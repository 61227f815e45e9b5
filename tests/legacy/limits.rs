//! End to end over loopback HTTP: the limits on 2025-11-25 sessions. A
//! `params.task` over a cap and a `tasks/result` waiter over its cap get a
//! JSON-RPC error `-32000` (HTTP 200) at once, and nothing else changes.

use crate::support;

use serde_json::{Value, json};
use support::layered::{Layered, text};
use support::session::{Session, outcome};
use support::wait::BOUND;

/// Asserts that `exchange` is a `-32000` error saying `reason`, as JSON.
fn assert_limit(exchange: support::client::Exchange, reason: &str) -> Value {
    assert_eq!(exchange.status, 200, "{}", exchange.body);
    assert!(!exchange.is_sse(), "{}", exchange.body);
    let response = exchange.into_response();
    assert_eq!(response["error"]["code"], -32000, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(reason), "{reason:?} not in {response}");
    response
}

#[tokio::test]
async fn a_task_request_over_the_principals_cap_gets_a_limit_error_and_no_task() {
    let layered = Layered::start_sessions(|layer| layer.max_tasks_per_principal(Some(1))).await;
    let alice = Session::open(&layered, Some("alice")).await;
    let bob = Session::open(&layered, Some("bob")).await;

    alice
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;
    assert!(layered.probe.wait_started("slow_compute", BOUND).await);
    let params = json!({"name": "greet", "arguments": {"name": "a"}, "task": {}});
    let refused = alice.exchange("tools/call", params).await;
    assert_limit(refused, "This principal has 1 live tasks, the limit");
    assert_eq!(layered.store.len(), 1, "no task for the refused request");
    assert_eq!(layered.probe.started("greet"), 0, "the call was not sent");

    // Another principal is not affected.
    let theirs = bob.start_task("greet", json!({"name": "b"})).await;
    let done = bob.wait_status(&theirs, &["completed"]).await;
    assert_eq!(done["result"]["status"], "completed");
    assert_eq!(layered.store.len(), 2);
}

#[tokio::test]
async fn a_third_tasks_result_waiter_on_a_task_is_refused_while_the_first_two_stream() {
    let layered = Layered::start_sessions(|layer| layer.max_result_waiters(2, 100)).await;
    let session = Session::open(&layered, None).await;
    let task = session
        .start_task("slow_compute", json!({"seconds": 1.5}))
        .await;
    let wait = json!({"taskId": task});

    let first = session.open_request("tasks/result", wait.clone()).await;
    let second = session.open_request("tasks/result", wait.clone()).await;
    let third = session.exchange("tasks/result", wait.clone()).await;
    assert_limit(third, "Too many tasks/result streams are waiting");

    for stream in [first, second] {
        let result = outcome(stream).await;
        assert_eq!(text(&result["result"]), "slow_compute done after 1.5s");
    }
    // The outcome is now read at once, by any number of readers.
    let again = session.exchange("tasks/result", wait).await;
    assert!(!again.is_sse());
    assert_eq!(
        text(&again.into_response()["result"]),
        "slow_compute done after 1.5s"
    );
}

#[tokio::test]
async fn tasks_result_waiters_are_capped_per_principal_and_released_when_they_end() {
    let layered = Layered::start_sessions(|layer| layer.max_result_waiters(10, 2)).await;
    let alice = Session::open(&layered, Some("alice")).await;
    let bob = Session::open(&layered, Some("bob")).await;
    let mut tasks = Vec::new();
    for seconds in [1.0, 1.0, 3.5] {
        let task = alice
            .start_task("slow_compute", json!({"seconds": seconds}))
            .await;
        tasks.push(json!({"taskId": task}));
    }
    let bobs = bob
        .start_task("slow_compute", json!({"seconds": 1.0}))
        .await;

    let first = alice.open_request("tasks/result", tasks[0].clone()).await;
    let second = alice.open_request("tasks/result", tasks[1].clone()).await;
    let third = alice.exchange("tasks/result", tasks[2].clone()).await;
    assert_limit(third, "10 per task and 2 per principal");
    let theirs = bob
        .open_request("tasks/result", json!({"taskId": bobs}))
        .await;

    for stream in [first, second, theirs] {
        let result = outcome(stream).await;
        assert_eq!(text(&result["result"]), "slow_compute done after 1s");
    }
    // Both places are free again: the third task is still running, and
    // its result is streamed to a waiter.
    let waited = alice.exchange("tasks/result", tasks[2].clone()).await;
    assert!(waited.is_sse(), "{}", waited.body);
    assert_eq!(
        text(&waited.into_response()["result"]),
        "slow_compute done after 3.5s"
    );
}
