//! `mcp-tasks-gateway --sqlite` killed with SIGKILL while it runs a task,
//! then started again on the same file, in front of the rmcp fixture over
//! loopback (the fixture lives in this test process and counts each run of
//! its tools):
//!
//! | The tool                        | After the restart                                     |
//! |---------------------------------|-------------------------------------------------------|
//! | named by `--retry`              | runs a second time and completes; its task id is kept |
//! | not named                       | `failed`, with a message that says the server stopped |
//! | marked `idempotentHint` upstream | runs again as if named (not with `--retry-hints false`) |
//! | named, but its attempts spent   | `failed`, with a message that says so                  |
//! | named, still running when a drain (SIGTERM) gives up | left `working`; runs again at the next start |
//! | named, its upstream down at the restart | waits for the upstream (no attempt spent), then runs and completes |
//! | marked `idempotentHint`, its upstream killed under its call (no gateway restart) | runs again once the upstream is back, counted as a run, and completes |

use crate::{gateway, support};

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_at, serve_fixture, service};
use support::process::Process;

/// A fresh task file, removed with its WAL when dropped.
struct TaskFile(PathBuf);

impl TaskFile {
    fn new() -> Self {
        let name = format!("mcp-tasks-durable-{}.db", rand_suffix());
        Self(std::env::temp_dir().join(name))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for TaskFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

fn rand_suffix() -> String {
    mcp_tasks::TaskId::generate().expect("random").to_string()
}

/// The gateway over `file` in front of `upstream`, with `extra` options.
async fn gateway_on(upstream: &str, file: &TaskFile, extra: &[&str]) -> Process {
    let mut args = vec!["--sqlite", file.path()];
    args.extend_from_slice(extra);
    gateway::start(upstream, &args).await
}

/// Parks a call of `tool` through `gateway`, waits until the fixture runs
/// it, and kills the gateway; the task id.
async fn park_then_kill(
    gateway: &mut Process,
    probe: &support::fixture::Probe,
    tool: &str,
    arguments: Value,
) -> String {
    let client = McpClient::new(&gateway.url);
    let task = client.start_task(tool, arguments).await;
    assert!(
        probe.wait_started(tool, Duration::from_secs(10)).await,
        "the fixture runs the call"
    );
    gateway.kill().await;
    task
}

fn status_message(response: &Value) -> &str {
    response["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_retried_tool_runs_again_after_a_sigkill_and_its_task_completes() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let file = TaskFile::new();
    let retry = ["--retry", "slow_compute=3"];
    let mut first = gateway_on(&upstream.url, &file, &retry).await;
    let task = park_then_kill(&mut first, &probe, "slow_compute", json!({"seconds": 1.5})).await;
    assert_eq!(probe.started("slow_compute"), 1);

    let second = gateway_on(&upstream.url, &file, &retry).await;
    let client = McpClient::new(&second.url);
    // The first request the new gateway serves makes it take the task up.
    let seen = client.tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    assert!(
        status_message(&seen).contains("attempt 2 of 3"),
        "the status message says which attempt runs: {seen}"
    );
    let done = client
        .wait_task_status(&task, &["completed", "failed"], Duration::from_secs(20))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "slow_compute done after 1.5s",
        "{done}"
    );
    assert_eq!(probe.started("slow_compute"), 2, "the tool ran twice");
}

#[tokio::test]
async fn a_tool_not_named_for_retry_is_failed_with_a_reason_after_a_sigkill() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let file = TaskFile::new();
    let mut first = gateway_on(&upstream.url, &file, &[]).await;
    let task = park_then_kill(&mut first, &probe, "failing_job", json!({"seconds": 30})).await;

    let second = gateway_on(&upstream.url, &file, &[]).await;
    let client = McpClient::new(&second.url);
    let seen = client.tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "failed", "{seen}");
    assert!(
        status_message(&seen).contains("stopped while this task ran"),
        "{seen}"
    );
    // Nothing runs it again, however long one waits for it.
    let again = client.tasks_get(&task).await;
    assert_eq!(again["result"]["status"], "failed", "{again}");
    assert_eq!(probe.started("failing_job"), 1, "the tool ran once");
}

#[tokio::test]
async fn a_tool_the_upstream_marks_idempotent_runs_again_without_retry_unless_hints_are_off() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    // `slow_compute` carries `idempotentHint: true` in the fixture's tools/list.
    let file = TaskFile::new();
    let mut first = gateway_on(&upstream.url, &file, &[]).await;
    let hinted = park_then_kill(&mut first, &probe, "slow_compute", json!({"seconds": 1.5})).await;
    let second = gateway_on(&upstream.url, &file, &[]).await;
    let client = McpClient::new(&second.url);
    let done = client
        .wait_task_status(&hinted, &["completed", "failed"], Duration::from_secs(20))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(probe.started("slow_compute"), 2, "run again on the hint");
    drop(second);

    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let file = TaskFile::new();
    let off = ["--retry-hints", "false"];
    let mut first = gateway_on(&upstream.url, &file, &off).await;
    let task = park_then_kill(&mut first, &probe, "slow_compute", json!({"seconds": 1.5})).await;
    let second = gateway_on(&upstream.url, &file, &off).await;
    let client = McpClient::new(&second.url);
    let seen = client.tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "failed", "hints off: {seen}");
    assert_eq!(probe.started("slow_compute"), 1);
}

#[tokio::test]
async fn a_retried_tool_whose_attempts_are_spent_is_failed_and_says_so() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let file = TaskFile::new();
    let retry = ["--retry", "slow_compute=2"];
    let mut first = gateway_on(&upstream.url, &file, &retry).await;
    let task = park_then_kill(&mut first, &probe, "slow_compute", json!({"seconds": 30})).await;

    // The second run is killed as well, once the fixture has started it.
    let mut second = gateway_on(&upstream.url, &file, &retry).await;
    let client = McpClient::new(&second.url);
    let seen = client.tasks_get(&task).await;
    assert!(status_message(&seen).contains("attempt 2 of 2"), "{seen}");
    assert!(
        probe
            .wait_until(Duration::from_secs(10), |p| p.started("slow_compute") == 2)
            .await,
        "the second run starts"
    );
    second.kill().await;

    let third = gateway_on(&upstream.url, &file, &retry).await;
    let client = McpClient::new(&third.url);
    let seen = client.tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "failed", "{seen}");
    assert!(
        status_message(&seen).contains("last of its 2 attempts"),
        "{seen}"
    );
    assert_eq!(probe.started("slow_compute"), 2, "no third run");
}

#[tokio::test]
async fn a_retried_tool_still_running_when_a_drain_gives_up_runs_again_at_the_next_start() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let file = TaskFile::new();
    let options = ["--retry", "slow_compute=3", "--shutdown-grace", "200ms"];
    let mut first = gateway_on(&upstream.url, &file, &options).await;
    let client = McpClient::new(&first.url);
    let retried = client
        .start_task("slow_compute", json!({"seconds": 1.5}))
        .await;
    let once = client
        .start_task("failing_job", json!({"seconds": 30}))
        .await;
    assert!(
        probe
            .wait_started("slow_compute", Duration::from_secs(10))
            .await,
        "the fixture runs the call"
    );
    first.terminate();
    let status = first.wait_exit(Duration::from_secs(20)).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "the gateway drains and exits: {status:?}"
    );

    let second = gateway_on(&upstream.url, &file, &options).await;
    let client = McpClient::new(&second.url);
    let done = client
        .wait_task_status(&retried, &["completed", "failed"], Duration::from_secs(20))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(probe.started("slow_compute"), 2, "handed over, not failed");
    let failed = client.tasks_get(&once).await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert!(
        status_message(&failed).contains("shut down"),
        "a tool not named for retry fails at the drain, as before: {failed}"
    );
}

#[tokio::test]
async fn a_rerun_waits_for_an_upstream_that_is_not_up_yet_and_spends_no_attempt_on_it() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let (addr, url) = (upstream.addr, upstream.url.clone());
    let file = TaskFile::new();
    // Two attempts: the crash takes the first, so one refused connection
    // counted as an attempt would fail the task for good.
    let retry = ["--retry", "slow_compute=2"];
    let mut first = gateway_on(&url, &file, &retry).await;
    let task = park_then_kill(&mut first, &probe, "slow_compute", json!({"seconds": 1.5})).await;
    upstream.shutdown().await;

    let second = gateway_on(&url, &file, &retry).await;
    let client = McpClient::new(&second.url);
    let seen = client.tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    assert!(
        second
            .wait_log("the call waits for it", Duration::from_secs(10))
            .await,
        "the re-run finds the upstream down: {}",
        second.log()
    );
    let waiting = client.tasks_get(&task).await;
    assert_eq!(waiting["result"]["status"], "working", "{waiting}");
    assert!(
        status_message(&waiting).contains("Waiting for the inner server"),
        "the status message says that it waits: {waiting}"
    );
    assert_eq!(
        probe.started("slow_compute"),
        1,
        "nothing reached the upstream"
    );

    // The upstream comes back on the same address: the call goes through.
    let _again = serve_at(addr, service(FixtureMode::Stateless, probe.clone())).await;
    let done = client
        .wait_task_status(&task, &["completed", "failed"], Duration::from_secs(30))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(probe.started("slow_compute"), 2, "the tool ran once more");
}

/// The chaos upstream (`tests/upstreams/chaos/server.py`, Python SDK 1.30)
/// at `address`, logging each run of its tools to `runs`.
async fn chaos_upstream(address: &str, runs: &str) -> Process {
    let mut command = tokio::process::Command::new("bash");
    command
        .arg("scripts/client-python1.sh")
        .arg("tests/upstreams/chaos/server.py")
        .args([address, runs])
        .current_dir(gateway::repo());
    Process::start("chaos upstream", command, Duration::from_secs(600)).await
}

/// How many lines of the file `runs` start with `prefix`.
fn runs_of(runs: &TaskFile, prefix: &str) -> usize {
    std::fs::read_to_string(&runs.0)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with(prefix))
        .count()
}

#[tokio::test]
async fn an_idempotent_tool_whose_upstream_dies_under_its_call_runs_again_and_completes() {
    let runs = TaskFile::new();
    let mut upstream = chaos_upstream("127.0.0.1:0", runs.path()).await;
    let address = upstream
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let file = TaskFile::new();
    let gateway = gateway_on(&upstream.url, &file, &[]).await;
    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task("slow_idem", json!({"id": "t1", "seconds": 4}))
        .await;
    let started = || runs_of(&runs, "start slow_idem t1 ");
    support::wait::wait_until(
        "the upstream runs the call",
        support::wait::BOUND,
        || async { started() == 1 },
    )
    .await;
    upstream.kill().await;
    let _again = chaos_upstream(&address, runs.path()).await;
    let done = client
        .wait_task_status(&task, &["completed", "failed"], Duration::from_secs(60))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(started(), 2, "the call ran once more");
    assert!(
        gateway.log().contains("it runs again"),
        "the gateway says why: {}",
        gateway.log()
    );
}
