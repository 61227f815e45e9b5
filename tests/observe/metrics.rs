//! The layer's metrics for a known sequence of calls, read from
//! `metrics-util`'s debugging recorder: tasks created, ended by status,
//! input rounds, refusals at a limit, the running gauge back at zero, and
//! the latency histograms with one sample per operation.
//!
//! The recorder is local to this thread; the test builds a current-thread
//! runtime inside it, so the layer's background tasks record here too.

use crate::support;

use std::time::Duration;

use mcp_tasks::ToolPolicy;
use mcp_tasks::observe::metrics as m;
use serde_json::json;
use support::client::McpClient;
use support::layered::Layered;
use support::recorded::{counter, gauge, record, samples};
use support::wait::{BOUND, wait_until};

async fn sequence() {
    let mut drain = None;
    let layered = Layered::start(|layer| {
        drain = Some(layer.drain());
        layer
            .tool_policy("confirm_delete", ToolPolicy::Always)
            .threshold(Duration::from_millis(100))
            .max_tasks_per_principal(Some(3))
    })
    .await;
    let client = McpClient::new(&layered.served.url);

    // A fast call: no task.
    let greet = client.call_tool("greet", json!({"name": "m"}), true).await;
    assert!(greet.get("result").is_some(), "{greet}");

    // Parked, completed.
    let done = client
        .start_task("slow_compute", json!({"seconds": 0.3}))
        .await;
    client.wait_task_status(&done, &["completed"], BOUND).await;

    // Parked, asks once, answered, completed.
    let asked = client
        .start_task("confirm_delete", json!({"filename": "m.txt"}))
        .await;
    client
        .wait_task_status(&asked, &["input_required"], BOUND)
        .await;
    let answer = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});
    client.tasks_update(&asked, answer).await;
    client.wait_task_status(&asked, &["completed"], BOUND).await;

    // Parked, cancelled.
    let cancelled = client
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;
    client.tasks_cancel(&cancelled).await;
    client
        .wait_task_status(&cancelled, &["cancelled"], BOUND)
        .await;

    // A fourth live task is over this principal's quota: refused, the call
    // stays synchronous.
    let sync = client
        .call_tool("slow_compute", json!({"seconds": 0.2}), true)
        .await;
    assert_eq!(
        sync["result"]["content"][0]["text"], "slow_compute done after 0.2s",
        "{sync}"
    );
    // The cancelled call's driver may still be unwinding; each leaves the
    // running gauge as it ends.
    let drain = drain.expect("the layer was configured");
    wait_until("every driver ends", BOUND, || async {
        drain.running() == 0
    })
    .await;
}

#[test]
fn a_known_sequence_gives_known_counts() {
    let readings = record(sequence());

    assert_eq!(counter(&readings, m::CREATED, ""), 3);
    assert_eq!(counter(&readings, m::TERMINAL, "status=completed"), 2);
    assert_eq!(counter(&readings, m::TERMINAL, "status=cancelled"), 1);
    assert_eq!(counter(&readings, m::TERMINAL, "status=failed"), 0);
    assert_eq!(counter(&readings, m::INPUT_REQUIRED, ""), 1);
    assert_eq!(counter(&readings, m::RESUMED, ""), 1);
    assert_eq!(counter(&readings, m::REFUSED, "reason=quota_owner"), 1);
    assert_eq!(
        gauge(&readings, m::RUNNING, ""),
        Some(0.0),
        "no parked call left running"
    );
    assert_eq!(samples(&readings, m::TIME_TO_PARK, ""), 3);
    assert_eq!(samples(&readings, m::DURATION, "status=completed"), 2);
    // Four creates were tried (the last refused by the store's quota).
    assert_eq!(samples(&readings, m::STORE, "op=create"), 4);
    assert!(
        samples(&readings, m::GET, "") >= 4,
        "every tasks/get is timed"
    );
    assert_eq!(
        samples(&readings, m::GET, ""),
        samples(&readings, m::STORE, "op=get"),
        "one store read per tasks/get"
    );
    assert_eq!(counter(&readings, m::STORE_ERRORS, "op=get"), 0);
}
