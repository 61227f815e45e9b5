//! End to end over loopback HTTP: when a `tools/call` stays synchronous, when
//! it becomes a task, and how a parked call ends.

use crate::support;

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::layered::{Layered, error_of, ms, task_id, text, timestamp};
use support::wait::{BOUND, wait_until};

/// The fields of a flat 2026-07-28 `CreateTaskResult`.
const CREATED_FIELDS: [&str; 7] = [
    "createdAt",
    "lastUpdatedAt",
    "pollIntervalMs",
    "resultType",
    "status",
    "taskId",
    "ttlMs",
];

fn keys(object: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = object
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {object}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn a_fast_call_stays_synchronous_for_declaring_and_non_declaring_clients() {
    let layered = Layered::start(|layer| layer.threshold(ms(300))).await;
    let client = layered.client();

    for declare in [true, false] {
        let exchange = client
            .call_tool_with("greet", json!({"name": "x"}), json!({}), declare)
            .await;
        assert_eq!(exchange.status, 200);
        let response = exchange.into_response();
        assert_eq!(response["result"]["resultType"], "complete", "{response}");
        assert_eq!(text(&response["result"]), "Hello, x!");
        assert!(response["result"].get("taskId").is_none(), "{response}");
    }
    assert_eq!(layered.probe.finished("greet"), 2);
    assert!(layered.store.is_empty(), "a synchronous call left a task");
}

#[tokio::test]
async fn a_slow_call_from_a_declaring_client_parks_as_a_flat_create_task_result_and_completes() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(300))
            .ttl(Some(Duration::from_secs(60)))
            .poll_interval(Some(ms(250)))
    })
    .await;
    let client = layered.client();

    let before = SystemTime::now();
    let exchange = client
        .call_tool_with("slow_compute", json!({"seconds": 1.5}), json!({}), true)
        .await;
    // Held while the inner call ran (the handle's status message below is
    // its progress), not to its outcome (the task below: working, its
    // inner call still running).
    assert_eq!(exchange.status, 200);
    // The inner server streams the progress the layer asked for (never
    // relayed), so the handle ends an SSE stream that carries nothing else,
    // with the last progress line as its first status message.
    assert_eq!(exchange.content_type(), "text/event-stream");
    assert_eq!(exchange.messages.len(), 1, "{}", exchange.body);
    let created = exchange.into_response();
    let result = &created["result"];
    let mut fields = CREATED_FIELDS.to_vec();
    fields.push("statusMessage");
    fields.sort_unstable();
    assert_eq!(keys(result), fields, "{created}");
    let status = result["statusMessage"].as_str().unwrap_or_default();
    assert!(status.starts_with("slow_compute: "), "{created}");
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(result.get(absent).is_none(), "{absent} in {created}");
    }
    assert_eq!(result["resultType"], "task");
    assert_eq!(result["status"], "working");
    assert_eq!(result["ttlMs"], 60_000);
    assert_eq!(result["pollIntervalMs"], 250);
    let id = task_id(&created);
    assert!(
        id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{id}"
    );
    let created_at = timestamp(&result["createdAt"]);
    assert_eq!(result["createdAt"], result["lastUpdatedAt"]);
    let window = (before - ms(1000))..=(SystemTime::now() + ms(1000));
    assert!(window.contains(&created_at), "{created}");
    assert_eq!(layered.probe.running("slow_compute"), 1);

    let polled = client.tasks_get(&id).await;
    assert_eq!(polled["result"]["resultType"], "complete", "{polled}");
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    assert_eq!(polled["result"]["taskId"], id.as_str());
    assert_eq!(polled["result"]["createdAt"], result["createdAt"]);
    assert!(polled["result"].get("result").is_none(), "{polled}");

    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    let done = &done["result"];
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text(&done["result"]), "slow_compute done after 1.5s");
    assert!(done.get("error").is_none(), "{done}");
    assert!(timestamp(&done["lastUpdatedAt"]) > created_at, "{done}");
    assert_eq!(layered.probe.started("slow_compute"), 1);
    assert_eq!(layered.probe.finished("slow_compute"), 1);
}

#[tokio::test]
async fn a_slow_call_from_a_non_declaring_client_stays_synchronous() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();

    // Held to the outcome: the tool's own answer, after its whole run.
    let response = client
        .call_tool("slow_compute", json!({"seconds": 0.6}), false)
        .await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(text(&response["result"]), "slow_compute done after 0.6s");
    assert!(response["result"].get("taskId").is_none(), "{response}");
    assert!(
        layered.store.is_empty(),
        "a non-declaring call became a task"
    );
}

#[tokio::test]
async fn progress_sent_before_the_threshold_reaches_the_client_in_order_before_the_result() {
    let layered = Layered::start(|layer| layer.threshold(ms(1000))).await;
    let client = layered.client();

    let exchange = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 0.3, "label": "early"}),
            json!({"_meta": {"progressToken": "tok-1"}}),
            true,
        )
        .await;
    assert_eq!(exchange.status, 200);
    assert!(exchange.is_sse(), "{}", exchange.content_type());
    let (last, before) = exchange.messages.split_last().expect("messages");
    assert_eq!(last["id"], exchange.id, "the result comes last");
    assert_eq!(text(&last["result"]), "early done after 0.3s");
    assert!(last["result"].get("taskId").is_none(), "{last}");
    assert!(before.len() >= 2, "progress missing: {}", exchange.body);
    let mut previous = -1.0;
    for message in before {
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(message["params"]["progressToken"], "tok-1");
        let progress = message["params"]["progress"].as_f64().expect("progress");
        assert!(progress > previous, "out of order: {}", exchange.body);
        previous = progress;
    }
    assert_eq!(before[0]["params"]["message"], "early: started");
    assert!(layered.store.is_empty());
}

#[tokio::test]
async fn progress_after_parking_shows_up_as_the_status_message() {
    let layered = Layered::start(|layer| layer.threshold(ms(300))).await;
    let client = layered.client();

    let created = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 1.2, "label": "late"}),
            json!({"_meta": {"progressToken": "tok-2"}}),
            true,
        )
        .await
        .into_response();
    let id = task_id(&created);
    // The last progress line before the threshold is the first status message.
    let first = created["result"]["statusMessage"]
        .as_str()
        .unwrap_or_else(|| panic!("no statusMessage in {created}"))
        .to_owned();
    assert!(first.starts_with("late: "), "{first}");

    let later = wait_until("a new progress line replaces the first", BOUND, || async {
        let polled = client.tasks_get(&id).await;
        let task = &polled["result"];
        assert_eq!(
            task["status"], "working",
            "finished before a new line: {task}"
        );
        let message = task["statusMessage"].as_str().unwrap_or_default();
        if message == first {
            return None;
        }
        assert!(
            timestamp(&task["lastUpdatedAt"]) > timestamp(&task["createdAt"]),
            "{task}"
        );
        Some(message.to_owned())
    })
    .await;
    assert!(
        later.starts_with("late: ") && later.ends_with("s of 1.2s"),
        "{later}"
    );

    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]["result"]), "late done after 1.2s");
}

#[tokio::test]
async fn a_tool_error_after_parking_completes_the_task_with_the_result_verbatim() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();
    let arguments = json!({"seconds": 0.5});

    let (created, synchronous) = tokio::join!(
        client.call_tool("failing_job", arguments.clone(), true),
        client.call_tool("failing_job", arguments.clone(), false),
    );
    let id = task_id(&created);
    assert_eq!(synchronous["result"]["isError"], true, "{synchronous}");

    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    let task = &done["result"];
    assert_eq!(task["status"], "completed", "{done}");
    assert_eq!(task["result"]["isError"], true, "{done}");
    assert_eq!(text(&task["result"]), "failing_job failed on purpose");
    assert_eq!(
        task["result"], synchronous["result"],
        "the task holds exactly what the call would have answered"
    );
    assert!(task.get("error").is_none(), "{done}");
}

#[tokio::test]
async fn a_json_rpc_error_fails_the_task_with_the_inner_error_verbatim() {
    let layered = Layered::start(|layer| {
        layer.tool_policy("protocol_error_job", mcp_tasks::ToolPolicy::Always)
    })
    .await;
    let client = layered.client();

    let synchronous = client
        .call_tool("protocol_error_job", json!({}), false)
        .await;
    let inner_error = error_of(&synchronous, -32603).clone();
    assert_eq!(inner_error["data"]["tool"], "protocol_error_job");

    let created = client
        .call_tool("protocol_error_job", json!({}), true)
        .await;
    let id = task_id(&created);
    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    let task = &done["result"];
    assert_eq!(task["status"], "failed", "{done}");
    assert_eq!(task["error"], inner_error, "{done}");
    assert!(task.get("result").is_none(), "{done}");
    assert_eq!(
        task["statusMessage"],
        "protocol_error_job failed on purpose"
    );
}

#[tokio::test]
async fn a_parked_call_keeps_running_after_the_client_disconnects() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;

    let mut ids = Vec::new();
    for token in [Some("keep"), None] {
        let client = layered.client();
        let call = client
            .open_call("slow_compute", json!({"seconds": 0.8}), token, true)
            .await;
        // Progress first (relayed live), then the task handle.
        let messages = call.finish().await;
        ids.push(task_id(messages.last().expect("the task handle")));
        // Hang up: the response is read and dropped; now every connection.
        drop(client);
    }

    let finished = layered
        .probe
        .wait_until(BOUND, |probe| probe.finished("slow_compute") == 2)
        .await;
    assert!(finished, "{:?}", layered.probe.stats("slow_compute"));
    assert_eq!(layered.probe.cancelled("slow_compute"), 0);
    let client = layered.client();
    for id in ids {
        let done = client.tasks_get(&id).await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        assert_eq!(
            text(&done["result"]["result"]),
            "slow_compute done after 0.8s"
        );
    }
}

#[tokio::test]
async fn a_client_that_hangs_up_before_the_threshold_cancels_the_inner_call_and_leaves_no_task() {
    let layered = Layered::start(|layer| layer.threshold(ms(500))).await;
    let client = layered.client();

    let call = client.call_tool("slow_compute", json!({"seconds": 5}), true);
    assert!(tokio::time::timeout(ms(150), call).await.is_err());
    drop(client);

    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner call kept running: {:?}",
        layered.probe.stats("slow_compute")
    );
    // A witness started after it is parked at its own threshold, which
    // comes after the first call's: by then that one would be parked too.
    let witness = layered.client();
    let parked = witness
        .call_tool("slow_compute", json!({"seconds": 5}), true)
        .await;
    let witness_id = task_id(&parked);
    let held: Vec<String> = layered
        .store
        .ids()
        .iter()
        .map(|id| id.to_string())
        .collect();
    assert_eq!(held, [witness_id], "the hung-up call was parked");
    assert_eq!(layered.probe.finished("slow_compute"), 0);
}

#[tokio::test]
async fn an_unlimited_ttl_is_null_and_without_a_poll_interval_the_field_is_left_out() {
    let layered = Layered::start(|layer| {
        layer
            .ttl(None)
            .poll_interval(None)
            .tool_policy("greet", mcp_tasks::ToolPolicy::Always)
    })
    .await;
    let client = layered.client();

    let created = client.call_tool("greet", json!({"name": "t"}), true).await;
    let id = task_id(&created);
    for task in [
        created["result"].clone(),
        client.tasks_get(&id).await["result"].clone(),
    ] {
        assert_eq!(task.get("ttlMs"), Some(&Value::Null), "{task}");
        assert!(task.get("pollIntervalMs").is_none(), "{task}");
    }
}
