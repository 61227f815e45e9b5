//! The operator's console over a store that holds many tasks while some of
//! them change, to measure the page (`scripts/console-bench.sh`) and the
//! cost of browsing it (`scripts/console-browse-bench.sh`).
//!
//! ```text
//! cargo run --release -p mcp-tasks-gateway --example console_load -- [TASKS] [CHANGES_PER_SECOND]
//! CONSOLE_LOAD_REDIS=redis://127.0.0.1:6379 cargo run --release -p mcp-tasks-gateway --example console_load -- [TASKS] [CHANGES_PER_SECOND]
//! ```
//!
//! Fills a `MemoryTaskStore` with TASKS working tasks (default 10,000) of
//! 20 tools (`tool_0` to `tool_19`) and 50 owners, serves the console on a
//! free loopback port with the credential in `MCP_TASKS_CONSOLE_TOKEN`
//! (default `console-load-credential`), prints `console on
//! http://ADDR/console` and `pid PID`, then sets CHANGES_PER_SECOND status
//! messages a second (default 100, at least 1: `progress N/100`) on tasks
//! taken in turn, until killed.
//!
//! With `CONSOLE_LOAD_REDIS` set to a Redis URL, the tasks go to a
//! `RedisTaskStore` there instead (keys under the prefix in
//! `CONSOLE_LOAD_PREFIX`, default `console-load`; a fresh server or prefix
//! is meant, as tasks already there are served too), and the console says
//! `redis`. Either store is filled [`FILL_CONCURRENCY`] creates at a time,
//! with a line on stderr every [`FILL_REPORT_EVERY`] tasks.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mcp_tasks::observe::ToolStats;
use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{MemoryTaskStore, NewTask, TaskId, TaskStore, TasksLayer, Timestamp};
use mcp_tasks_gateway::console::{Console, Credential, StoreKind};

/// Creates in flight at once while the store is filled.
const FILL_CONCURRENCY: usize = 64;
/// Tasks between two progress lines while the store is filled.
const FILL_REPORT_EVERY: usize = 100_000;

/// The boxed error `main` returns.
type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let tasks: usize = args.next().map_or(Ok(10_000), |n| n.parse())?;
    let per_second: u64 = args.next().map_or(Ok(100), |n| n.parse())?;
    let token = std::env::var("MCP_TASKS_CONSOLE_TOKEN")
        .unwrap_or_else(|_| "console-load-credential".to_owned());

    match std::env::var("CONSOLE_LOAD_REDIS") {
        Ok(url) => {
            let prefix =
                std::env::var("CONSOLE_LOAD_PREFIX").unwrap_or_else(|_| "console-load".to_owned());
            let store = RedisTaskStore::builder(url.as_str())
                .prefix(prefix)
                .connect()
                .await?;
            serve(store, StoreKind::Redis, tasks, per_second, &token).await
        }
        Err(_) => {
            serve(
                MemoryTaskStore::new(),
                StoreKind::Memory,
                tasks,
                per_second,
                &token,
            )
            .await
        }
    }
}

/// Fills `store`, serves the console over it and changes its tasks, until
/// killed.
async fn serve<S: TaskStore + Clone>(
    store: S,
    kind: StoreKind,
    tasks: usize,
    per_second: u64,
    token: &str,
) -> Result<(), Error> {
    let ids = fill(&store, tasks).await?;
    let layer = TasksLayer::new(store.clone());
    let console = Console::new(layer.admin(), Credential::new(token)?)
        .store_kind(kind)
        .tool_stats(ToolStats::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("console on http://{}/console", listener.local_addr()?);
    println!("pid {}", std::process::id());
    tokio::spawn(change(store, ids, per_second));
    axum::serve(listener, console.router()).await?;
    Ok(())
}

/// The `n`th task of the load: its owner and tool taken in turn.
fn new_task(n: usize) -> Result<NewTask, Error> {
    Ok(NewTask {
        id: TaskId::generate()?,
        owner: Some(format!("owner-{}", n % 50)),
        created_at: Timestamp::now(),
        ttl: Some(Duration::from_secs(24 * 3600)),
        poll_interval: None,
        status_message: Some("progress 0/100".to_owned()),
        quota: Default::default(),
        rerun: None,
        tool: Some(format!("tool_{}", n % 20)),
    })
}

/// Creates `tasks` working tasks in `store`, [`FILL_CONCURRENCY`] at a
/// time, and returns their ids (in the order the creates answered).
async fn fill<S: TaskStore>(store: &S, tasks: usize) -> Result<Vec<TaskId>, Error> {
    let started = Instant::now();
    let mut ids = Vec::with_capacity(tasks);
    let mut created = futures_util::stream::iter(0..tasks)
        .map(|n| async move {
            let task = new_task(n)?;
            let id = task.id;
            store.create(task).await?;
            Ok::<_, Error>(id)
        })
        .buffer_unordered(FILL_CONCURRENCY);
    while let Some(id) = created.next().await {
        ids.push(id?);
        if ids.len() % FILL_REPORT_EVERY == 0 || ids.len() == tasks {
            let seconds = started.elapsed().as_secs_f64();
            eprintln!(
                "filled {} of {tasks} tasks in {seconds:.1} s ({:.0} a second)",
                ids.len(),
                ids.len() as f64 / seconds.max(1e-9),
            );
        }
    }
    Ok(ids)
}

/// Sets `per_second` status messages a second (at least one) on the tasks
/// `ids`, taken in turn, forever.
async fn change<S: TaskStore>(store: S, ids: Vec<TaskId>, per_second: u64) {
    if ids.is_empty() {
        return;
    }
    let every = Duration::from_secs(1) / per_second.clamp(1, u32::MAX.into()) as u32;
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
}
