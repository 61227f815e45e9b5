//! A server with tasks of its own (SEP-2663, 2026-07-28) behind the
//! gateway: FastMCP with its tasks extension (`fastmcp[tasks]` 4.1.4,
//! `scripts/upstream-python.sh --tasks`), whose `research` and `approve` run
//! only as tasks. Its tools work through the gateway as they do directly:
//!
//! - a task handle it answers in time reaches the client as it is, and the
//!   task methods for its ids go to it (`own_tasks`);
//! - a call the gateway parked before the handle came (threshold 0) keeps
//!   the gateway's task, which follows the server's to its end: status,
//!   input, result and cancel (`runtime::follow`);
//! - FastMCP's own client, which drives tasks itself, gets its results
//!   both ways.

use crate::{gateway, support};

use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::process::Process;
use tokio::process::Command;

const WAIT: Duration = Duration::from_secs(30);

/// The FastMCP server with tasks of its own.
async fn upstream() -> Process {
    gateway::upstream_script_with("upstream-python.sh", &["--tasks"]).await
}

/// Whether `task` is an id of the gateway's (32 lowercase hex digits)
/// rather than the server's.
fn is_gateways(task: &str) -> bool {
    task.len() == 32 && task.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn text(task: &Value) -> &str {
    task["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// Polls `task` to its end; the final `tasks/get` and the distinct status
/// messages seen on the way.
async fn watch(client: &McpClient, task: &str) -> (Value, Vec<String>) {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut messages: Vec<String> = Vec::new();
    loop {
        let got = client.tasks_get(task).await;
        if let Some(message) = got["result"]["statusMessage"].as_str()
            && messages.last().map(String::as_str) != Some(message)
        {
            messages.push(message.to_owned());
        }
        let status = got["result"]["status"].as_str().unwrap_or_default();
        if ["completed", "failed", "cancelled"].contains(&status) {
            return (got, messages);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{task} did not end: {got}"
        );
        // The interval of a poll that keeps every status message it sees.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `research` for `seconds` as a task; its id.
async fn research(client: &McpClient, topic: &str, seconds: f64) -> String {
    client
        .start_task("research", json!({"topic": topic, "seconds": seconds}))
        .await
}

/// Cancels a long `research` once it runs, and checks that the server's
/// tool was cancelled.
async fn cancel_research(client: &McpClient, upstream: &Process, topic: &str) {
    let task = research(client, topic, 20.0).await;
    let started = format!("research started topic={topic}");
    assert!(
        upstream.wait_log(&started, WAIT).await,
        "{}",
        upstream.log()
    );
    let cancelled = client.tasks_cancel(&task).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    let (ended, _) = watch(client, &task).await;
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
    let stopped = format!("research cancelled topic={topic}");
    assert!(
        upstream.wait_log(&stopped, WAIT).await,
        "{}",
        upstream.log()
    );
}

#[tokio::test]
async fn the_servers_own_tasks_pass_through_the_gateway_as_they_are() {
    let upstream = upstream().await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = McpClient::new(&gateway.url);
    let direct = McpClient::new(&upstream.url);

    let task = research(&client, "tides", 1.5).await;
    assert!(!is_gateways(&task), "the server's own task id: {task}");
    let (ended, messages) = watch(&client, &task).await;
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert_eq!(text(&ended), "Research on tides: done", "{ended}");
    assert!(
        messages.iter().any(|m| m.starts_with("step ")),
        "the server's status messages: {messages:?}"
    );

    // Input of the server's task: asked and answered through the gateway.
    let created = client
        .call_tool("approve", json!({"item": "plan"}), true)
        .await;
    let task = created["result"]["taskId"].as_str().expect("a task");
    assert!(!is_gateways(task), "{created}");
    let answer = json!({"action": "accept", "content": {"ok": true}});
    let ended = gateway::answer_the_one_request(&client, task, "elicitation/create", answer).await;
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert!(text(&ended).contains(r#""ok": true"#), "{ended}");

    cancel_research(&client, &upstream, "cancelled-through").await;

    // As directly: a client without the extension is refused the task-only
    // tool, a plain tool answers, and an unknown id is the server's error.
    for (who, to) in [("gateway", &client), ("directly", &direct)] {
        let refused = to.call_tool("research", json!({"topic": "x"}), false).await;
        assert_eq!(refused["error"]["code"], -32021, "{who}: {refused}");
        let greeted = to.call_tool("greet", json!({"name": "Ada"}), true).await;
        let greeting = &greeted["result"]["content"][0]["text"];
        assert_eq!(greeting, "Hello, Ada!", "{who}: {greeted}");
        let unknown = to.tasks_get("no-such-task").await;
        assert!(unknown["error"]["code"].is_i64(), "{who}: {unknown}");
    }
}

#[tokio::test]
async fn a_call_parked_before_the_server_made_its_task_follows_that_task() {
    let upstream = upstream().await;
    let gateway = gateway::start(&upstream.url, &["--threshold", "0ms"]).await;
    let client = McpClient::new(&gateway.url);

    // Long enough for several of the gateway's polls of the server's task
    // (at most a second apart), even on a loaded machine.
    let task = research(&client, "reefs", 5.0).await;
    assert!(is_gateways(&task), "the gateway's own task: {task}");
    let (ended, messages) = watch(&client, &task).await;
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert_eq!(text(&ended), "Research on reefs: done", "{ended}");
    let steps = messages.iter().filter(|m| m.starts_with("step ")).count();
    assert!(steps >= 2, "the server's status, moving: {messages:?}");
    assert!(
        gateway
            .log()
            .contains("following the inner server's own task")
    );

    let created = client
        .call_tool("approve", json!({"item": "budget"}), true)
        .await;
    let task = created["result"]["taskId"].as_str().expect("a task");
    assert!(is_gateways(task), "{created}");
    let answer = json!({"action": "accept", "content": {"ok": false}});
    let ended = gateway::answer_the_one_request(&client, task, "elicitation/create", answer).await;
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert!(text(&ended).contains(r#""ok": false"#), "{ended}");

    cancel_research(&client, &upstream, "cancelled-followed").await;

    // Cancelled while it waits for its client's answer: the server's task,
    // waiting too, is cancelled with it.
    let created = client
        .call_tool("approve", json!({"item": "left"}), true)
        .await;
    let task = created["result"]["taskId"].as_str().expect("a task");
    client
        .wait_task_status(task, &["input_required"], WAIT)
        .await;
    let sent_before = gateway
        .log()
        .matches("tasks/cancel sent for the inner task")
        .count();
    let cancelled = client.tasks_cancel(task).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    let sent = gateway
        .wait_log_count(
            "tasks/cancel sent for the inner task",
            sent_before + 1,
            WAIT,
        )
        .await;
    assert!(sent, "{}", gateway.log());
}

#[tokio::test]
async fn fastmcps_own_client_gets_its_results_through_the_gateway() {
    let upstream = upstream().await;
    let passed = gateway::start(&upstream.url, &[]).await;
    let parked = gateway::start(&upstream.url, &["--threshold", "0ms"]).await;
    let repo = gateway::repo();
    let cache = std::env::var_os("MCP_TASKS_CACHE").map_or_else(|| repo.join(".cache"), Into::into);
    let python = cache.join("python-tasks-4.1.4/bin/python");
    for (how, gateway) in [("passed through", &passed), ("followed", &parked)] {
        let run = Command::new(&python)
            .arg(repo.join("tests/upstreams/python-tasks/client.py"))
            .arg(&gateway.url)
            .output();
        let run = tokio::time::timeout(WAIT, run)
            .await
            .expect("the client took too long")
            .expect("the client runs");
        let out = String::from_utf8_lossy(&run.stdout);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{how}: {out}\n{err}");
        assert!(
            out.contains("research: Research on tides: done"),
            "{how}: {out}"
        );
        assert!(out.contains("asked: Approve plan?"), "{how}: {out}");
        assert!(
            out.contains(r#"approve: plan: {"action": "accept", "content": {"ok": true}}"#),
            "{how}: {out}"
        );
        let handle = out
            .lines()
            .find_map(|line| line.strip_prefix("handle: "))
            .unwrap_or_else(|| panic!("{how}: {out}"));
        let (task, result) = handle.split_once(' ').expect("id and result");
        assert_eq!(result, "Research on handle: done", "{how}: {out}");
        assert_eq!(is_gateways(task), how == "followed", "{how}: {task}");
    }
}

#[tokio::test]
async fn a_server_task_whose_id_looks_like_the_gateways_still_reaches_the_server() {
    let hex = [("FIXTURE_HEX_TASK_IDS", "1")];
    let upstream = gateway::upstream_script_env("upstream-python.sh", &["--tasks"], &hex).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = McpClient::new(&gateway.url);
    let task = research(&client, "hex", 0.5).await;
    assert!(is_gateways(&task), "an id of the gateway's form: {task}");
    let (ended, _) = watch(&client, &task).await;
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert_eq!(text(&ended), "Research on hex: done", "{ended}");
}
