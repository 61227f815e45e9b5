//! `mcp-tasks-gateway` and the upstreams of the gateway tests, as child
//! processes. Only for the gateway crate's tests (the binary's path comes
//! from Cargo): include it with `#[path = "support/gateway.rs"] mod gateway;`
//! beside the library's support (`../../tests/support/mod.rs`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

use crate::support::process::Process;

/// How long an upstream script may take to install its SDK and start.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The tool policies the conformance tools need (see
/// `examples/conformance_server.rs`).
pub const FIXTURE_POLICIES: &str = "confirm_delete=always,multi_input=always,protocol_error_job=always,failing_job=required,test_tool_with_task=required";

/// Starts the gateway in front of `upstream` on a free loopback port, with a
/// 300 ms threshold and `extra` options.
pub async fn start(upstream: &str, extra: &[&str]) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"));
    command
        .args(["--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(["--threshold", "300ms"])
        .args(extra)
        .env("RUST_LOG", "info,mcp_tasks=debug");
    Process::start("mcp-tasks-gateway", command, Duration::from_secs(30)).await
}

/// Starts the gateway in front of the stdio server `command` (run from the
/// repository's root), on a free loopback port, with a 300 ms threshold and
/// `extra` options. The server may take [`INSTALL_TIMEOUT`] to start (a
/// script installs its SDK first).
pub async fn start_stdio(command: &[&str], extra: &[&str]) -> Process {
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"));
    gateway
        .args(["--listen", "127.0.0.1:0", "--threshold", "300ms"])
        .args(["--start-timeout", "600s"])
        .args(extra)
        .arg("--")
        .args(command)
        .current_dir(repo())
        .env("RUST_LOG", "info,mcp_tasks=debug");
    Process::start("mcp-tasks-gateway", gateway, INSTALL_TIMEOUT).await
}

/// The URL of the gateway's metrics endpoint (`--metrics`), from the line
/// it prints once it listens.
pub async fn metrics_url(gateway: &Process) -> String {
    announced(gateway, "metrics on ").await
}

/// The URL a line of the gateway's that starts with `what` (e.g.
/// `"console on "`) names, once it printed it (within 10 s).
pub async fn announced(gateway: &Process, what: &str) -> String {
    let line = format!("{what}http://");
    assert!(
        gateway.wait_log(&line, Duration::from_secs(10)).await,
        "no {what:?} line: {}",
        gateway.log()
    );
    let log = gateway.log();
    let at = log.find(&line).expect("the line") + what.len();
    log[at..].lines().next().expect("url").trim().to_owned()
}

/// The first answer to `tool` with a result, once a stdio server that
/// exited was started again (within 20 s).
pub async fn answered_again(
    client: &crate::support::client::McpClient,
    tool: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let answered = async {
        loop {
            let answer = client.call_tool(tool, arguments.clone(), false).await;
            if answer.get("result").is_some() {
                return answer;
            }
            // The poll interval of a bounded wait for the restarted server.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), answered)
        .await
        .expect("the server was started again")
}

/// Waits for `task` to ask for input, checks that it asks one request, of
/// `method`, answers it with `answer`, and returns the task once it ended
/// (`tasks/get`).
pub async fn answer_the_one_request(
    client: &crate::support::client::McpClient,
    task: &str,
    method: &str,
    answer: serde_json::Value,
) -> serde_json::Value {
    let waiting = client
        .wait_task_status(task, &["input_required"], Duration::from_secs(20))
        .await;
    let requests = waiting["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests: {waiting}"));
    assert_eq!(requests.len(), 1, "{waiting}");
    let (key, request) = requests.iter().next().expect("one request");
    assert_eq!(request["method"], method, "{waiting}");
    let updated = client
        .tasks_update(task, serde_json::json!({ key: answer }))
        .await;
    assert_eq!(updated["result"]["resultType"], "complete", "{updated}");
    client
        .wait_task_status(task, &["completed", "failed"], Duration::from_secs(20))
        .await
}

/// The repository's root (the gateway crate is its `gateway/` folder): the
/// scripts and upstream fixtures live there.
pub fn repo() -> PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// An upstream started by one of the repository's scripts
/// (`scripts/upstream-python.sh`, `scripts/upstream-typescript.sh`), which
/// install their SDK into the git-ignored cache first.
pub async fn upstream_script(script: &str) -> Process {
    upstream_script_with(script, &[]).await
}

/// As [`upstream_script`], with `options` before the address.
pub async fn upstream_script_with(script: &str, options: &[&str]) -> Process {
    upstream_script_env(script, options, &[]).await
}

/// As [`upstream_script_with`], with the environment variables `env`.
pub async fn upstream_script_env(script: &str, options: &[&str], env: &[(&str, &str)]) -> Process {
    let mut command = Command::new("bash");
    command
        .arg(repo().join("scripts").join(script))
        .args(options)
        .arg("127.0.0.1:0")
        .envs(env.iter().copied())
        .current_dir(repo());
    Process::start(script, command, INSTALL_TIMEOUT).await
}

/// Calls `tool` as a 2025-11-25 task (`params.task`) and returns its
/// `tasks/result`.
pub async fn legacy_task_result(
    client: &crate::support::client::LegacyClient,
    tool: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let params = serde_json::json!({"name": tool, "arguments": arguments, "task": {"ttl": 60_000}});
    let created = client
        .request("tools/call", params)
        .await
        .unwrap_or_else(|e| panic!("{tool} as a task: {e:?}"));
    let task = created["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    client
        .request("tasks/result", serde_json::json!({"taskId": task}))
        .await
        .unwrap_or_else(|e| panic!("tasks/result of {tool}: {e:?}"))
}
