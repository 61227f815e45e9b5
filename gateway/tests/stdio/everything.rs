//! `mcp-tasks-gateway -- bash scripts/stdio-everything.sh`: the official
//! MCP reference server (`@modelcontextprotocol/server-everything` from npm)
//! over stdio, behind the gateway. Its long-running tool becomes a task
//! whose status moves with its progress; its elicitation tool asks through
//! the task's `inputRequests`; `tasks/cancel` cancels the call in it. A
//! 2025-11-25 session's client (rmcp 2.2) answers the same elicitation on
//! its call's stream, and through `tasks/result` once the call is a task.

use crate::{gateway, support};

use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::client::legacy::{ElicitReply, LegacyClient};

const EVERYTHING: [&str; 2] = ["bash", "scripts/stdio-everything.sh"];

/// `tasks/get` of `task` every 50 ms until it leaves `working`, and the
/// status messages seen on the way.
async fn follow(client: &McpClient, task: &str) -> (Value, Vec<String>) {
    let mut messages: Vec<String> = Vec::new();
    let followed = async {
        loop {
            let got = client.tasks_get(task).await;
            if let Some(message) = got["result"]["statusMessage"].as_str()
                && messages.last().map(String::as_str) != Some(message)
            {
                messages.push(message.to_owned());
            }
            if got["result"]["status"] != "working" {
                return got;
            }
            // The interval of a bounded poll that keeps every status message it sees.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let last = tokio::time::timeout(Duration::from_secs(30), followed)
        .await
        .expect("the task left working");
    (last, messages)
}

#[tokio::test]
async fn the_reference_servers_long_running_operation_is_a_task_whose_status_follows_its_progress()
{
    let gateway = gateway::start_stdio(&EVERYTHING, &[]).await;
    let client = McpClient::new(&gateway.url);
    let created = client
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 2, "steps": 4}),
            json!({"_meta": {"progressToken": "long"}}),
            true,
        )
        .await
        .into_response();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().expect("taskId");
    let (done, messages) = follow(&client, task).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let said = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("Long running operation completed"), "{done}");
    assert!(
        messages.len() >= 2,
        "the status followed the progress: {messages:?}"
    );
}

/// A form the reference server's elicitation accepts.
fn form() -> Value {
    json!({"name": "Ada", "check": true, "firstLine": "It was a dark night", "email": "ada@example.com", "homepage": "https://example.com", "birthdate": "1815-12-10", "integer": 5, "number": 1.5, "untitledSingleSelectEnum": "option1", "titledSingleSelectEnum": "value1", "legacyTitledEnum": "opt1", "untitledMultipleSelectEnum": ["option1"], "titledMultipleSelectEnum": ["value1"]})
}

#[tokio::test]
async fn the_reference_servers_elicitation_is_answered_through_the_task() {
    let gateway = gateway::start_stdio(
        &EVERYTHING,
        &["--policy", "trigger-elicitation-request=always"],
    )
    .await;
    let client = McpClient::new(&gateway.url).with_capabilities(json!({"elicitation": {}}));
    let task = client
        .start_task("trigger-elicitation-request", json!({}))
        .await;
    let answer = json!({"action": "accept", "content": form()});
    let done = gateway::answer_the_one_request(&client, &task, "elicitation/create", answer).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done["result"]["result"].to_string();
    assert!(text.contains("Ada"), "the answer reached the tool: {done}");
}

#[tokio::test]
async fn tasks_cancel_cancels_the_reference_servers_call() {
    let gateway = gateway::start_stdio(&EVERYTHING, &[]).await;
    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task(
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
        )
        .await;
    let cancelled = client.tasks_cancel(&task).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    assert!(
        gateway
            .wait_log(
                "notifications/cancelled sent to the stdio server",
                Duration::from_secs(5)
            )
            .await,
        "{}",
        gateway.log()
    );
    let after = client.tasks_get(&task).await;
    assert_eq!(after["result"]["status"], "cancelled", "{after}");
}

#[tokio::test]
async fn a_2025_sessions_client_answers_the_reference_servers_elicitation_on_its_calls_stream() {
    let gateway = gateway::start_stdio(&EVERYTHING, &[]).await;
    let session = LegacyClient::connect_with(&gateway.url, ElicitReply::Accept(form())).await;
    let answer = session
        .request(
            "tools/call",
            json!({"name": "trigger-elicitation-request", "arguments": {}}),
        )
        .await
        .expect("the call");
    assert!(answer.to_string().contains("Ada"), "{answer}");
    let asked = session.received();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    session.close().await;
}

#[tokio::test]
async fn a_2025_sessions_task_relays_the_reference_servers_elicitation_through_tasks_result() {
    let gateway = gateway::start_stdio(&EVERYTHING, &[]).await;
    let session = LegacyClient::connect_with(&gateway.url, ElicitReply::Accept(form())).await;
    let created = session
        .request(
            "tools/call",
            json!({"name": "trigger-elicitation-request", "arguments": {}, "task": {"ttl": 60_000}}),
        )
        .await
        .expect("a task-augmented call");
    let task = created["task"]["taskId"].as_str().expect("taskId");
    let result = session
        .request("tasks/result", json!({"taskId": task}))
        .await
        .expect("tasks/result");
    assert!(result.to_string().contains("Ada"), "{result}");
    let asked = session.received();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task
    );
    session.close().await;
}
