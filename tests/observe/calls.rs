//! The call observer end to end: a real layer in front of the fixture with
//! a small threshold; fast tools, failing tools, slow tools that park, one
//! cancelled. Every call is recorded exactly once, with the outcome its
//! client saw, and [`ToolStats`] counts each tool's calls, parked and failed.
//! The fixture answers SSE (rmcp's default) or, in one test, JSON; a
//! 2025-11-25 session's `params.task` calls are recorded as parked.

use crate::support;

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_tasks::observe::ToolStats;
use mcp_tasks::observe::calls::{CallObserver, CallOutcome, CallRecord};
use mcp_tasks::{Drain, TasksLayer};
use serde_json::json;
use support::layered::Layered;
use support::session::Session;
use support::wait::{BOUND, wait_until};

const THRESHOLD: Duration = Duration::from_millis(100);

/// One record as seen: tool, parked, outcome, elapsed.
type Seen = (String, bool, CallOutcome, Duration);

/// An observer that keeps every record and hands it on to `stats`.
fn recorder(stats: &ToolStats) -> (Arc<Mutex<Vec<Seen>>>, impl CallObserver) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (into, stats) = (seen.clone(), stats.clone());
    let observer = move |call: &CallRecord<'_>| {
        let record = (
            call.tool.to_owned(),
            call.parked,
            call.outcome,
            call.elapsed,
        );
        into.lock().unwrap().push(record);
        stats.finished(call);
    };
    (seen, observer)
}

fn record(tool: &str, parked: bool, outcome: CallOutcome) -> (String, bool, CallOutcome) {
    (tool.to_owned(), parked, outcome)
}

/// How a test configures its layer, as `Layered` takes it.
type Configure = Box<dyn FnOnce(TasksLayer) -> TasksLayer>;

/// A served layer whose calls a recorder observes: what it recorded,
/// `ToolStats` over the same calls, and the layer's drain.
struct Observed {
    layered: Layered,
    stats: ToolStats,
    seen: Arc<Mutex<Vec<Seen>>>,
    drain: Drain,
}

impl Observed {
    /// The layer `configure` makes, observed, served by `serve` (one of
    /// `Layered`'s starts).
    async fn start<Fut: Future<Output = Layered>>(
        serve: impl FnOnce(Configure) -> Fut,
        configure: impl FnOnce(TasksLayer) -> TasksLayer + 'static,
    ) -> Self {
        let stats = ToolStats::new();
        let (seen, observer) = recorder(&stats);
        let drain = Arc::new(OnceLock::new());
        let kept = drain.clone();
        let layered = serve(Box::new(move |layer| {
            let layer = configure(layer).observe_calls(observer);
            let _ = kept.set(layer.drain());
            layer
        }))
        .await;
        let drain = drain.get().expect("the layer was configured").clone();
        Self {
            layered,
            stats,
            seen,
            drain,
        }
    }

    /// The records, sorted, without their times.
    fn outcomes(&self) -> Vec<(String, bool, CallOutcome)> {
        let mut outcomes: Vec<_> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|(tool, parked, outcome, _)| (tool.clone(), *parked, *outcome))
            .collect();
        outcomes.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        outcomes
    }

    /// Waits until `count` calls are recorded, then until the layer's
    /// background work is over, and checks that no record came late.
    async fn settled(&self, count: usize) {
        wait_until("every call is recorded", BOUND, || async {
            self.seen.lock().unwrap().len() >= count
        })
        .await;
        wait_until("every driver ends", BOUND, || async {
            self.drain.running() == 0
        })
        .await;
        let recorded = self.seen.lock().unwrap().len();
        assert_eq!(recorded, count, "{:?}", self.outcomes());
    }
}

#[tokio::test]
async fn every_call_is_recorded_once_and_tool_stats_count_calls_parked_and_failed() {
    let observed = Observed::start(Layered::start, |layer| layer.threshold(THRESHOLD)).await;
    let client = observed.layered.client();

    // Answered in time.
    for name in ["a", "b", "c"] {
        let greeted = client.call_tool("greet", json!({"name": name}), true).await;
        assert!(greeted.get("result").is_some(), "{greeted}");
    }
    let fast = json!({"seconds": 0});
    let failing = client.call_tool("failing_job", fast.clone(), true).await;
    assert_eq!(failing["result"]["isError"], true, "{failing}");
    let error = client.call_tool("protocol_error_job", fast, true).await;
    assert!(error.get("error").is_some(), "{error}");
    // A name longer than ToolStats keeps, unknown to the server: an error.
    let long = "x".repeat(300);
    let unknown = client.call_tool(&long, json!({}), true).await;
    assert!(unknown.get("error").is_some(), "{unknown}");

    // Parked: completed; completed with `isError`; failed; cancelled.
    let slow = json!({"seconds": 0.3});
    let done = client.start_task("slow_compute", slow.clone()).await;
    let tool_failed = client.start_task("failing_job", slow.clone()).await;
    let task_failed = client.start_task("protocol_error_job", slow).await;
    let cancelled = client
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;
    client.tasks_cancel(&cancelled).await;
    for (task, status) in [
        (&done, "completed"),
        (&tool_failed, "completed"),
        (&task_failed, "failed"),
        (&cancelled, "cancelled"),
    ] {
        client.wait_task_status(task, &[status], BOUND).await;
    }
    observed.settled(10).await;

    let mut expected = vec![
        record("greet", false, CallOutcome::Succeeded),
        record("greet", false, CallOutcome::Succeeded),
        record("greet", false, CallOutcome::Succeeded),
        record("failing_job", false, CallOutcome::Failed),
        record("protocol_error_job", false, CallOutcome::Failed),
        record(&long, false, CallOutcome::Failed),
        record("slow_compute", true, CallOutcome::Succeeded),
        record("failing_job", true, CallOutcome::Failed),
        record("protocol_error_job", true, CallOutcome::Failed),
        record("slow_compute", true, CallOutcome::Cancelled),
    ];
    expected.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(observed.outcomes(), expected);
    // A parked call's time runs from its arrival to its task's end.
    for (tool, parked, outcome, elapsed) in observed.seen.lock().unwrap().iter() {
        match (tool.as_str(), parked, outcome) {
            ("slow_compute", true, CallOutcome::Succeeded) => {
                assert!(*elapsed >= Duration::from_millis(300), "{elapsed:?}")
            }
            (_, true, _) => assert!(*elapsed >= THRESHOLD, "{tool}: {elapsed:?}"),
            ("greet", false, _) => {
                assert!(*elapsed < Duration::from_millis(300), "{elapsed:?}")
            }
            _ => {}
        }
    }

    let series = observed.stats.snapshot();
    let counted: Vec<(&str, u64, u64, u64)> = series
        .iter()
        .map(|s| {
            (
                s.tool.as_str(),
                s.total.calls,
                s.total.parked,
                s.total.failed,
            )
        })
        .collect();
    let cut = "x".repeat(ToolStats::MAX_NAME_BYTES);
    assert_eq!(
        counted,
        [
            ("failing_job", 2, 1, 2),
            ("greet", 3, 0, 0),
            ("protocol_error_job", 2, 1, 2),
            ("slow_compute", 2, 2, 0),
            (cut.as_str(), 1, 0, 1),
        ]
    );
    let slow = &series[3].total;
    let p99 = slow.p99.expect("two calls").as_secs_f64();
    assert!(p99 >= 0.3 * (1.0 - ToolStats::MAX_RELATIVE_ERROR), "{p99}");
    assert!(series.iter().all(|s| s.slots.len() == 60));
}

#[tokio::test]
async fn a_json_answer_is_recorded_by_what_it_says() {
    let observed = Observed::start(Layered::start_json, |layer| layer.threshold(THRESHOLD)).await;
    let client = observed.layered.client();
    let exchange = client
        .call_tool_with("greet", json!({"name": "j"}), json!({}), true)
        .await;
    assert!(!exchange.is_sse(), "{}", exchange.body);
    let fast = json!({"seconds": 0});
    client.call_tool("failing_job", fast.clone(), true).await;
    client.call_tool("protocol_error_job", fast, true).await;
    observed.settled(3).await;
    assert_eq!(
        observed.outcomes(),
        [
            record("failing_job", false, CallOutcome::Failed),
            record("greet", false, CallOutcome::Succeeded),
            record("protocol_error_job", false, CallOutcome::Failed),
        ]
    );
}

#[tokio::test]
async fn a_task_call_of_a_session_is_recorded_parked_and_one_refused_a_task_as_failed() {
    let cap = |layer: TasksLayer| layer.max_tasks_per_principal(Some(1));
    let observed = Observed::start(Layered::start_sessions, cap).await;
    let session = Session::open(&observed.layered, Some("alice")).await;
    let task = session.start_task("greet", json!({"name": "s"})).await;
    session.wait_status(&task, &["completed"]).await;
    observed.settled(1).await;
    // The finished task still counts against the cap: refused.
    let params = json!({"name": "failing_job", "arguments": {"seconds": 0}, "task": {}});
    let refused = session.request("tools/call", params).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    observed.settled(2).await;
    assert_eq!(
        observed.outcomes(),
        [
            record("failing_job", false, CallOutcome::Failed),
            record("greet", true, CallOutcome::Succeeded),
        ]
    );
}
