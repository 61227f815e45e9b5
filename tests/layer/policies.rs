//! End to end over loopback HTTP: per-tool policies.

use crate::support;

use std::time::Duration;

use mcp_tasks::ToolPolicy;
use serde_json::json;
use support::layered::{Layered, error_of, ms, task_id, text};
use support::wait::BOUND;

#[tokio::test]
async fn always_makes_a_task_even_of_a_fast_call() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(Duration::from_secs(600))
            .tool_policy("greet", ToolPolicy::Always)
    })
    .await;
    // A call that waited for the threshold would time its client out.
    let client = layered.client();

    let created = client
        .call_tool("greet", json!({"name": "always"}), true)
        .await;
    let id = task_id(&created);
    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]["result"]), "Hello, always!");

    // A client that did not declare tasks still gets the plain answer.
    let plain = client
        .call_tool("greet", json!({"name": "plain"}), false)
        .await;
    assert_eq!(text(&plain["result"]), "Hello, plain!");
    assert!(plain["result"].get("taskId").is_none(), "{plain}");
}

#[tokio::test]
async fn never_keeps_a_slow_call_synchronous_for_a_declaring_client() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(200))
            .tool_policy("slow_compute", ToolPolicy::Never)
    })
    .await;
    let client = layered.client();

    let response = client
        .call_tool("slow_compute", json!({"seconds": 0.6}), true)
        .await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(text(&response["result"]), "slow_compute done after 0.6s");
    assert!(layered.store.is_empty(), "a Never tool became a task");
}

#[tokio::test]
async fn required_rejects_a_non_declaring_call_with_400_naming_the_extension() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(200))
            .tool_policy("greet", ToolPolicy::Required)
            .tool_policy("slow_compute", ToolPolicy::Required)
    })
    .await;
    let client = layered.client();

    let exchange = client
        .call_tool_with("greet", json!({"name": "r"}), json!({}), false)
        .await;
    assert_eq!(exchange.status, 400, "{}", exchange.body);
    assert_eq!(exchange.content_type(), "application/json");
    let response = exchange.into_response();
    let error = error_of(&response, -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{response}"
    );
    assert_eq!(
        layered.probe.started("greet"),
        0,
        "the call reached the tool"
    );

    // Declaring clients are served as usual: fast calls stay synchronous,
    // slow ones park.
    let fast = client.call_tool("greet", json!({"name": "r"}), true).await;
    assert_eq!(text(&fast["result"]), "Hello, r!");
    let slow = client
        .call_tool("slow_compute", json!({"seconds": 0.5}), true)
        .await;
    task_id(&slow);
}

#[tokio::test]
async fn the_default_policy_applies_to_tools_without_one_of_their_own() {
    let layered = Layered::start(|layer| {
        layer
            .default_policy(ToolPolicy::Always)
            .tool_policy("echo_meta", ToolPolicy::Never)
    })
    .await;
    let client = layered.client();

    task_id(&client.call_tool("greet", json!({"name": "d"}), true).await);
    let echoed = client.call_tool("echo_meta", json!({}), true).await;
    assert_eq!(echoed["result"]["resultType"], "complete", "{echoed}");
    assert_eq!(layered.store.len(), 1);
}
