//! Quickstart (`cargo run --example quickstart`): `TasksLayer` in front of an
//! ordinary rmcp server that knows nothing about tasks. Fast calls are answered
//! as usual; a call still running after 500 ms becomes a task, which the stock
//! rmcp client then polls with `tasks/get`. Then a client of the previous
//! protocol generation (2025-11-25, rmcp 2.2) asks for a task itself with
//! `params.task` and waits for its outcome with `tasks/result`.

// The 2025-11-25 client of the tests: rmcp 2.2 with the raw wire recorded.
#[path = "../tests/support/client/legacy/mod.rs"]
#[allow(dead_code)]
mod legacy_client;
#[path = "support/http.rs"]
#[allow(dead_code)]
mod serving;

use std::{sync::Arc, time::Duration};

use mcp_tasks::{MemoryTaskStore, TasksLayer};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, Peer, RoleServer,
    handler::server::wrapper::Parameters,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        GetTaskParams, Implementation, ProgressNotificationParam, ProtocolVersion,
        RequestMetaObject, TaskPayload, TaskStatus,
    },
    object, schemars, tool, tool_router,
    transport::{
        StreamableHttpClientTransport,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use serde::Deserialize;
use tower::ServiceBuilder;

// ---- 1. An ordinary MCP server: two tools, no idea what a task is. ----------

#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ReportArgs {
    seconds: u64,
}

struct Demo;

#[tool_router(server_handler)]
impl Demo {
    #[tool(description = "Add two integers (answers at once)")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Build a report; takes `seconds` seconds and reports progress")]
    async fn build_report(
        &self,
        Parameters(ReportArgs { seconds }): Parameters<ReportArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> String {
        for step in 1..=seconds {
            tokio::time::sleep(Duration::from_secs(1)).await;
            // Progress is optional; the layer shows the latest message as
            // the task's `statusMessage`.
            if let Some(token) = meta.get_progress_token() {
                let progress = ProgressNotificationParam::new(token, step as f64)
                    .with_message(format!("step {step} of {seconds}"));
                let _ = peer.notify_progress(progress).await;
            }
        }
        format!("report ready after {seconds}s")
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The layer's spans and lifecycle events, on stderr: each span is
    // printed when it closes, with its fields and how long it was busy.
    // (`RUST_LOG=mcp_tasks=debug` shows more.)
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "mcp_tasks=info".into()),
        )
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    // ---- 2. Serve it over Streamable HTTP, wrapped. ---------------------------
    // 2026-07-28 requests are served statelessly; 2025-11-25 clients get
    // sessions (rmcp's legacy session mode).
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .disable_allowed_hosts();
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(|| Ok(Demo), sessions, config);
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let drain = layer.drain(); // for a clean stop, step 5
    let app = ServiceBuilder::new()
        .layer(layer) // the only new line
        .service(mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let router = axum::Router::new().route_service("/mcp", app);
        // Header and body read timeouts, a connection limit, graceful stop.
        let shutdown = async move { drop(stopped.await) };
        serving::serve(listener, router, shutdown).await
    });
    println!("server: {url} (rmcp server behind TasksLayer)");

    // ---- 3. A stock rmcp client that declares the tasks extension. ----------
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = ClientConfig::new(capabilities, Implementation::new("quickstart", "0.1.0"))
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url.clone()),
            lifecycle,
        )
        .await?;

    // The fast tool answers within the threshold: an ordinary result.
    let add = CallToolRequestParams::new("add").with_arguments(object!({"a": 2, "b": 3}));
    let CallToolResponse::Complete(sum) = client.call_tool_once(add).await? else {
        return Err("add should have answered at once".into());
    };
    println!("add(2, 3) answered at once: {}", text(&sum));

    // The slow tool is still running after 500 ms: the layer hands out a task.
    let report = CallToolRequestParams::new("build_report").with_arguments(object!({"seconds": 2}));
    let CallToolResponse::Task(created) = client.call_tool_once(report).await? else {
        return Err("build_report should have become a task".into());
    };
    let task_id = created.task.task_id;
    let status = name(created.task.status);
    println!("build_report(2) became task {task_id} (status {status})");

    // Poll `tasks/get` at the suggested interval until the task is done.
    let poll = Duration::from_millis(created.task.poll_interval_ms.unwrap_or(300));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut last_line = String::new();
    let finished = loop {
        let task = client.get_task(GetTaskParams::new(&task_id)).await?.task;
        // Print "working", "working (step 1 of 2)", "completed", ... once each.
        let mut line = name(task.status());
        if let Some(message) = &task.task.status_message {
            line += &format!(" ({message})");
        }
        if line != last_line {
            println!("task {task_id}: {line}");
            last_line = line;
        }
        if task.status().is_terminal() {
            break task.payload;
        }
        if tokio::time::Instant::now() > deadline {
            return Err("task did not complete within 15 s".into());
        }
        tokio::time::sleep(poll).await;
    };

    // A completed task carries the tool's ordinary `CallToolResult`.
    let TaskPayload::Completed { result } = finished else {
        return Err(format!("task ended as {finished:?}").into());
    };
    let result: CallToolResult = serde_json::from_value(result.into())?;
    println!("result: {}", text(&result));

    client.cancel().await?;

    // ---- 4. A 2025-11-25 client (rmcp 2.2) asks for the task itself. --------
    let legacy = legacy_client::LegacyClient::connect(&url).await;
    println!(
        "2025-11-25 session: initialize now advertises tasks {}",
        legacy.server_capabilities()["tasks"]
    );
    let call = serde_json::json!({
        "name": "build_report", "arguments": {"seconds": 1}, "task": {"ttl": 60_000},
    });
    let created = legacy.request("tools/call", call).await.map_err(|e| e.1)?;
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    println!(
        "build_report(1) with params.task: task {task_id} at once (status {}, ttl {} ms)",
        created["task"]["status"].as_str().unwrap_or_default(),
        created["task"]["ttl"]
    );
    // `tasks/result` waits until the task is done, then answers its result.
    let params = serde_json::json!({"taskId": task_id});
    let outcome = legacy
        .request("tasks/result", params)
        .await
        .map_err(|e| e.1)?;
    let outcome = outcome["content"][0]["text"].as_str().unwrap_or_default();
    println!("tasks/result: {outcome}");
    legacy.close().await;

    // ---- 5. Clean shutdown. -------------------------------------------------
    // A running task would get 5 s to finish, then be failed with a reason;
    // a server would call this on Ctrl-C (see examples/conformance_server.rs).
    let report = drain.shutdown(Duration::from_secs(5)).await;
    println!(
        "drained: every task finished ({}), none aborted ({})",
        report.finished, report.aborted
    );
    let _ = stop.send(());
    server.await??;
    Ok(())
}

/// The text of the first content block of a tool result.
fn text(result: &CallToolResult) -> String {
    let first = result.content.first().and_then(|block| block.as_text());
    first.map(|text| text.text.clone()).unwrap_or_default()
}

/// A task status as it appears on the wire: `working`, `completed`, ...
fn name(status: TaskStatus) -> String {
    let quoted = serde_json::to_string(&status).unwrap_or_default();
    quoted.trim_matches('"').to_owned()
}
