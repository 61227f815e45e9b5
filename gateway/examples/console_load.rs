//! The operator's console over a store that holds many tasks while some of
//! them change, to measure the page (`scripts/console-bench.sh`).
//!
//! ```text
//! cargo run --release -p mcp-tasks-gateway --example console_load -- [TASKS] [CHANGES_PER_SECOND]
//! ```
//!
//! Fills a `MemoryTaskStore` with TASKS working tasks (default 10,000) of
//! 20 tools and 50 owners, serves the console on a free loopback port with
//! the credential in `MCP_TASKS_CONSOLE_TOKEN` (default
//! `console-load-credential`), prints `console on http://ADDR/console` and
//! `pid PID`, then sets CHANGES_PER_SECOND status messages a second
//! (default 100: `progress N/100`) on tasks taken in turn, until killed.

use std::time::Duration;

use mcp_tasks::observe::ToolStats;
use mcp_tasks::{MemoryTaskStore, NewTask, TaskId, TaskStore, TasksLayer, Timestamp};
use mcp_tasks_gateway::console::{Console, Credential, StoreKind};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let tasks: usize = args.next().map_or(Ok(10_000), |n| n.parse())?;
    let per_second: u64 = args.next().map_or(Ok(100), |n| n.parse())?;
    let token = std::env::var("MCP_TASKS_CONSOLE_TOKEN")
        .unwrap_or_else(|_| "console-load-credential".to_owned());

    let store = MemoryTaskStore::new();
    let mut ids = Vec::with_capacity(tasks);
    for n in 0..tasks {
        let id = TaskId::generate()?;
        store
            .create(NewTask {
                id,
                owner: Some(format!("owner-{}", n % 50)),
                created_at: Timestamp::now(),
                ttl: Some(Duration::from_secs(24 * 3600)),
                poll_interval: None,
                status_message: Some("progress 0/100".to_owned()),
                quota: Default::default(),
                rerun: None,
                tool: Some(format!("tool_{}", n % 20)),
            })
            .await?;
        ids.push(id);
    }
    let layer = TasksLayer::new(store.clone());
    let console = Console::new(layer.admin(), Credential::new(&token)?)
        .store_kind(StoreKind::Memory)
        .tool_stats(ToolStats::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("console on http://{}/console", listener.local_addr()?);
    println!("pid {}", std::process::id());
    tokio::spawn(async move {
        let every = Duration::from_secs(1) / per_second.max(1) as u32;
        let mut ticks = tokio::time::interval(every);
        let mut step = 0usize;
        loop {
            ticks.tick().await;
            let id = ids[step % ids.len()];
            let done = 1 + (step / ids.len()) % 100;
            let _ = store
                .set_status_message(id, format!("progress {done}/100"))
                .await;
            step += 1;
        }
    });
    axum::serve(listener, console.router()).await?;
    Ok(())
}
