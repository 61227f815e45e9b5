//! The in-process routes of the fast-path measurements: the rmcp fixture
//! (stateless, 2026-07-28) bare and behind one default `TasksLayer`,
//! answering JSON or SSE. Needs `crate::fixture` (tests/support/fixture).

use mcp_tasks::{MemoryTaskStore, TasksLayer};
use tower::Layer;

use crate::fixture::{self, FixtureMode, FixtureOptions, Probe};

/// `/bare/json`, `/bare/sse`, `/layered/json` and `/layered/sse`.
pub fn router() -> axum::Router {
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let fixture = |json: bool| {
        let options = FixtureOptions::new(FixtureMode::Stateless).json_response(json);
        fixture::service_with(options, Probe::new())
    };
    axum::Router::new()
        .route_service("/bare/json", fixture(true))
        .route_service("/bare/sse", fixture(false))
        .route_service("/layered/json", layer.layer(fixture(true)))
        .route_service("/layered/sse", layer.layer(fixture(false)))
}
