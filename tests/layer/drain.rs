//! End to end over loopback HTTP: draining a layer. After `close` no call
//! parks; `shutdown(grace)` lets running tasks finish within the grace and
//! fails the rest, cancelling their inner calls; task methods are answered
//! throughout.

use crate::support;

use std::time::Duration;

use mcp_tasks::{
    Drain, DrainReport, NewTask, Quota, TaskId, TaskStore, TasksLayer, Timestamp, ToolPolicy,
};
use serde_json::{Value, json};
use support::client::McpClient;
use support::layered::{Layered, ms, task_id, text};
use support::session::{Session, outcome};
use support::wait::{BOUND, wait_until};

const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// The shutdown message of a task still running at the end of the grace.
const SHUT_DOWN: &str = "The server shut down before the task finished";

/// A layered fixture and the drain handle of its layer.
async fn start(configure: impl FnOnce(TasksLayer) -> TasksLayer) -> (Layered, Drain) {
    let mut drain = None;
    let layered = Layered::start(|layer| {
        let layer = configure(layer);
        drain = Some(layer.drain());
        layer
    })
    .await;
    (layered, drain.expect("the layer was configured"))
}

/// A `slow_compute` of `seconds` that must park; its task id.
async fn park(client: &McpClient, seconds: f64) -> String {
    task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": seconds}), true)
            .await,
    )
}

async fn terminal(client: &McpClient, task: &str) -> Value {
    client.wait_task_status(task, &TERMINAL, BOUND).await["result"].clone()
}

#[tokio::test]
async fn after_close_new_calls_get_503_and_running_tasks_go_on() {
    let (layered, drain) = start(|layer| {
        layer
            .threshold(ms(200))
            .tool_policy("greet", ToolPolicy::Always)
    })
    .await;
    let client = layered.client();
    let running = park(&client, 1.2).await;

    assert!(!drain.is_closed());
    drain.close();
    drain.close();
    assert!(drain.is_closed(), "close is idempotent");

    // Declaring or not, a new call is refused with a retry, and never
    // reaches the inner server.
    for declare in [true, false] {
        let refused = client
            .request(
                "tools/call",
                json!({"name": "greet", "arguments": {"name": "d"}}),
                declare,
            )
            .await;
        assert_eq!(refused.status, 503, "{}", refused.body);
        assert_eq!(refused.headers["retry-after"], "1");
        let refused = refused.into_response();
        assert_eq!(refused["error"]["code"], -32000, "{refused}");
        assert!(refused["id"].is_number(), "the call's id: {refused}");
    }
    assert_eq!(layered.probe.started("greet"), 0);
    assert_eq!(layered.store.len(), 1, "no task after close");
    // Other requests are served.
    let listed = client.request("tools/list", json!({}), false).await;
    assert_eq!(listed.status, 200, "{}", listed.body);

    // The task parked before the close runs on, and is still answered.
    assert_eq!(
        client.tasks_get(&running).await["result"]["status"],
        "working"
    );
    let done = terminal(&client, &running).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "slow_compute done after 1.2s");
}

#[tokio::test]
async fn a_task_finishing_within_the_grace_completes_and_the_report_says_finished() {
    let (layered, drain) = start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();
    let task = park(&client, 0.8).await;
    assert!(drain.running() >= 1, "{drain:?}");

    // A grace far longer than the task: the drain ends when the task does,
    // well before the grace (a drain that waits it out fails here).
    let report = tokio::time::timeout(BOUND, drain.shutdown(Duration::from_secs(600)))
        .await
        .expect("the drain waited out its grace although its task finished");
    assert_eq!(
        report,
        DrainReport {
            finished: true,
            aborted: 0,
            settled: true,
        }
    );
    assert_eq!(drain.running(), 0);
    let done = terminal(&client, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(layered.probe.cancelled("slow_compute"), 0);
}

#[tokio::test]
async fn a_task_still_running_after_the_grace_is_failed_and_its_inner_call_cancelled() {
    let (layered, drain) = start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();
    let long = park(&client, 30.0).await;
    let short = park(&client, 0.4).await;

    let report = drain.shutdown(ms(1200)).await;
    assert!(!report.finished, "{report:?}");
    assert!(report.aborted >= 1, "{report:?}");
    assert!(report.settled, "{report:?}");
    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner call outlived the drain: {:?}",
        layered.probe.stats("slow_compute")
    );

    // Task methods are still answered after the drain.
    let failed = terminal(&client, &long).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(failed["error"]["message"], SHUT_DOWN, "{failed}");
    let done = terminal(&client, &short).await;
    assert_eq!(done["status"], "completed", "within the grace: {done}");
    assert_eq!(layered.probe.stats("slow_compute").cancelled, 1);
}

#[tokio::test]
async fn task_methods_are_answered_while_the_drain_waits_and_a_cancel_ends_its_wait() {
    let (layered, drain) = start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();
    let task = park(&client, 30.0).await;

    let draining = tokio::spawn({
        let drain = drain.clone();
        async move { drain.shutdown(Duration::from_secs(10)).await }
    });
    // The drain closes at its first poll; wait for that, not for a time.
    wait_until("the drain closes", BOUND, || async { drain.is_closed() }).await;
    assert_eq!(client.tasks_get(&task).await["result"]["status"], "working");
    let cancelled = client.tasks_cancel(&task).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");

    let report = tokio::time::timeout(ms(4000), draining)
        .await
        .expect("the drain ended once its last task did")
        .expect("the drain did not panic");
    assert!(report.finished, "{report:?}");
    assert_eq!(terminal(&client, &task).await["status"], "cancelled");
    assert!(layered.probe.wait_cancelled("slow_compute", BOUND).await);
}

/// A layered fixture that keeps 2025-11-25 sessions, and its drain handle.
async fn start_sessions() -> (Layered, Drain) {
    let mut drain = None;
    let layered = Layered::start_sessions(|layer| {
        drain = Some(layer.drain());
        layer
    })
    .await;
    (layered, drain.expect("the layer was configured"))
}

#[tokio::test]
async fn after_close_a_2025_11_25_task_request_gets_503_and_no_task() {
    let (layered, drain) = start_sessions().await;
    let session = Session::open(&layered, None).await;
    drain.close();

    let refused = session
        .exchange(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "x"}, "task": {}}),
        )
        .await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    let refused = refused.into_response();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("shutting down"), "{refused}");
    assert!(layered.store.is_empty());
    assert_eq!(layered.probe.started("greet"), 0);
}

#[tokio::test]
async fn a_tasks_result_waiting_for_a_task_run_elsewhere_ends_when_the_drain_is_over() {
    let (layered, drain) = start_sessions().await;
    let session = Session::open(&layered, None).await;
    // A task no call of this layer runs: another instance's, or one a
    // durable store keeps to run again after a restart.
    let task = NewTask {
        id: TaskId::generate().unwrap(),
        owner: None,
        created_at: Timestamp::now(),
        ttl: Some(Duration::from_secs(60)),
        poll_interval: None,
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    };
    layered.store.create(task.clone()).await.unwrap();
    let waiting = session
        .open_request("tasks/result", json!({"taskId": task.id.to_string()}))
        .await;

    let report = drain.shutdown(ms(100)).await;
    assert!(report.finished, "{report:?}");
    // The stream ends (`outcome` gives up after 10 s), telling the client
    // to ask again (of the next server).
    let last = outcome(waiting).await;
    assert_eq!(last["error"]["code"], -32000, "{last}");
    let message = last["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ask for its result again"), "{last}");
    let kept = layered.store.get(task.id, None).await.unwrap().unwrap();
    assert_eq!(kept.status(), mcp_tasks::TaskStatus::Working);
}
