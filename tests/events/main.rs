//! Task events (MCP Events extension) end to end over loopback HTTP, with
//! the rmcp fixture behind `TasksLayer::events`: the event type listed,
//! poll and stream resuming from a cursor without missing a change, the
//! task's authorization, and signed webhooks with retries.

#[path = "../support/mod.rs"]
mod support;

mod inner;
mod poll;
mod stream;
mod webhook;

use mcp_tasks::EventsConfig;
use serde_json::{Value, json};
use support::client::{Exchange, McpClient};
use support::layered::{Layered, USER_HEADER, send, task_id};

/// The layer's event type.
const NAME: &str = "mcp-tasks/status";

/// A fixture whose layer parks calls after 100 ms and offers task events
/// configured by `events`, with the test principal header.
async fn serve(events: EventsConfig) -> Layered {
    Layered::start_with_users(|layer| layer.threshold(support::layered::ms(100)).events(events))
        .await
}

/// Sends an events method of the layer's type as `user`.
async fn events_request(client: &McpClient, method: &str, params: Value, user: &str) -> Exchange {
    let mut params = params;
    params["name"] = json!(NAME);
    let id = client.next_id();
    send(client, id, method, params, false, &[(USER_HEADER, user)]).await
}

/// Starts `slow_compute` for `seconds` as `user`: its task id.
async fn start_as(client: &McpClient, user: &str, seconds: f64) -> String {
    let params = json!({"name": "slow_compute", "arguments": {"seconds": seconds}});
    let id = client.next_id();
    let exchange = send(
        client,
        id,
        "tools/call",
        params,
        true,
        &[(USER_HEADER, user)],
    )
    .await;
    task_id(&exchange.into_response())
}

/// `tasks/get` of `task` as `user`: the task's status.
async fn status_as(client: &McpClient, user: &str, task: &str) -> String {
    let id = client.next_id();
    let exchange = support::layered::get_as(client, id, task, Some(user)).await;
    exchange.into_response()["result"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// (task id, status) of each occurrence.
fn changes(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|event| {
            (
                event["data"]["taskId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                event["data"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn events_list_names_the_task_event_type_and_discover_declares_the_extension() {
    let layered = serve(EventsConfig::new()).await;
    let client = layered.client();
    let listed = client
        .request("events/list", json!({}), false)
        .await
        .into_response();
    let events = listed["result"]["events"]
        .as_array()
        .expect("an events list");
    let ours = events
        .iter()
        .find(|event| event["name"] == NAME)
        .unwrap_or_else(|| panic!("no {NAME} in {listed}"));
    assert_eq!(ours["delivery"], json!(["poll", "push"]));
    assert_eq!(ours["inputSchema"]["additionalProperties"], false);
    assert_eq!(listed["result"]["resultType"], "complete");

    let discovered = client.discover().await;
    let capabilities = &discovered["result"]["capabilities"];
    assert_eq!(
        capabilities["extensions"]["io.modelcontextprotocol/events"],
        json!({})
    );
    assert_eq!(capabilities["events"], json!({}));
    // The tasks extension is still there.
    assert!(capabilities["extensions"]["io.modelcontextprotocol/tasks"].is_object());
}

#[tokio::test]
async fn without_events_the_methods_reach_the_inner_server() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();
    let listed = client
        .request("events/list", json!({}), false)
        .await
        .into_response();
    assert!(listed.get("error").is_some(), "{listed}");
    let discovered = client.discover().await;
    assert!(discovered["result"]["capabilities"]["events"].is_null());
}
