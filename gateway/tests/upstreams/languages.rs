//! `mcp-tasks-gateway` in front of ordinary MCP servers in other languages,
//! which know nothing about tasks: the conformance tools on the official
//! TypeScript SDK (`scripts/upstream-typescript.sh`) and on FastMCP
//! (`scripts/upstream-python.sh`). The scripts install their SDK into the
//! git-ignored cache on first use.
//!
//! Each check runs against each upstream: progress sent by the tool becomes
//! the task's `statusMessage`, `tasks/cancel` really stops the tool (its
//! own log says so), an upstream killed mid-task fails the task with a
//! clear message instead of leaving it `working`, and a 2025-11-25 client
//! (rmcp 2.2) runs tasks in a session, input relayed on `tasks/result`.

use crate::{gateway, support};

use std::time::Duration;

use serde_json::{Value, json};
use support::client::{ElicitReply, LegacyClient, McpClient};
use support::process::Process;
use support::wait::wait_until;

/// The upstream behind `script`, and the gateway in front of it.
async fn start(script: &str) -> (Process, Process, McpClient) {
    let upstream = gateway::upstream_script(script).await;
    let gateway = gateway::start(&upstream.url, &["--policy", gateway::FIXTURE_POLICIES]).await;
    let client = McpClient::new(&gateway.url);
    (upstream, gateway, client)
}

/// Calls `slow_compute` as a declaring client with a progress token and
/// returns the task id of the handle.
async fn park(client: &McpClient, seconds: u64, label: &str) -> String {
    let exchange = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": seconds, "label": label}),
            json!({"_meta": {"progressToken": label}}),
            true,
        )
        .await;
    let handle = exchange.into_response();
    assert_eq!(handle["result"]["resultType"], "task", "{handle}");
    handle["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

/// Polls `tasks/get` until `done` holds for the result, for up to `timeout`.
async fn wait_for(
    client: &McpClient,
    task: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(&format!("task {task} gets there"), timeout, || async {
        let got = client.tasks_get(task).await;
        if done(&got["result"]) {
            Ok(got["result"].clone())
        } else {
            Err(got)
        }
    })
    .await
}

async fn progress_becomes_the_status_message(script: &str) {
    let (_upstream, _gateway, client) = start(script).await;
    let task = park(&client, 2, "bar").await;
    // Progress sent after the task was created shows up in tasks/get.
    let working = wait_for(&client, &task, Duration::from_secs(10), |task| {
        task["statusMessage"]
            .as_str()
            .is_some_and(|message| message.starts_with("bar: ") && message != "bar: started")
    })
    .await;
    assert_eq!(working["status"], "working", "{working}");
    let done = wait_for(&client, &task, Duration::from_secs(10), |task| {
        task["status"] == "completed"
    })
    .await;
    assert!(done["result"]["content"][0]["text"].is_string(), "{done}");
}

async fn cancel_stops_the_tool(script: &str) {
    let (upstream, _gateway, client) = start(script).await;
    let task = park(&client, 60, "stop-me").await;
    assert!(
        upstream
            .wait_log("slow_compute started", Duration::from_secs(5))
            .await,
        "{}",
        upstream.log()
    );
    let ack = client.tasks_cancel(&task).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(
        upstream
            .wait_log("slow_compute cancelled", Duration::from_secs(10))
            .await,
        "the upstream tool kept running:\n{}",
        upstream.log()
    );
    let got = client.tasks_get(&task).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
}

async fn a_killed_upstream_fails_the_task(script: &str) {
    let (mut upstream, _gateway, client) = start(script).await;
    let task = park(&client, 30, "doomed").await;
    assert!(
        upstream
            .wait_log("slow_compute started", Duration::from_secs(5))
            .await
    );
    upstream.kill().await;
    let failed = wait_for(&client, &task, Duration::from_secs(10), |task| {
        task["status"] != "working"
    })
    .await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("The tool call failed: "), "{failed}");
    eprintln!("{script}: killed upstream -> {message}");
}

async fn a_2025_11_25_session_runs_tasks(script: &str) {
    let (_upstream, gateway, _) = start(script).await;
    let client =
        LegacyClient::connect_with(&gateway.url, ElicitReply::Accept(json!({"confirm": true})))
            .await;
    let tasks = &client.server_capabilities()["tasks"];
    assert_eq!(tasks["requests"]["tools"]["call"], json!({}), "{tasks}");
    for (tool, arguments, expected) in [
        (
            "slow_compute",
            json!({"seconds": 1, "label": "l"}),
            "l done after 1s",
        ),
        (
            "confirm_delete",
            json!({"filename": "x.txt"}),
            "Deleted x.txt",
        ),
    ] {
        let result = gateway::legacy_task_result(&client, tool, arguments).await;
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains(expected), "{tool}: {result}");
    }
    assert_eq!(client.received().len(), 1, "one elicitation relayed");
    client.close().await;
}

/// The same checks against each upstream, one test module per language.
macro_rules! upstream_tests {
    ($($language:ident: $script:literal),* $(,)?) => {$(
        mod $language {
            const SCRIPT: &str = $script;

            #[tokio::test]
            async fn progress_becomes_the_status_message() {
                super::progress_becomes_the_status_message(SCRIPT).await;
            }

            #[tokio::test]
            async fn cancel_stops_the_tool() {
                super::cancel_stops_the_tool(SCRIPT).await;
            }

            #[tokio::test]
            async fn a_killed_upstream_fails_the_task() {
                super::a_killed_upstream_fails_the_task(SCRIPT).await;
            }

            #[tokio::test]
            async fn a_2025_11_25_session_runs_tasks() {
                super::a_2025_11_25_session_runs_tasks(SCRIPT).await;
            }
        }
    )*};
}

upstream_tests! {
    typescript: "upstream-typescript.sh",
    python: "upstream-python.sh",
}
