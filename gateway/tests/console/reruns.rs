//! The store card's re-runs pending: a gateway over SQLite killed with
//! SIGKILL while two `--retry` calls run, started again with
//! `--max-running 1`. Before any client request the file's two orphans
//! are pending; the first request takes them up, one runs and the other
//! waits for the running slot (still pending); once both ran, none is.

use std::time::Duration;

use serde_json::json;

use crate::harness::Console;
use crate::support::client::McpClient;
use crate::support::fixture::{FixtureMode, serve_fixture};
use crate::support::wait::wait_until;
use crate::tokens::TempFile;

/// How long a wait for a re-run may take on a loaded machine.
const BOUND: Duration = Duration::from_secs(30);

/// The store card's `rerunsPending`.
async fn pending(console: &Console) -> u64 {
    let (status, overview) = console.get("/overview").await;
    assert_eq!(status, 200, "{overview}");
    overview["store"]["rerunsPending"]
        .as_u64()
        .unwrap_or_else(|| panic!("no rerunsPending in {overview}"))
}

#[tokio::test]
async fn orphans_are_pending_until_their_re_run_takes_a_running_slot() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    // Removed with its WAL when dropped; the store makes it afresh.
    let file = TempFile::new("tasks.db", b"");
    std::fs::remove_file(file.path()).expect("an empty path for the store");
    let path = file.path();
    let retry = ["--sqlite", path, "--retry", "slow_compute=3"];

    let mut first = Console::start(&upstream.url, &retry).await;
    assert_eq!(pending(&first).await, 0, "nothing to run again");
    let client = McpClient::new(&first.gateway.url);
    let args = json!({"seconds": 3, "label": "again"});
    let tasks = [
        client.start_task("slow_compute", args.clone()).await,
        client.start_task("slow_compute", args).await,
    ];
    assert!(
        probe
            .wait_until(BOUND, |p| p.started("slow_compute") == 2)
            .await,
        "both calls run"
    );
    first.gateway.kill().await;

    let mut options = retry.to_vec();
    options.extend_from_slice(&["--max-running", "1"]);
    let second = Console::start(&upstream.url, &options).await;
    assert_eq!(
        pending(&second).await,
        2,
        "the file's orphans wait for the first request"
    );
    let client = McpClient::new(&second.gateway.url);
    let seen = client.tasks_get(&tasks[0]).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    assert!(
        probe
            .wait_until(BOUND, |p| p.started("slow_compute") == 3)
            .await,
        "one re-run starts"
    );
    wait_until("one re-run waits for the running slot", BOUND, || async {
        pending(&second).await == 1
    })
    .await;
    assert_eq!(probe.started("slow_compute"), 3, "max-running 1 holds");

    for task in &tasks {
        let done = client
            .wait_task_status(task, &["completed", "failed", "cancelled"], BOUND)
            .await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
    }
    assert_eq!(probe.started("slow_compute"), 4, "each ran twice");
    assert_eq!(pending(&second).await, 0, "nothing left to run again");
}
