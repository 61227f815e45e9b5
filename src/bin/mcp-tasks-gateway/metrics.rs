//! `--metrics ADDR`: the layer's metrics (and any other the process
//! records) in the Prometheus text format at `http://ADDR/metrics`, served
//! with the same limits as the MCP endpoint.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, header};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::serving::{self, Limits};

/// How often histograms are compacted (the exporter's upkeep).
const UPKEEP: Duration = Duration::from_secs(5);

/// Installs the Prometheus recorder and serves it on `addr`; returns the
/// address it listens on.
pub async fn serve(addr: SocketAddr, limits: Limits) -> Result<SocketAddr, String> {
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| format!("--metrics: {e}"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--metrics: cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(UPKEEP);
        loop {
            ticks.tick().await;
            upkeep.run_upkeep();
        }
    });
    let router = Router::new().route(
        "/metrics",
        axum::routing::get(move || std::future::ready(render(&handle))),
    );
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
