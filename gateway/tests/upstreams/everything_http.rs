//! The official MCP reference server (`@modelcontextprotocol/server-everything`
//! from npm, TypeScript SDK 1.x) over Streamable HTTP behind the gateway.
//! It declares `capabilities.tasks` and runs `simulate-research-query` only
//! as a task of its own (`execution.taskSupport: "required"`): a 2025-11-25
//! client's task for it works through the gateway as it does directly, the
//! gateway following the server's task under a task of its own
//! (`legacy::follow`). What `tools/list` advertises is what the gateway
//! accepts.

use crate::{gateway, support};

use serde_json::{Value, json};
use support::client::{LegacyClient, McpClient};
use support::session::Session;

const SCRIPT: &str = "stdio-everything.sh";

/// A 2025-11-25 session with the server at `url`.
async fn session(url: &str) -> Session {
    Session::open_with(McpClient::new(url), None, "2025-11-25").await
}

/// The `execution.taskSupport` of each tool in `tools/list`.
async fn task_support(session: &Session) -> Vec<(String, Value)> {
    let listed = session.request("tools/list", json!({})).await;
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {listed}"))
        .iter()
        .map(|tool| {
            let name = tool["name"].as_str().unwrap_or_default().to_owned();
            (name, tool["execution"]["taskSupport"].clone())
        })
        .collect()
}

fn support_of(listed: &[(String, Value)], tool: &str) -> Value {
    listed
        .iter()
        .find(|(name, _)| name == tool)
        .map(|(_, support)| support.clone())
        .unwrap_or_else(|| panic!("{tool} not listed: {listed:?}"))
}

/// Runs the research tool as a task in `session`; its task id and result.
async fn research(session: &Session, topic: &str) -> (String, Value) {
    let created = session
        .call_as_task(
            "simulate-research-query",
            json!({"topic": topic}),
            json!({"ttl": 60_000}),
        )
        .await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let result = session
        .request("tasks/result", json!({"taskId": task}))
        .await;
    (task, result)
}

/// Waits (up to 5 s) for `needle` in the gateway's log.
async fn assert_logged(gateway: &support::process::Process, needle: &str) {
    let seen = gateway
        .wait_log(needle, std::time::Duration::from_secs(5))
        .await;
    assert!(seen, "{needle}: {}", gateway.log());
}

fn report(result: &Value) -> &str {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn the_reference_servers_task_only_tool_works_through_the_gateway_as_it_does_directly() {
    let upstream = gateway::upstream_script(SCRIPT).await;

    // Directly: the server's own task.
    let direct = session(&upstream.url).await;
    let listed = task_support(&direct).await;
    assert_eq!(support_of(&listed, "simulate-research-query"), "required");
    let (_, result) = research(&direct, "tides").await;
    assert!(
        report(&result).contains("Research Report: tides"),
        "{result}"
    );

    // Through the gateway: the gateway's task, following the server's.
    let gateway = gateway::start(&upstream.url, &[]).await;
    let through = session(&gateway.url).await;
    let listed = task_support(&through).await;
    assert_eq!(support_of(&listed, "simulate-research-query"), "required");
    // The gateway runs any other tool as a task of its own, whatever the
    // server says of it.
    assert_eq!(
        support_of(&listed, "trigger-long-running-operation"),
        "optional"
    );
    let (task, result) = research(&through, "moons").await;
    assert!(
        task.len() == 32 && task.bytes().all(|b| b.is_ascii_hexdigit()),
        "the gateway's own task id: {task}"
    );
    assert!(
        report(&result).contains("Research Report: moons"),
        "{result}\n{}",
        gateway.log()
    );
    let got = through.request("tasks/get", json!({"taskId": task})).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
}

#[tokio::test]
async fn a_tool_the_server_marks_forbidden_runs_as_the_gateways_task() {
    let upstream = gateway::upstream_script(SCRIPT).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let through = session(&gateway.url).await;
    let created = through
        .call_as_task(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
            json!({}),
        )
        .await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let result = through
        .request("tasks/result", json!({"taskId": task}))
        .await;
    assert!(
        report(&result).contains("Long running operation completed"),
        "{result}"
    );
}

#[tokio::test]
async fn cancelling_the_gateways_task_cancels_the_servers_own() {
    let upstream = gateway::upstream_script(SCRIPT).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let through = session(&gateway.url).await;
    let created = through
        .call_as_task(
            "simulate-research-query",
            json!({"topic": "comets"}),
            json!({}),
        )
        .await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    // Once the server made its task, which the gateway then follows.
    assert_logged(&gateway, "following the inner server's own task").await;
    let cancelled = through
        .request("tasks/cancel", json!({"taskId": task}))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_logged(
        &gateway,
        "tasks/cancel sent for the inner server's own task",
    )
    .await;
}

#[tokio::test]
async fn the_servers_question_inside_its_own_task_reaches_the_client_through_the_gateways() {
    let upstream = gateway::upstream_script(SCRIPT).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let through = session(&gateway.url).await;
    let created = through
        .call_as_task(
            "simulate-research-query",
            json!({"topic": "python", "ambiguous": true}),
            json!({}),
        )
        .await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    // The gateway's status notifications may come first on the stream.
    let (mut stream, mut asked) = through.first_relayed(&task).await;
    while asked["method"] == "notifications/tasks/status" {
        asked = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next_message())
            .await
            .expect("the question in time")
            .expect("the question");
    }
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let answer = json!({"action": "accept", "content": {"interpretation": "snakes"}});
    let (status, body) = through.answer(&asked, answer).await;
    assert!(status.is_success(), "{status} {body}");
    let result = loop {
        let message =
            tokio::time::timeout(std::time::Duration::from_secs(20), stream.next_message())
                .await
                .expect("the result in time")
                .expect("the result");
        if message.get("method").is_none() {
            break message;
        }
    };
    assert!(
        report(&result).contains("snakes"),
        "{result}\n{}",
        gateway.log()
    );
}

#[tokio::test]
async fn rmcps_2025_11_25_client_gets_the_research_report_through_the_gateway() {
    // A client that is not the project's: rmcp 2.2, as a 2025-11-25 session.
    let upstream = gateway::upstream_script(SCRIPT).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = LegacyClient::connect(&gateway.url).await;
    let result = gateway::legacy_task_result(
        &client,
        "simulate-research-query",
        json!({"topic": "reefs"}),
    )
    .await;
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: reefs"), "{result}");
    client.close().await;
}
