//! The conformance fixture (an ordinary rmcp server that knows nothing about
//! tasks) behind `TasksLayer`, for outside clients such as the official MCP
//! conformance suite.
//!
//! ```text
//! cargo run --example conformance_server -- 127.0.0.1:8001
//! ```
//!
//! Prints `listening on http://ADDR/mcp` once it accepts connections. Port 0
//! picks a free port.
//!
//! One URL serves both protocol generations: the fixture runs in rmcp's
//! session mode, so a 2026-07-28 request (per-request `_meta`, no
//! `initialize`) is served statelessly, and a 2025-11-25 client opens a
//! session with `initialize` and asks for tasks with `params.task` (the
//! layer advertises `capabilities.tasks` and `execution.taskSupport` to it).

#[path = "../tests/support/fixture/mod.rs"]
mod fixture;
#[path = "support/http.rs"]
mod serving;

use std::net::SocketAddr;
use std::time::Duration;

use mcp_tasks::{MemoryTaskStore, TasksLayer, ToolPolicy};
use tower::ServiceBuilder;

/// The per-tool policies the conformance scenarios rely on.
fn layer() -> TasksLayer {
    TasksLayer::new(MemoryTaskStore::new())
        // These answer at once (input requests, an immediate JSON-RPC error)
        // yet the suite expects a task for them.
        .tool_policy("confirm_delete", ToolPolicy::Always)
        .tool_policy("multi_input", ToolPolicy::Always)
        .tool_policy("protocol_error_job", ToolPolicy::Always)
        // Task-required: non-declaring callers get -32021.
        .tool_policy("failing_job", ToolPolicy::Required)
        .tool_policy("test_tool_with_task", ToolPolicy::Required)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8001".to_owned())
        .parse()?;
    // Session mode: 2025-11-25 sessions as well as stateless 2026-07-28.
    let inner = fixture::service(fixture::FixtureMode::Session, fixture::Probe::new());
    let layer = layer();
    let drain = layer.drain();
    let app = ServiceBuilder::new().layer(layer).service(inner);
    let router = axum::Router::new().route_service("/mcp", app);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // On Ctrl-C or SIGTERM: no new tasks, running ones get 10 s to finish,
    // the rest are failed; requests keep being answered meanwhile.
    let shutdown = async move {
        serving::stop_signal().await;
        let report = drain.shutdown(Duration::from_secs(10)).await;
        eprintln!("drained: {report:?}");
    };
    serving::serve(listener, router, shutdown).await?;
    Ok(())
}
