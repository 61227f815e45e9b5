//! The generation bridge: clients of protocol 2026-07-28 in front of an
//! upstream that speaks only 2025-11-25 (the official Python SDK 1.30, the
//! kind of server most people run), over HTTP and over stdio, with the
//! clients people run (FastMCP 4.1.4's own, on the Python SDK 2.3) and the
//! project's raw one.

use crate::{gateway, support};

use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::process::Process;
use tokio::process::Command;

const PYTHON1_STDIO: [&str; 3] = ["bash", "scripts/upstream-python1.sh", "--stdio"];

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Runs `script` with the Python client that `runner` installs, with
/// `args`; its output lines. The first run installs the client.
async fn python_client(runner: &str, script: &str, args: &[&str]) -> Vec<String> {
    let repo = gateway::repo();
    let run = Command::new("bash")
        .arg(repo.join(runner))
        .arg(repo.join(script))
        .args(args)
        .current_dir(&repo)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the client finished")
        .expect("the client ran");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().map(str::to_owned).collect()
}

/// FastMCP 4.1.4's client (`tests/upstreams/python-tasks/bridge_client.py`)
/// against `url`; with `ask`, it also calls a tool whose server asks it a
/// question (an elicitation), which it answers.
async fn fastmcp_client(url: &str, ask: bool) -> Vec<String> {
    fastmcp_client_with(url, ask, &[]).await
}

/// [`fastmcp_client`] with more of the script's options (`--token T`).
async fn fastmcp_client_with(url: &str, ask: bool, options: &[&str]) -> Vec<String> {
    let script = "tests/upstreams/python-tasks/bridge_client.py";
    let mut args = vec![url];
    if ask {
        args.push("--ask");
    }
    args.extend_from_slice(options);
    python_client("scripts/client-fastmcp.sh", script, &args).await
}

/// What the client must have seen: the tools, a fast call, with `asked`
/// the server's question and the answer it made, a task with its progress
/// and its result, and a cancelled task.
fn assert_served(lines: &[String], asked: bool) {
    let has = |prefix: &str| lines.iter().any(|line| line.starts_with(prefix));
    assert!(has("tools: confirm,greet,slow"), "{lines:?}");
    assert!(has("greet: Hello, bridge!"), "{lines:?}");
    if asked {
        assert!(
            has("asked: Go on?"),
            "the question reached the client: {lines:?}"
        );
        assert!(
            has("confirm: answered: yes"),
            "its answer reached the server: {lines:?}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("task: ") && line.ends_with(" working")),
        "{lines:?}"
    );
    let progress = lines
        .iter()
        .filter(|line| line.starts_with("status: step "))
        .count();
    assert!(
        progress >= 2,
        "the task's status followed the tool's progress: {lines:?}"
    );
    assert!(has("result: bridge done after 2.0s"), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("cancelled: ") && line.ends_with(" cancelled")),
        "{lines:?}"
    );
}

/// Waits until `process` logged `needle`.
async fn logged(process: &Process, needle: &str) {
    assert!(
        process.wait_log(needle, Duration::from_secs(20)).await,
        "{} never logged {needle:?}:\n{}",
        process.name,
        process.log()
    );
}

#[tokio::test]
async fn fastmcps_client_gets_a_task_with_progress_and_is_asked_by_a_python_sdk_1_server_over_http()
{
    let upstream = gateway::upstream_script("upstream-python1.sh").await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let lines = fastmcp_client(&gateway.url, true).await;
    assert_served(&lines, true);
    logged(&gateway, "the upstream speaks protocol 2025-11-25 or older").await;
    // The cancelled task's call stopped in the server, not only here.
    logged(&upstream, "slow cancelled label=doomed").await;
}

#[tokio::test]
async fn fastmcps_client_gets_a_task_from_a_python_sdk_1_server_that_opens_no_session() {
    let upstream = gateway::upstream_script_with("upstream-python1.sh", &["--stateless"]).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let lines = fastmcp_client(&gateway.url, false).await;
    // A stateless server can neither ask (its question's answer would come
    // in no session) nor be told of the cancel (outside a session it could
    // not tell whose call it is): the rest holds.
    assert_served(&lines, false);
    logged(&gateway, "the upstream speaks protocol 2025-11-25 or older").await;
}

#[tokio::test]
async fn fastmcps_client_gets_a_task_with_progress_and_is_asked_by_a_python_sdk_1_server_over_stdio()
 {
    let gateway = gateway::start_stdio(&PYTHON1_STDIO, &[]).await;
    let lines = fastmcp_client(&gateway.url, true).await;
    assert_served(&lines, true);
    logged(&gateway, "slow cancelled label=doomed").await;
}

#[tokio::test]
async fn an_upstream_that_wants_credentials_gets_each_clients_in_sessions_of_their_own() {
    let tokens = ["--tokens", "alice,bob"];
    let upstream = gateway::upstream_script_with("upstream-python1.sh", &tokens).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    // The probe and the sessions go with the client's credentials: without
    // them the upstream answers 401 and nothing is bridged.
    let lines = fastmcp_client_with(&gateway.url, true, &["--token", "alice"]).await;
    assert_served(&lines, true);
    logged(&upstream, "session opened token=alice").await;
    // Another principal is not served in alice's session.
    let bob = McpClient::new(&gateway.url).with_bearer("bob");
    let greeted = bob.call_tool("greet", json!({"name": "bob"}), false).await;
    assert_eq!(text(&greeted["result"]), "Hello, bob!", "{greeted}");
    logged(&upstream, "session opened token=bob").await;
    // And a client without credentials gets the upstream's refusal.
    let nobody = McpClient::new(&gateway.url);
    let refused = nobody.request("tools/list", json!({}), false).await;
    assert!(
        refused.status.is_client_error() || refused.status.is_server_error(),
        "{}",
        refused.body
    );
}

#[tokio::test]
async fn the_bridge_answers_discover_from_initialize_and_keeps_each_clients_ids_apart() {
    let upstream = gateway::upstream_script("upstream-python1.sh").await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = McpClient::new(&gateway.url);

    let discovered = client.discover().await;
    let result = &discovered["result"];
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-tasks-python1-fixture",
        "{discovered}"
    );
    assert_eq!(result["supportedVersions"][0], "2026-07-28", "{discovered}");
    assert!(result["capabilities"]["tools"].is_object(), "{discovered}");
    assert!(result["ttlMs"].is_number() && result["cacheScope"].is_string());

    let listed = client
        .request("tools/list", json!({}), false)
        .await
        .into_response();
    let listed = &listed["result"];
    assert_eq!(listed["resultType"], "complete", "{listed}");
    assert_eq!(listed["ttlMs"], 0, "{listed}");
    assert_eq!(listed["cacheScope"], "private", "{listed}");

    // Two clients whose calls carry the same id at once, in the same
    // upstream session: each gets its own answer, under its own id.
    let first = McpClient::new(&gateway.url);
    let second = McpClient::new(&gateway.url);
    let (a, b) = tokio::join!(
        first.call_tool("slow", json!({"seconds": 0.6, "label": "first"}), false),
        second.call_tool("slow", json!({"seconds": 0.6, "label": "second"}), false),
    );
    assert_eq!(a["id"], b["id"], "the same id: {a} {b}");
    assert_eq!(text(&a["result"]), "first done after 0.6s", "{a}");
    assert_eq!(text(&b["result"]), "second done after 0.6s", "{b}");
    assert_eq!(a["result"]["resultType"], "complete", "{a}");

    // A 2025-11-25 client of the same gateway keeps its own session.
    let session = client.legacy_initialize("2025-11-25", json!({})).await;
    let tools = client
        .legacy_request(&session, "2025-11-25", "tools/list", json!({}))
        .await
        .into_response();
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() == 3)
    );
    assert!(tools["result"].get("resultType").is_none(), "{tools}");
}

#[tokio::test]
async fn an_operator_who_says_the_upstream_speaks_2026_07_28_gets_no_bridge() {
    let upstream = gateway::upstream_script("upstream-python1.sh").await;
    let extra = ["--upstream-generation", "2026-07-28"];
    let gateway = gateway::start(&upstream.url, &extra).await;
    let discovered = McpClient::new(&gateway.url).discover().await;
    assert!(
        discovered.get("result").is_none(),
        "the upstream's own refusal: {discovered}"
    );
}

/// The Python SDK 1.30 client's 2025-11-25 tasks
/// (`scripts/interop/python1_tasks.py`) against `url`.
async fn python1_tasks_client(url: &str) -> Vec<String> {
    let args = [url, "slow_compute", "1.5"];
    python_client(
        "scripts/client-python1.sh",
        "scripts/interop/python1_tasks.py",
        &args,
    )
    .await
}

#[tokio::test]
async fn a_python_sdk_1_client_gets_its_tasks_in_front_of_a_server_that_opens_no_session() {
    // The TypeScript SDK v2 server: 2026-07-28 statelessly, and 2025-era
    // requests without a session.
    let upstream =
        gateway::upstream_script_with("upstream-typescript.sh", &["--legacy=stateless"]).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let lines = python1_tasks_client(&gateway.url).await;
    let has = |line: &str| lines.iter().any(|seen| seen == line);
    assert!(
        has("tasks: True"),
        "the initialize answer declares tasks: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("task: ") && line.ends_with(" working")),
        "{lines:?}"
    );
    assert!(has("status: completed"), "{lines:?}");
    assert!(has("result: kept done after 1.5s"), "{lines:?}");
    logged(&gateway, "a 2025-11-25 session kept by the gateway").await;
}
