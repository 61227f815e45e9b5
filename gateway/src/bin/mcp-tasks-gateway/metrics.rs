//! `--metrics ADDR`: the layer's metrics and the upstream's (and any other
//! the process records) in the Prometheus text format at
//! `http://ADDR/metrics`, served with the same limits as the MCP endpoint.
//! Each scrape first counts the live tasks in the store (`mcp_tasks_live`,
//! [`Admin::record_live`]), at most once a second however often it is
//! scraped.
//!
//! Every timing is a Prometheus histogram (`_bucket`, `_sum`, `_count`),
//! which sums across gateways, not a summary, which does not; its bounds
//! are the library's ([`observe::metrics::buckets`], for the threshold in
//! force, and [`proxy_metrics::buckets`], whose docs say why each). Every
//! metric has its `# HELP` line.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, header};
use mcp_tasks::{Admin, observe};
use mcp_tasks_gateway::metrics as proxy_metrics;
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::sync::Mutex;

use crate::console;
use crate::serving::{self, Limits};

/// How often histograms are compacted (the exporter's upkeep).
const UPKEEP: Duration = Duration::from_secs(5);

/// The least time between two counts of the live tasks (O(n) in the store).
const COUNT_EVERY: Duration = Duration::from_secs(1);

/// The live-task count, refreshed by scrapes; one count at a time.
struct Live {
    admin: Admin,
    counted: Mutex<Option<Instant>>,
}

impl Live {
    async fn refresh(&self) {
        let mut counted = self.counted.lock().await;
        if counted.is_some_and(|at| at.elapsed() < COUNT_EVERY) {
            return;
        }
        if let Err(error) = self.admin.record_live().await {
            tracing::warn!(%error, "the live tasks could not be counted");
        }
        *counted = Some(Instant::now());
    }
}

/// The metrics endpoint, bound but not yet served.
pub struct Bound {
    listener: tokio::net::TcpListener,
    handle: PrometheusHandle,
}

/// Installs the Prometheus recorder, its histograms' buckets fit for a
/// layer whose threshold is `threshold`, and binds `addr`: done before the
/// gateway says it listens, so that a busy port fails the start.
pub async fn bind(addr: SocketAddr, threshold: Duration) -> Result<Bound, String> {
    let handle = recorder(threshold)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|e| format!("--metrics: {e}"))?;
    observe::metrics::describe();
    proxy_metrics::describe();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--metrics: cannot listen on {addr}: {e}"))?;
    Ok(Bound { listener, handle })
}

/// The exporter, with buckets for every histogram the gateway records.
fn recorder(threshold: Duration) -> Result<PrometheusBuilder, BuildError> {
    let layer = observe::metrics::buckets(threshold);
    let upstream = proxy_metrics::buckets();
    let mut histograms = layer
        .iter()
        .map(|(name, bounds)| (*name, bounds.as_slice()))
        .chain(upstream);
    histograms.try_fold(PrometheusBuilder::new(), |builder, (name, bounds)| {
        builder.set_buckets_for_metric(Matcher::Full(name.to_owned()), bounds)
    })
}

/// Serves the bound endpoint, counting live tasks through `admin`, with the
/// operator's console beside it when set up; returns the address it
/// listens on.
pub fn serve(
    bound: Bound,
    limits: Limits,
    admin: Admin,
    console: Option<console::Setup>,
) -> Result<SocketAddr, String> {
    let Bound { listener, handle } = bound;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(UPKEEP);
        loop {
            ticks.tick().await;
            upkeep.run_upkeep();
        }
    });
    let operator = console.map(|setup| setup.router(admin.clone(), handle.clone()));
    let live = Arc::new(Live {
        admin,
        counted: Mutex::new(None),
    });
    let mut router = Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let (live, handle) = (live.clone(), handle.clone());
            async move {
                live.refresh().await;
                render(&handle)
            }
        }),
    );
    if let Some(console) = operator {
        router = router.merge(console);
    }
    tokio::spawn(async move {
        // Stops with the process.
        let forever = std::future::pending::<()>();
        if let Err(error) = serving::serve_with(listener, router, limits, forever).await {
            tracing::error!(%error, "the metrics endpoint stopped");
        }
    });
    Ok(local)
}

/// The current metrics, as Prometheus scrapes them.
fn render(handle: &PrometheusHandle) -> Response {
    let mut response = Response::new(Body::from(handle.render()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}
