//! `GET /console/api/overview`: per-tool figures over the last minutes, the
//! upstream and the store, which the page reads every few seconds.
//!
//! ```text
//! {"tools": [{"tool", "slots": [{calls, parked, failed, p50Ms, p95Ms, p99Ms}], "total": {...}}],
//!  "slotSeconds": 10,
//!  "upstream": {...} or null,
//!  "store": {"kind", "reachable", "error", "counts": {"working", ...}, "total", "countedMs",
//!            "rerunsPending"},
//!  "consoles": open feeds}
//! ```
//!
//! The store's counts are O(n) in its tasks ([`Admin::counts`]): they are
//! taken at most once every [`COUNT_EVERY`] whatever the number of open
//! consoles, and the overview answers with the last count meanwhile. The
//! re-runs pending ([`Admin::reruns_pending`]) are this instance's, read
//! afresh each time: no store round trip.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_tasks::observe::ToolStats;
use mcp_tasks::{Admin, TaskStatus, Timestamp};
use serde::Serialize;
use tokio::sync::Mutex;

use super::access::refuse;
use super::{Shared, Vitals};

/// The least time between two counts of the store's tasks.
pub const COUNT_EVERY: Duration = Duration::from_secs(5);

/// The store the layer keeps its tasks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// `MemoryTaskStore`.
    Memory,
    /// `SqliteTaskStore`.
    Sqlite,
    /// `RedisTaskStore` over one server.
    Redis,
    /// `RedisTaskStore` over a Redis Cluster.
    RedisCluster,
}

/// What the upstream looks like now.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamVitals {
    /// `http` or `stdio`.
    pub kind: String,
    /// Its URL, or the command that starts it.
    pub target: String,
    /// Whether it answered lately: `Some(false)` after a request it sent no
    /// answer for and none since, `None` before any request.
    pub reachable: Option<bool>,
    /// The median time to a response head over the process's life, in ms.
    pub latency_p50_ms: Option<f64>,
    /// Requests waiting for their response head now.
    pub in_flight: u64,
    /// Connections open now (HTTP).
    pub connections: u64,
    /// Requests it sent no answer for, since the start.
    pub failures: u64,
    /// Times the stdio child was started again.
    pub restarts: u64,
}

/// The last count of the store's tasks.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Counted {
    reachable: bool,
    error: Option<String>,
    counts: std::collections::BTreeMap<&'static str, u64>,
    total: u64,
    counted_ms: u64,
}

/// The overview's sources.
pub(crate) struct Overview {
    admin: Admin,
    store: StoreKind,
    stats: Option<ToolStats>,
    vitals: Option<Vitals>,
    counted: Mutex<Option<(Instant, Arc<Counted>)>>,
}

impl Overview {
    pub(crate) fn new(
        admin: Admin,
        store: StoreKind,
        stats: Option<ToolStats>,
        vitals: Option<Vitals>,
    ) -> Self {
        Self {
            admin,
            store,
            stats,
            vitals,
            counted: Mutex::new(None),
        }
    }

    async fn counted(&self) -> Arc<Counted> {
        let mut last = self.counted.lock().await;
        if let Some((at, counted)) = last.as_ref()
            && at.elapsed() < COUNT_EVERY
        {
            return counted.clone();
        }
        let counted = Arc::new(match self.admin.counts().await {
            Ok(counts) => {
                let mut by_status = std::collections::BTreeMap::new();
                for status in TaskStatus::ALL {
                    by_status.insert(status.as_str(), counts.status(status));
                }
                Counted {
                    reachable: true,
                    error: None,
                    total: by_status.values().sum(),
                    counts: by_status,
                    counted_ms: Timestamp::now().as_millis(),
                }
            }
            Err(error) => Counted {
                reachable: false,
                error: Some(error.to_string()),
                counted_ms: Timestamp::now().as_millis(),
                ..Counted::default()
            },
        });
        *last = Some((Instant::now(), counted.clone()));
        counted
    }
}

/// The handler.
pub(crate) async fn overview(axum::extract::State(state): Shared, headers: HeaderMap) -> Response {
    if state.access.who(&headers).is_none() {
        return refuse(StatusCode::UNAUTHORIZED, "no operator credential");
    }
    let overview = &state.overview;
    let tools = overview
        .stats
        .as_ref()
        .map(ToolStats::snapshot)
        .unwrap_or_default();
    let slot_seconds = overview
        .stats
        .as_ref()
        .map_or(0.0, |stats| stats.slot().as_secs_f64());
    let upstream = overview.vitals.as_ref().map(|vitals| vitals());
    let counted = overview.counted().await;
    axum::Json(serde_json::json!({
        "tools": tools,
        "slotSeconds": slot_seconds,
        "upstream": upstream,
        "store": {
            "kind": overview.store,
            "reachable": counted.reachable,
            "error": counted.error,
            "counts": counted.counts,
            "total": counted.total,
            "countedMs": counted.counted_ms,
            "rerunsPending": overview.admin.reruns_pending(),
        },
        "consoles": state.feeds.open(),
        "now": Timestamp::now().as_millis(),
    }))
    .into_response()
}
