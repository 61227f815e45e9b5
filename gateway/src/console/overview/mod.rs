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
//! The store's counts are O(n) in its tasks ([`Admin::counts`]; 7.9 s over
//! a million in Redis): they are taken in the background, never waited for,
//! one at a time whatever the number of open consoles, and again only after
//! [`COUNT_EVERY`] or ten times what the last one took, whichever is longer
//! (the store counts a tenth of the time at most while consoles are open).
//! The overview answers with the last count (`null` fields before the
//! first one ends). The re-runs pending ([`Admin::reruns_pending`]) are this instance's, read
//! afresh each time: no store round trip.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_tasks::observe::ToolStats;
use mcp_tasks::{Admin, TaskStatus, Timestamp};
use serde::Serialize;

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
#[derive(Debug, Default)]
struct Counted {
    reachable: bool,
    error: Option<String>,
    counts: std::collections::BTreeMap<&'static str, u64>,
    total: u64,
    counted_ms: u64,
}

/// The counts and when the next may be taken.
#[derive(Default)]
struct Counting {
    /// The last count, and when it ended.
    last: Option<(Instant, Arc<Counted>)>,
    /// How long the last count took.
    took: Duration,
    /// Whether a count runs now.
    running: bool,
}

impl Counting {
    /// Whether the last count is old enough to take another: after
    /// [`COUNT_EVERY`], or ten times what the last one took, whichever is
    /// longer, so that counting keeps the store busy a tenth of the time at
    /// most while consoles are open.
    fn stale(&self) -> bool {
        self.last.as_ref().is_none_or(|(at, _)| {
            at.elapsed() >= COUNT_EVERY.max(self.took.saturating_mul(COUNT_SHARE))
        })
    }
}

/// A count comes again after this many times what the last one took.
const COUNT_SHARE: u32 = 10;

/// The overview's sources.
pub(crate) struct Overview {
    admin: Admin,
    store: StoreKind,
    stats: Option<ToolStats>,
    vitals: Option<Vitals>,
    counting: Arc<Mutex<Counting>>,
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
            counting: Arc::default(),
        }
    }

    /// The last count, never waited for: a stale one starts a count in the
    /// background (one at a time), whose result the next overview shows.
    /// `None` until the first count ends.
    fn counted(&self) -> Option<Arc<Counted>> {
        let admin = self.admin.clone();
        self.counted_by(move || async move { count(&admin).await })
    }

    /// [`counted`](Self::counted), with `count` starting the count.
    fn counted_by<F>(&self, count: impl FnOnce() -> F) -> Option<Arc<Counted>>
    where
        F: Future<Output = Counted> + Send + 'static,
    {
        let mut counting = self.counting.lock().unwrap_or_else(PoisonError::into_inner);
        if counting.stale() && !counting.running {
            counting.running = true;
            let (counting_now, shared) = (count(), self.counting.clone());
            tokio::spawn(async move {
                let started = Instant::now();
                let counted = Arc::new(counting_now.await);
                let mut counting = shared.lock().unwrap_or_else(PoisonError::into_inner);
                counting.took = started.elapsed();
                counting.last = Some((Instant::now(), counted));
                counting.running = false;
            });
        }
        counting.last.as_ref().map(|(_, counted)| counted.clone())
    }
}

/// Counts the store's tasks by status (O(n)).
async fn count(admin: &Admin) -> Counted {
    match admin.counts().await {
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
    let counted = overview.counted();
    let counted = counted.as_deref();
    axum::Json(serde_json::json!({
        "tools": tools,
        "slotSeconds": slot_seconds,
        "upstream": upstream,
        "store": {
            "kind": overview.store,
            "reachable": counted.map(|c| c.reachable),
            "error": counted.and_then(|c| c.error.as_deref()),
            "counts": counted.map(|c| &c.counts),
            "total": counted.map(|c| c.total),
            "countedMs": counted.map(|c| c.counted_ms),
            "rerunsPending": overview.admin.reruns_pending(),
        },
        "consoles": state.feeds.open(),
        "now": Timestamp::now().as_millis(),
    }))
    .into_response()
}

#[cfg(test)]
mod tests;
