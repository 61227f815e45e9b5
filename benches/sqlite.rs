//! `SqliteTaskStore` next to `MemoryTaskStore` through the real layer, and the
//! fsync-bound floor of the disk under it, in one run.
//!
//! Run: `cargo bench --features sqlite --bench sqlite`. Results and how to
//! read them: `BENCHMARKS.md`, section "SqliteTaskStore".
//!
//! For each concurrency C, with C tasks each looping:
//!
//! - `get` of one working task, straight on the store (SQLite and memory);
//! - `tasks/get` of that task through `TasksLayer` over the in-process inner
//!   service (`support/inner.rs`), SQLite and memory;
//! - park → complete: a declaring `tools/call` parked at once (threshold
//!   zero, the inner answers after one yield, the live-task caps lifted),
//!   then the store polled until that task is terminal; SQLite with
//!   `Synchronous::Normal` and with `Synchronous::Full`, and memory.
//!
//! Then, on one thread, the floor: a plain `rusqlite` insert loop into a
//! table shaped like the store's `tasks` table, with the store's pragmas
//! (WAL, `synchronous` NORMAL and FULL), one row per transaction (one commit,
//! with FULL one fsync, per row) and 256 rows per transaction (what the
//! store's group commit can reach).
//!
//! Every SQLite file is a fresh one in `std::env::temp_dir()`, removed with
//! its `-wal` and `-shm` after its measurement. The layer runs on a tokio
//! multi-thread runtime with 2 workers. Each measurement runs for a fixed
//! time after a short warm-up, and the whole set runs [`ROUNDS`] times; the
//! table shows medians and ranges.

#[path = "support/inner.rs"]
mod inner;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use mcp_tasks::store::{MemoryTaskStore, SqliteTaskStore, Synchronous};
use mcp_tasks::{NewTask, Quota, TaskId, TaskStore, TasksLayer, Timestamp};
use rusqlite::{Connection, TransactionBehavior, params};
use tower::Layer;

use inner::{Answers, Inner, request, roundtrip};

/// Concurrencies measured.
const CONCURRENCY: [usize; 2] = [1, 16];
/// Untimed run before each measurement.
const WARM_UP: Duration = Duration::from_millis(300);
/// Timed run of each measurement.
const MEASURE: Duration = Duration::from_secs(1);
/// Rounds of the whole set of measurements.
const ROUNDS: usize = 5;
/// How long park → complete waits for one task before the run fails.
const STALLED: Duration = Duration::from_secs(10);
/// Rows per transaction of the batched floor: the store's largest group.
const GROUP: usize = 256;

/// Store reads and cycles of park → complete over the whole run, per store.
static POLLS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static CYCLES: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Files made so far, for unique names within the run.
static FILES: AtomicU64 = AtomicU64::new(0);

/// One line of the table, with a value per round.
struct Row {
    what: &'static str,
    /// `None` for the single-threaded floor.
    concurrency: Option<usize>,
    ops_per_sec: Vec<f64>,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let load_before = load_average();
    let mut rows: Vec<Row> = Vec::new();
    for round in 1..=ROUNDS {
        eprintln!("round {round} of {ROUNDS}");
        for concurrency in CONCURRENCY {
            for (what, ops) in runtime.block_on(through_the_stores(concurrency)) {
                record(&mut rows, what, Some(concurrency), ops);
            }
        }
        for (what, ops) in floors() {
            record(&mut rows, what, None, ops);
        }
    }
    let load_after = load_average();
    drop(runtime);
    print_table(&rows, &load_before, &load_after);
}

fn record(rows: &mut Vec<Row>, what: &'static str, concurrency: Option<usize>, ops: f64) {
    match rows
        .iter_mut()
        .find(|row| row.what == what && row.concurrency == concurrency)
    {
        Some(row) => row.ops_per_sec.push(ops),
        None => rows.push(Row {
            what,
            concurrency,
            ops_per_sec: vec![ops],
        }),
    }
}

/// A fresh SQLite file's path in the temp dir (nothing there yet).
fn fresh_path(what: &str) -> PathBuf {
    let n = FILES.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "mcp-tasks-bench-sqlite-{}-{n}-{what}.db",
        std::process::id()
    ));
    remove_files(&path);
    path
}

/// Removes a SQLite file with its `-wal` and `-shm`.
fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(name);
    }
}

async fn open_sqlite(level: Synchronous) -> SqliteTaskStore {
    let name = match level {
        Synchronous::Normal => "normal",
        Synchronous::Full => "full",
    };
    SqliteTaskStore::builder(fresh_path(name))
        .synchronous(level)
        .open()
        .await
        .expect("open the bench's task file")
}

/// Closes a store and removes its file.
async fn close_sqlite(store: SqliteTaskStore) {
    let path = store.path().to_path_buf();
    store.close().await;
    drop(store);
    remove_files(&path);
}

/// Every measurement through a store at `concurrency`, each SQLite one on a
/// fresh file.
async fn through_the_stores(concurrency: usize) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();

    let memory = MemoryTaskStore::new();
    out.push(("MemoryTaskStore::get", get(&memory, concurrency).await));
    let sqlite = open_sqlite(Synchronous::Normal).await;
    out.push(("SqliteTaskStore::get", get(&sqlite, concurrency).await));
    close_sqlite(sqlite).await;

    let memory = MemoryTaskStore::new();
    out.push((
        "tasks/get through the layer, memory",
        tasks_get(&memory, concurrency).await,
    ));
    let sqlite = open_sqlite(Synchronous::Normal).await;
    out.push((
        "tasks/get through the layer, SQLite",
        tasks_get(&sqlite, concurrency).await,
    ));
    close_sqlite(sqlite).await;

    let memory = MemoryTaskStore::new();
    out.push((
        "park → complete, memory",
        park_complete(&memory, concurrency, 0).await,
    ));
    let sqlite = open_sqlite(Synchronous::Normal).await;
    out.push((
        "park → complete, SQLite Normal",
        park_complete(&sqlite, concurrency, 1).await,
    ));
    close_sqlite(sqlite).await;
    let sqlite = open_sqlite(Synchronous::Full).await;
    out.push((
        "park → complete, SQLite Full",
        park_complete(&sqlite, concurrency, 2).await,
    ));
    close_sqlite(sqlite).await;

    out
}

/// The store alone: `get` of one working task.
async fn get<S: TaskStore + Clone>(store: &S, concurrency: usize) -> f64 {
    let id = working_task(store).await;
    let store = store.clone();
    measure("get", concurrency, move || {
        let store = store.clone();
        async move {
            let task = store.get(id, None).await.expect("store get");
            assert!(task.is_some(), "the task is there");
        }
    })
    .await
}

/// `tasks/get` through the layer of a working task.
async fn tasks_get<S: TaskStore + Clone>(store: &S, concurrency: usize) -> f64 {
    let id = working_task(store).await;
    let layered = TasksLayer::new(store.clone()).layer(Inner {
        answers: Answers::AtOnce,
    });
    let target = id.to_string();
    let params: Arc<str> = format!(r#""taskId":"{target}""#).into();
    let target: Arc<str> = target.into();
    let probe = roundtrip(
        layered.clone(),
        request(3, "tasks/get", &params, Some(&target), true),
    )
    .await;
    assert!(
        std::str::from_utf8(&probe)
            .expect("utf-8")
            .contains(r#""status":"working""#),
        "tasks/get answers the working task: {probe:?}"
    );
    measure("tasks/get", concurrency, move || {
        let layered = layered.clone();
        let params = params.clone();
        let target = target.clone();
        async move {
            let body = roundtrip(
                layered,
                request(3, "tasks/get", &params, Some(&target), true),
            )
            .await;
            debug_assert!(body.starts_with(br#"{"jsonrpc""#));
        }
    })
    .await
}

/// park → complete: each cycle parks a call and waits, through the store,
/// until its task is terminal. `counter` picks the poll counters.
async fn park_complete<S: TaskStore + Clone>(store: &S, concurrency: usize, counter: usize) -> f64 {
    // Completed tasks stay live until their TTL, so the default caps (100
    // a principal, 10,000 in all) would turn the run's calls synchronous
    // within a second: lifted, and no create counts a quota.
    let layered = TasksLayer::new(store.clone())
        .threshold(Duration::ZERO)
        .max_tasks(None)
        .max_tasks_per_principal(None)
        .layer(Inner {
            answers: Answers::AfterYield,
        });
    let store = store.clone();
    measure("park → complete", concurrency, move || {
        let layered = layered.clone();
        let store = store.clone();
        async move {
            let body = roundtrip(layered, fast_call()).await;
            let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
            let id = value["result"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("the call was parked: {value}"));
            let id = TaskId::parse(id).expect("task id");
            CYCLES[counter].fetch_add(1, Ordering::Relaxed);
            let parked = Instant::now();
            loop {
                POLLS[counter].fetch_add(1, Ordering::Relaxed);
                let task = store.get(id, None).await.expect("store").expect("task");
                if task.status().is_terminal() {
                    break;
                }
                assert!(
                    parked.elapsed() < STALLED,
                    "task {id} not terminal after {STALLED:?}: {:?}",
                    task.status()
                );
                tokio::task::yield_now().await;
            }
        }
    })
    .await
}

/// A working task with the layer's default TTL and poll interval, no owner.
async fn working_task<S: TaskStore>(store: &S) -> TaskId {
    let id = TaskId::generate().expect("random");
    store
        .create(NewTask {
            id,
            owner: None,
            created_at: Timestamp::now(),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Some(Duration::from_secs(1)),
            status_message: None,
            quota: Quota::default(),
            tool: None,
            rerun: None,
        })
        .await
        .expect("create");
    id
}

fn fast_call() -> http::Request<Full<Bytes>> {
    request(
        2,
        "tools/call",
        r#""name":"job","arguments":{}"#,
        Some("job"),
        true,
    )
}

/// Runs `concurrency` spawned loops of `op` for [`WARM_UP`], then for
/// [`MEASURE`]; returns operations per second of the timed part.
async fn measure<F, Fut>(what: &str, concurrency: usize, op: F) -> f64
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    eprintln!("  {what}, C = {concurrency}");
    run_for(WARM_UP, concurrency, &op).await;
    // Let background work of the warm-up (drivers, commits) settle.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (ops, elapsed) = run_for(MEASURE, concurrency, &op).await;
    ops as f64 / elapsed.as_secs_f64()
}

/// Loops `op` in `concurrency` spawned tasks until `time` has passed; returns
/// the operations completed and the time until the last loop ended.
async fn run_for<F, Fut>(time: Duration, concurrency: usize, op: &F) -> (u64, Duration)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let loops: Vec<_> = (0..concurrency)
        .map(|_| {
            let stop = stop.clone();
            let op = op.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    op().await;
                    done += 1;
                    // `MemoryTaskStore::get` is ready at once: without this,
                    // 16 loops would hold both workers and the timer that
                    // ends the measurement would never fire.
                    tokio::task::consume_budget().await;
                }
                done
            })
        })
        .collect();
    tokio::time::sleep(time).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for one in loops {
        total += one.await.expect("bench loop");
    }
    (total, start.elapsed())
}

/// The store's `tasks` table and indexes, so that an insert here updates
/// as many b-trees as the store's `create` does.
const FLOOR_SCHEMA: &str = "
CREATE TABLE tasks (
    id TEXT PRIMARY KEY NOT NULL, owner TEXT, status TEXT NOT NULL,
    status_message TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    ttl INTEGER, expires_at INTEGER, poll_interval INTEGER,
    counted INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT,
    input_requests TEXT, input_answers TEXT, input_resume TEXT, rerun TEXT,
    attempt INTEGER NOT NULL DEFAULT 1, attempts INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);
CREATE INDEX tasks_by_creation ON tasks (created_at, id);
CREATE INDEX tasks_by_expiry ON tasks (expires_at);
CREATE INDEX tasks_counted ON tasks (owner, expires_at) WHERE counted = 1;
";

/// The four floors, each on a fresh file: rows inserted per second.
fn floors() -> Vec<(&'static str, f64)> {
    vec![
        (
            "floor: insert, 1 row/transaction, NORMAL",
            floor("NORMAL", 1),
        ),
        ("floor: insert, 1 row/transaction, FULL", floor("FULL", 1)),
        (
            "floor: insert, 256 rows/transaction, NORMAL",
            floor("NORMAL", GROUP),
        ),
        (
            "floor: insert, 256 rows/transaction, FULL",
            floor("FULL", GROUP),
        ),
    ]
}

/// A single-threaded insert loop with the store's pragmas, `per_commit`
/// rows a transaction, for [`WARM_UP`] then [`MEASURE`]; rows per second
/// of the timed part.
fn floor(synchronous: &str, per_commit: usize) -> f64 {
    let path = fresh_path("floor");
    let mut conn = Connection::open(&path).expect("open the floor's file");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .expect("journal mode");
    assert_eq!(mode, "wal", "the floor runs in WAL mode");
    conn.execute_batch(&format!("PRAGMA synchronous = {synchronous}"))
        .expect("synchronous");
    conn.execute_batch(FLOOR_SCHEMA).expect("schema");

    let insert = |conn: &mut Connection, time: Duration| -> (u64, Duration) {
        let start = Instant::now();
        let mut rows = 0u64;
        while start.elapsed() < time {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .expect("begin");
            {
                let mut statement = tx
                    .prepare_cached(
                        "INSERT INTO tasks (id, owner, status, created_at, updated_at, ttl, \
                         expires_at, poll_interval) VALUES (?1, NULL, 'working', ?2, ?2, ?3, ?4, ?5)",
                    )
                    .expect("prepare");
                for _ in 0..per_commit {
                    let id = TaskId::generate().expect("random").to_string();
                    let now = Timestamp::now().as_millis() as i64;
                    statement
                        .execute(params![id, now, 3_600_000i64, now + 3_600_000, 1_000i64])
                        .expect("insert");
                }
            }
            tx.commit().expect("commit");
            rows += per_commit as u64;
        }
        (rows, start.elapsed())
    };
    insert(&mut conn, WARM_UP);
    let (rows, elapsed) = insert(&mut conn, MEASURE);
    drop(conn);
    remove_files(&path);
    rows as f64 / elapsed.as_secs_f64()
}

/// The load average (1, 5, 15 minutes) from `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn print_table(rows: &[Row], load_before: &str, load_after: &str) {
    println!();
    println!(
        "Command: cargo bench --features sqlite --bench sqlite  \
         (tokio multi-thread runtime, 2 workers; {}ms per measurement after {}ms warm-up; \
         {ROUNDS} rounds; files in {})",
        MEASURE.as_millis(),
        WARM_UP.as_millis(),
        std::env::temp_dir().display()
    );
    println!(
        "Machine: {} CPUs; load average before {load_before}, after {load_after}",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!();
    println!("| What | C | ops/s (median of {ROUNDS}) | range |");
    println!("|------|---|------:|-------|");
    for row in rows {
        let low = row
            .ops_per_sec
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let high = row.ops_per_sec.iter().copied().fold(0.0, f64::max);
        let concurrency = row
            .concurrency
            .map_or_else(|| "1 thread".to_owned(), |c| c.to_string());
        println!(
            "| {} | {} | {} | {}–{} |",
            row.what,
            concurrency,
            thousands(median(&row.ops_per_sec)),
            thousands(low),
            thousands(high)
        );
    }
    println!();
    for (counter, store) in ["memory", "SQLite Normal", "SQLite Full"]
        .into_iter()
        .enumerate()
    {
        println!(
            "park → complete, {store}: the waiting loop read the store {:.2} times per cycle \
             (whole run)",
            POLLS[counter].load(Ordering::Relaxed) as f64
                / CYCLES[counter].load(Ordering::Relaxed).max(1) as f64
        );
    }
    println!();
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// `123456.7` as `123,457`.
fn thousands(value: f64) -> String {
    let digits = format!("{value:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
