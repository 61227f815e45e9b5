//! `mcp-tasks-gateway`: MCP Tasks for any Streamable-HTTP MCP server, in any
//! language, by putting [`TasksLayer`](mcp_tasks::TasksLayer) in front of it
//! as a reverse proxy.
//!
//! ```text
//! cargo run --release -p mcp-tasks-gateway -- \
//!     --upstream http://127.0.0.1:8000/mcp
//! ```
//!
//! Prints `listening on http://ADDR/PATH` once it accepts connections, logs
//! to stderr (`RUST_LOG`, default `info`). On SIGTERM or Ctrl-C it parks no
//! new task, gives running tasks `--shutdown-grace` to finish while it keeps
//! answering (so clients can read their results), then fails what is left
//! (with the memory store, also tasks waiting for input), keeps answering
//! twice `--poll-interval` more (at most 10 s) when there were tasks, so a
//! polling client reads their end, then stops accepting, gives open
//! requests up to 10 s, and exits 0. A second signal exits at once (status
//! 130). `--help` lists every setting.

mod app;
mod console;
mod events;
mod guard;
mod listing;
mod logging;
mod metrics;
mod oauth;
mod rules;
// The examples' HTTP server, with its limits from the command line.
#[allow(dead_code)]
#[path = "../../../../examples/support/http.rs"]
mod serving;
mod settings;
mod upstream;

use std::io::Write;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-tasks-gateway: {error}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    let args = settings::Args::load()?;
    let flush = logging::init(args.otlp.as_deref())?;
    // What the command line lacks is said before any port is taken.
    app::check(&args)?;
    if args.check {
        println!("the settings hold together");
        return Ok(());
    }
    let console = console::from_args(&args)?;
    let listener = args.bind().await?;
    let metrics = match args.metrics {
        Some(addr) => Some(metrics::bind(addr, app::threshold(&args)?).await?),
        None => None,
    };
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let stats = console.as_ref().map(|setup| setup.stats.clone());
    let app = app::App::build(args, local, stats).await?;
    let has_console = console.is_some();
    let metrics = match metrics {
        Some(bound) => Some(metrics::serve(
            bound,
            app.limits,
            app.admin.clone(),
            console,
        )?),
        None => None,
    };
    // Taken before the announcement: a SIGTERM right after it is a drain,
    // not the default death.
    let stopped = serving::stop_signal_now();
    // Said once every listener is bound.
    println!("listening on http://{local}{}", app.path);
    if let Some(at) = metrics {
        println!("metrics on http://{at}/metrics");
        if has_console {
            println!("console on http://{at}/console");
        } else {
            println!(
                "console off: no credential (--console-token-file or {})",
                console::TOKEN_ENV
            );
        }
    }
    let _ = std::io::stdout().flush();
    tracing::info!(%local, path = %app.path, "gateway started");
    let drain = app.drain;
    let grace = app.shutdown_grace;
    let stdio = app.stdio;
    let shutdown = async move {
        stopped.await;
        tokio::spawn(async {
            serving::stop_signal().await;
            eprintln!("mcp-tasks-gateway: second signal, exiting now");
            std::process::exit(130);
        });
        tracing::info!(?grace, "shutting down: draining tasks");
        let report = drain.shutdown(grace).await;
        tracing::info!(?report, "drained");
        if let Some(stdio) = stdio {
            // Its stdin closed, then SIGTERM, then SIGKILL.
            stdio.shutdown(grace).await;
        }
    };
    let served = serving::serve_with(listener, app.router, app.limits, shutdown)
        .await
        .map_err(|e| e.to_string());
    // The exporter's blocking client must not run on a runtime thread.
    let _ = tokio::task::spawn_blocking(move || flush.flush()).await;
    served
}
