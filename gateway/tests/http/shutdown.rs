//! SIGTERM as the gateway's clients see it (memory store): a client that
//! polls its task through the drain reads the task's end before the
//! gateway goes, a task waiting for input is failed rather than lost, a
//! synchronous call in flight gets its answer, and the exit comes within
//! `--shutdown-grace` plus the stated bound (the linger, twice the poll
//! interval, and the failure writes).

use crate::{gateway, support};

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_fixture};
use support::wait::BOUND;

/// One `tasks/get` of `task`, or `None` when the gateway no longer answers.
async fn poll(client: &McpClient, task: &str) -> Option<Value> {
    let id = client.next_id();
    let body = client.build_request(id, "tasks/get", json!({"taskId": task}), true);
    let mut request = reqwest::Client::new()
        .post(client.url())
        .timeout(Duration::from_secs(5))
        .body(body.to_string());
    for (name, value) in McpClient::standard_headers("tasks/get", Some(task)) {
        request = request.header(name, value);
    }
    let response = request.send().await.ok()?;
    response.json().await.ok()
}

/// Polls `task` every second (the interval the gateway suggests) until the
/// gateway stops answering; the last answer read.
async fn poll_until_gone(client: &McpClient, task: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..60 {
        match poll(client, task).await {
            Some(answer) => last = answer,
            None => return last,
        }
        // The scenario: a client that polls at the interval it was given.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("the gateway still answers after a minute: {last}");
}

#[tokio::test]
async fn a_client_polling_through_the_drain_reads_its_task_failed_before_the_gateway_exits() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let policies = ["--policy", gateway::FIXTURE_POLICIES];
    let mut gateway = gateway::start(
        &upstream.url,
        &[&["--shutdown-grace", "2s"][..], &policies[..]].concat(),
    )
    .await;
    let client = McpClient::new(&gateway.url);
    let running = client
        .start_task("slow_compute", json!({"seconds": 60}))
        .await;
    // A task waiting for its client's input: the memory store cannot keep
    // it past the process.
    let asking = client
        .start_task("confirm_delete", json!({"filename": "a.txt"}))
        .await;
    client
        .wait_task_status(&asking, &["input_required"], Duration::from_secs(10))
        .await;

    let signalled = Instant::now();
    gateway.terminate();
    let (seen_running, seen_asking) = tokio::join!(
        poll_until_gone(&client, &running),
        poll_until_gone(&client, &asking),
    );
    assert_eq!(seen_running["result"]["status"], "failed", "{seen_running}");
    let message = &seen_running["result"]["statusMessage"];
    assert_eq!(message, "The server shut down before the task finished");
    assert_eq!(seen_asking["result"]["status"], "failed", "{seen_asking}");
    let message = &seen_asking["result"]["statusMessage"];
    assert_eq!(
        message,
        "The server shut down while the task waited for input"
    );

    let status = gateway.wait_exit(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    // The grace (2 s), the linger (2 s), and room for a slow machine; far
    // from the 10 s a stuck write or connection could add.
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(9), "exited after {took:?}");
    // The last lines may still be on their way from the pipe.
    let lingered = gateway.wait_log("answering polls a little longer", Duration::from_secs(5));
    assert!(lingered.await, "{}", gateway.log());
}

#[tokio::test]
async fn a_synchronous_call_in_flight_gets_its_answer_and_an_idle_gateway_exits_at_once() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let mut gateway = gateway::start(&upstream.url, &["--shutdown-grace", "10s"]).await;
    let client = McpClient::new(&gateway.url);
    // A client without tasks: its 3 s call stays synchronous.
    let call = tokio::spawn({
        let client = McpClient::new(&gateway.url);
        async move {
            client
                .call_tool("slow_compute", json!({"seconds": 3}), false)
                .await
        }
    });
    assert!(
        probe.wait_started("slow_compute", BOUND).await,
        "the call reached the upstream"
    );
    let signalled = Instant::now();
    gateway.terminate();
    let answer = call.await.expect("the call");
    assert_eq!(
        answer["result"]["content"][0]["text"], "slow_compute done after 3s",
        "{answer}"
    );
    let status = gateway.wait_exit(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    // No task ran: no grace to wait for and no linger.
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(6), "exited after {took:?}");
    // Its last line read first: the report, logged after any linger.
    let reported = gateway
        .wait_log("drained report=", Duration::from_secs(5))
        .await;
    assert!(reported, "{}", gateway.log());
    assert!(!gateway.log().contains("answering polls a little longer"));
    drop(client);
}

#[tokio::test]
async fn a_new_call_during_the_drain_gets_503_with_retry_after_not_a_stream_that_ends() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let mut gateway = gateway::start(&upstream.url, &["--shutdown-grace", "3s"]).await;
    let client = McpClient::new(&gateway.url);
    // A running task keeps the drain waiting for the grace.
    let running = client
        .start_task("slow_compute", json!({"seconds": 60}))
        .await;
    gateway.terminate();
    let draining = gateway.wait_log("shutting down: draining tasks", Duration::from_secs(10));
    assert!(draining.await, "{}", gateway.log());
    let refused = client
        .request(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 20}}),
            false,
        )
        .await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.headers["retry-after"], "1");
    let refused = refused.into_response();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(refused["id"].is_u64(), "the call's id: {refused}");
    // The running task is still read while the drain lasts.
    let read = poll(&client, &running).await.expect("an answer");
    assert!(read["result"]["status"].is_string(), "{read}");
    let status = gateway.wait_exit(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
