//! `mcp-tasks-gateway -- COMMAND`: a stdio MCP server started by the
//! gateway and served over Streamable HTTP, with tasks. The server is the
//! Python fixture (FastMCP) over stdio, and a small misbehaving one.

use crate::{gateway, support};

use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::client::legacy::LegacyClient;

const PYTHON: [&str; 3] = ["bash", "scripts/upstream-python.sh", "--stdio"];
const MISBEHAVING: [&str; 2] = ["python3", "tests/upstreams/stdio_misbehaving.py"];

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_stdio_server_answers_fast_calls_at_once_and_its_slow_calls_become_tasks_with_progress() {
    let gateway = gateway::start_stdio(&PYTHON, &[]).await;
    let client = McpClient::new(&gateway.url);

    let discovered = client.discover().await;
    assert_eq!(
        discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-tasks-python-fixture",
        "{discovered}"
    );
    // A 2026-07-28 list result carries the cache hints that client SDKs
    // require (a 2025 server sends none).
    let listed = client
        .request("tools/list", json!({}), false)
        .await
        .into_response();
    let listed = &listed["result"];
    assert_eq!(listed["resultType"], "complete", "{listed}");
    assert_eq!(listed["ttlMs"], 0, "{listed}");
    assert_eq!(listed["cacheScope"], "private", "{listed}");
    assert!(listed["tools"].as_array().is_some_and(|t| !t.is_empty()));
    // A client that does not declare tasks waits for the answer, however
    // long (FastMCP's first call takes about half a second).
    let first = client
        .call_tool("greet", json!({"name": "first"}), false)
        .await;
    assert_eq!(text(&first["result"]), "Hello, first!", "{first}");
    let greeted = client
        .call_tool("greet", json!({"name": "stdio"}), true)
        .await;
    assert_eq!(greeted["result"]["resultType"], "complete", "{greeted}");
    assert_eq!(text(&greeted["result"]), "Hello, stdio!");

    let created = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 1.5, "label": "progress"}),
            json!({"_meta": {"progressToken": "p-1"}}),
            true,
        )
        .await
        .into_response();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().expect("taskId");
    let mut messages = Vec::new();
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let got = client.tasks_get(task).await;
            if let Some(message) = got["result"]["statusMessage"].as_str() {
                messages.push(message.to_owned());
            }
            if got["result"]["status"] != "working" {
                return got;
            }
            // The interval of a bounded poll that keeps every status message it sees.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the task ended");
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]["result"]), "progress done after 1.5s");
    messages.dedup();
    assert!(
        messages.len() >= 2 && messages.iter().all(|m| m.starts_with("progress")),
        "the status message moved with the child's progress: {messages:?}"
    );
}

#[tokio::test]
async fn tasks_cancel_stops_the_call_in_the_stdio_server() {
    let gateway = gateway::start_stdio(&PYTHON, &[]).await;
    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task("slow_compute", json!({"seconds": 30, "label": "stopme"}))
        .await;
    assert!(
        gateway
            .wait_log("slow_compute started label=stopme", Duration::from_secs(10))
            .await
    );
    let cancelled = client.tasks_cancel(&task).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    assert!(
        gateway
            .wait_log(
                "slow_compute cancelled label=stopme",
                Duration::from_secs(10)
            )
            .await,
        "notifications/cancelled reached the child:\n{}",
        gateway.log()
    );
}

#[tokio::test]
async fn an_elicitation_of_the_stdio_server_becomes_the_tasks_input_request_and_tasks_update_answers_it()
 {
    let gateway = gateway::start_stdio(&PYTHON, &["--policy", gateway::FIXTURE_POLICIES]).await;
    let client = McpClient::new(&gateway.url).with_capabilities(json!({"elicitation": {}}));
    let task = client
        .start_task("confirm_delete", json!({"filename": "stdio.txt"}))
        .await;
    let answer = json!({"action": "accept", "content": {"confirm": true}});
    let done = gateway::answer_the_one_request(&client, &task, "elicitation/create", answer).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let said = text(&done["result"]["result"]);
    assert!(said.starts_with("Deleted stdio.txt"), "{done}");
}

#[tokio::test]
async fn a_client_that_did_not_declare_elicitation_is_not_asked() {
    let gateway = gateway::start_stdio(&PYTHON, &[]).await;
    let client = McpClient::new(&gateway.url);
    let params = json!({"name": "confirm_delete", "arguments": {"filename": "x"}});
    let refused = client.request("tools/call", params, false).await;
    // As a 2026-07-28 server answers it: -32021 naming what is missing.
    assert_eq!(refused.status, 400, "{}", refused.body);
    let refused = refused.into_response();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{refused}"
    );
    // The bridge took that path, and told the child to stop its call.
    assert!(
        gateway
            .wait_log("the call ends with -32021", Duration::from_secs(5))
            .await,
        "{}",
        gateway.log()
    );
}

#[tokio::test]
async fn requests_the_bridge_must_read_whole_are_kept_to_one_line_and_bad_ones_get_clear_errors() {
    let gateway = gateway::start_stdio(&PYTHON, &[]).await;
    let client = McpClient::new(&gateway.url).with_timeout(Duration::from_secs(20));
    // Pretty-printed JSON: raw line breaks between tokens must not split
    // the request into lines the child cannot read.
    let meta = client.meta(false);
    let pretty = serde_json::to_string_pretty(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "pretty\nprinted"}, "_meta": meta},
    }))
    .unwrap();
    assert!(pretty.contains('\n'));
    let headers = McpClient::standard_headers("tools/call", Some("greet"));
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, _, text) = client.raw_post(&headers, pretty).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#"Hello, pretty\nprinted!"#), "{text}");

    // A requestState the bridge never gave: an error, not a new run.
    let forged = client
        .call_tool_with(
            "confirm_delete",
            json!({"filename": "f"}),
            json!({"requestState": "forged", "inputResponses": {}}),
            false,
        )
        .await
        .into_response();
    assert_eq!(forged["error"]["code"], -32602, "{forged}");

    // An older client gets its own version in a session.
    let legacy = McpClient::new(&gateway.url);
    let session = legacy.legacy_initialize("2025-06-18", json!({})).await;
    assert!(!session.is_empty());
}

#[tokio::test]
async fn a_2025_session_is_served_by_the_same_stdio_server() {
    let gateway = gateway::start_stdio(&PYTHON, &[]).await;
    let client = LegacyClient::connect(&gateway.url).await;
    let listed = client
        .request("tools/list", json!({}))
        .await
        .expect("tools/list");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"slow_compute"), "{listed}");
    let greeted = client
        .request(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "session"}}),
        )
        .await
        .expect("greet");
    assert_eq!(text(&greeted), "Hello, session!");
    assert!(
        greeted.get("resultType").is_none(),
        "2025 results stay as the child wrote them"
    );
}

#[tokio::test]
async fn a_line_that_is_not_json_is_skipped_and_a_child_that_exits_fails_its_calls_with_the_reason()
{
    let gateway = gateway::start_stdio(&MISBEHAVING, &[]).await;
    let client = McpClient::new(&gateway.url);
    let echoed = client
        .call_tool("echo", json!({"text": "still here"}), true)
        .await;
    assert_eq!(text(&echoed["result"]), "still here", "{echoed}");
    assert!(gateway.log().contains("not JSON"), "{}", gateway.log());

    let crashed = client.call_tool("crash", json!({}), true).await;
    let message = crashed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("stopped") && message.contains("exit status: 3"),
        "{crashed}"
    );
    // Started again: a later call is answered.
    let after = gateway::answered_again(&client, "echo", json!({"text": "again"})).await;
    assert_eq!(text(&after["result"]), "again");
    assert!(gateway.log().contains("started again"), "{}", gateway.log());
}

#[tokio::test]
async fn an_answer_over_the_size_limit_fails_its_call_and_the_server_serves_on() {
    let gateway = gateway::start_stdio(&MISBEHAVING, &["--max-body-bytes", "4096"]).await;
    let client = McpClient::new(&gateway.url);
    let big = client
        .call_tool("big", json!({"bytes": 100_000}), false)
        .await;
    let message = big["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("larger than the limit of 4096 bytes"),
        "{big}"
    );
    let small = client.call_tool("big", json!({"bytes": 10}), false).await;
    assert_eq!(text(&small["result"]), "x".repeat(10), "{small}");
}

#[tokio::test]
async fn a_stdio_server_killed_mid_call_fails_the_task_with_the_signal_and_is_started_again() {
    let gateway = gateway::start_stdio(&PYTHON, &[]).await;
    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task("slow_compute", json!({"seconds": 30, "label": "killed"}))
        .await;
    assert!(
        gateway
            .wait_log("slow_compute started label=killed", Duration::from_secs(10))
            .await
    );
    let pid = child_pid(&gateway.log()).expect("the child's pid in the log");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let failed = client
        .wait_task_status(&task, &["failed", "completed"], Duration::from_secs(10))
        .await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let said = failed["result"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.contains("signal: 9"),
        "the failure names the exit: {failed}"
    );
    let again = gateway::answered_again(&client, "greet", json!({"name": "again"})).await;
    assert_eq!(text(&again["result"]), "Hello, again!");
}

#[tokio::test]
async fn a_gateway_told_to_stop_stops_its_stdio_server() {
    let mut gateway = gateway::start_stdio(&PYTHON, &["--shutdown-grace", "2s"]).await;
    let pid = child_pid(&gateway.log()).expect("the child's pid in the log");
    let alive = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(alive.exists());
    gateway.terminate();
    let status = gateway.wait_exit(Duration::from_secs(10)).await;
    assert!(status.is_some_and(|status| status.success()), "{status:?}");
    assert!(
        !alive.exists(),
        "the stdio server {pid} outlived the gateway"
    );
    // The stop it asked for is logged, and not as an error.
    let log = gateway.log();
    assert!(log.contains("stopped"), "{log}");
    assert!(!log.lines().any(|line| line.contains(" ERROR ")), "{log}");
}

/// The pid of the Python child, from the gateway's log of its stderr: the
/// last `pid=N` on a line the child wrote.
fn child_pid(log: &str) -> Option<u32> {
    log.lines()
        .filter(|line| line.contains("mcp_tasks::stdio::child"))
        .filter_map(|line| line.rsplit("pid=").next()?.trim().parse().ok())
        .next_back()
}

#[tokio::test]
async fn a_command_that_cannot_start_stops_the_gateway_with_a_clear_error() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--",
            "no-such-mcp-server-command",
        ])
        .output()
        .await
        .expect("run the gateway");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("could not start `no-such-mcp-server-command`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_stdio_server_that_does_not_answer_holds_no_call_and_no_place_past_its_bound() {
    let gateway = gateway::start_stdio(
        &MISBEHAVING,
        &[
            "--upstream-request-timeout",
            "1s",
            "--upstream-header-timeout",
            "2s",
            "--max-in-flight",
            "1",
        ],
    )
    .await;
    let client = McpClient::new(&gateway.url);
    // A request that runs no tool gets the shorter bound.
    let listed = client.request("prompts/list", json!({}), false).await;
    assert_eq!(listed.status, 504, "{}", listed.body);
    let said = listed.into_response();
    assert!(
        said["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("did not answer prompts/list within 1s")),
        "{said}"
    );
    // A call the child never answers ends at its bound, on the JSON path
    // and on a stream with progress, and the child is told to stop it.
    let silent = client.call_tool("silent", json!({}), false).await;
    assert!(
        silent["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("did not answer tools/call within 2s")),
        "{silent}"
    );
    let streamed = client
        .call_tool_with(
            "silent",
            json!({}),
            json!({"_meta": {"progressToken": "p"}}),
            false,
        )
        .await;
    assert!(streamed.is_sse(), "{}", streamed.body);
    let streamed = streamed.into_response();
    assert!(
        streamed["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("within 2s")),
        "{streamed}"
    );
    assert!(
        gateway
            .wait_log_count("stdio::child: cancelled", 3, Duration::from_secs(5))
            .await,
        "the child got a cancel for each: {}",
        gateway.log()
    );
    // The one place in flight is free again.
    let echoed = client
        .call_tool("echo", json!({"text": "free"}), false)
        .await;
    assert_eq!(text(&echoed["result"]), "free", "{echoed}");
}

#[tokio::test]
async fn calls_that_arrive_while_a_stdio_server_is_started_again_wait_for_it() {
    let gateway = gateway::start_stdio(&MISBEHAVING, &[]).await;
    let client = McpClient::new(&gateway.url);
    // A child that closes its output but lives on is taken for exited.
    let closed = client.call_tool("close_stdout", json!({}), false).await;
    let said = closed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("its output ended but it did not exit"),
        "{closed}"
    );
    // Sent the moment the crash is answered, while the child is down:
    // each waits for the new child instead of failing.
    let crashed = client.call_tool("crash", json!({}), false).await;
    assert!(
        crashed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("exit status: 3"))
    );
    let calls = (0..4).map(|at| {
        let client = &client;
        async move {
            client
                .call_tool("echo", json!({"text": format!("after {at}")}), false)
                .await
        }
    });
    for (at, answer) in futures_util::future::join_all(calls)
        .await
        .iter()
        .enumerate()
    {
        assert_eq!(text(&answer["result"]), format!("after {at}"), "{answer}");
    }
    assert!(gateway.log().contains("started again"), "{}", gateway.log());
}
