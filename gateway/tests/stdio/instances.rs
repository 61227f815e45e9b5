//! `mcp-tasks-gateway --instances N -- COMMAND`: several copies of a stdio
//! server that reads one call at a time. A call goes to the copy with the
//! most free places; a 2025-11-25 session stays on the copy that served
//! its `initialize`. Each copy answers `pid` with its process id. A call
//! that finds no place among the calls in flight fails after
//! `--place-timeout`.

use crate::{gateway, support};

use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::client::legacy::LegacyClient;

const ONE_AT_A_TIME: [&str; 2] = ["python3", "tests/upstreams/stdio_misbehaving.py"];

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn pid(client: &McpClient) -> String {
    let answer = client.call_tool("pid", json!({}), false).await;
    let pid = text(&answer["result"]);
    assert!(!pid.is_empty(), "{answer}");
    pid
}

async fn session_pid(session: &LegacyClient) -> String {
    let answer = session
        .request("tools/call", json!({"name": "pid", "arguments": {}}))
        .await
        .expect("pid in the session");
    text(&answer)
}

#[tokio::test]
async fn calls_go_to_a_free_copy_and_a_session_stays_on_the_copy_it_began_on() {
    let gateway = gateway::start_stdio(&ONE_AT_A_TIME, &["--instances", "2"]).await;
    let client = McpClient::new(&gateway.url);
    let first = pid(&client).await;
    assert_eq!(
        pid(&client).await,
        first,
        "an idle gateway uses the first copy"
    );

    let holder = McpClient::new(&gateway.url);
    let held = tokio::spawn(async move {
        let answer = holder.call_tool("hold", json!({"seconds": 2}), false).await;
        text(&answer["result"])
    });
    assert!(
        gateway.wait_log("holding", Duration::from_secs(10)).await,
        "{}",
        gateway.log()
    );
    // The first copy is busy: the call and the new session go to the other.
    let second = pid(&client).await;
    assert_ne!(second, first, "a call waited behind a busy copy");
    let session = LegacyClient::connect(&gateway.url).await;
    assert_eq!(session_pid(&session).await, second);

    assert_eq!(held.await.expect("the held call"), first);
    // Both idle again: calls go to the first copy, the session stays.
    assert_eq!(pid(&client).await, first);
    assert_eq!(session_pid(&session).await, second);
    session.close().await;
}

#[tokio::test]
async fn instances_are_for_a_stdio_server_only() {
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"))
        .args(["--upstream", "http://127.0.0.1:9/mcp", "--instances", "2"])
        .output()
        .expect("the gateway runs");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("are for a stdio server"), "{said}");
}

#[tokio::test]
async fn a_call_that_finds_no_place_in_time_is_turned_away_with_503() {
    let gateway = gateway::start_stdio(
        &ONE_AT_A_TIME,
        &["--max-in-flight", "1", "--place-timeout", "1s"],
    )
    .await;
    let holder = McpClient::new(&gateway.url);
    let held = tokio::spawn(async move {
        let answer = holder.call_tool("hold", json!({"seconds": 4}), false).await;
        text(&answer["result"])
    });
    assert!(
        gateway.wait_log("holding", Duration::from_secs(10)).await,
        "{}",
        gateway.log()
    );
    let client = McpClient::new(&gateway.url);
    let turned = client
        .request("tools/call", json!({"name": "pid", "arguments": {}}), false)
        .await;
    assert_eq!(turned.status, 503, "{}", turned.body);
    assert!(turned.body.contains("calls in flight"), "{}", turned.body);
    assert!(
        !held.await.expect("the held call").is_empty(),
        "the held call ends well"
    );
}
