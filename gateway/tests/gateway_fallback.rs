//! The fallback through `mcp-tasks-gateway`, as a new user meets it: a
//! client that knows no tasks (the official Python SDK 1.x, defaults
//! everywhere, `scripts/interop/python1_fallback.py`) calls a long tool
//! through the gateway with `--fallback-after`, gets a task back, reads the
//! outcome and cancels through the two added tools. The upstream is the
//! rmcp fixture, in sessions (the 1.x client speaks 2025-11-25).
//!
//! The tool runs `FALLBACK_TOOL_SECONDS` (default 20 s; `.ci/run` asks for
//! 180, the three minutes of the issue).

#[path = "support/gateway.rs"]
mod gateway;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::time::Duration;

use support::fixture::{FixtureMode, serve_fixture};
use tokio::process::Command;

#[tokio::test]
async fn a_python_sdk_1_client_reads_a_long_tools_outcome_through_the_added_tools() {
    let seconds: u64 = std::env::var("FALLBACK_TOOL_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(20);
    let (upstream, _) = serve_fixture(FixtureMode::Session).await;
    let options = ["--fallback-after", "2s", "--fallback", "echo_headers=off"];
    let gateway = gateway::start(&upstream.url, &options).await;
    // The start says which tools the fallback answers for, and which not.
    assert!(
        gateway
            .wait_log(
                "the fallback answers clients without tasks",
                Duration::from_secs(30)
            )
            .await,
        "{}",
        gateway.log()
    );
    let said = gateway.log();
    let line = said
        .lines()
        .find(|line| line.contains("the fallback answers clients without tasks"))
        .unwrap_or_default();
    assert!(line.contains("slow_structured after 2s"), "{line}");
    assert!(line.contains("never=echo_headers"), "{line}");
    let repo = gateway::repo();
    let mut client = Command::new("bash");
    client
        .arg(repo.join("scripts/client-python1.sh"))
        .arg(repo.join("scripts/interop/python1_fallback.py"))
        .arg(&gateway.url)
        .arg(seconds.to_string())
        .kill_on_drop(true);
    // The SDK's install (the first time), the tool's run, and the rest.
    let limit = Duration::from_secs(600 + seconds);
    let output = tokio::time::timeout(limit, client.output())
        .await
        .expect("the client finished in time")
        .expect("the client ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed:\n{stdout}\n{stderr}\ngateway log:\n{}",
        gateway.log()
    );
    // Each step printed its line; the last one sums up.
    for step in ["1. ", "2. ", "3. ", "4. ", "5. "] {
        assert!(stdout.contains(step), "no step {step}:\n{stdout}");
    }
    let summary = stdout
        .lines()
        .find_map(|line| line.strip_prefix("summary "))
        .unwrap_or_else(|| panic!("no summary:\n{stdout}"));
    let summary: serde_json::Value = serde_json::from_str(summary).expect("summary JSON");
    assert_eq!(summary["protocolVersion"], "2025-11-25", "{summary}");
    let answered = summary["answeredAfterS"].as_f64().unwrap_or(f64::MAX);
    assert!((2.0..10.0).contains(&answered), "{summary}");
    let finished = summary["outcomeAfterS"].as_f64().unwrap_or_default();
    assert!(finished >= seconds as f64, "{summary}");
    // The client sent no progress token: the progress it read is the
    // layer's own (issue #34, item 2).
    let progress = summary["progressMessagesSeen"].as_u64().unwrap_or_default();
    assert!(progress >= 2, "{summary}");
    println!("{stdout}");
}
