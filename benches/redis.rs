//! `RedisTaskStore` through the real layer, next to `redis-benchmark` GET and
//! SET against the same `redis-server`, at the same concurrency, in one run.
//!
//! Run: `cargo bench --features redis --bench redis`. Results and how to read
//! them: `BENCHMARKS.md`, section "RedisTaskStore".
//!
//! The bench starts its own `redis-server` on a free loopback port (no
//! persistence; killed on drop), then for each concurrency C:
//!
//! - `redis-benchmark -t get,set -n 100000 -c C -P 1` (the baseline), and at
//!   C > 1 also GET on one connection with `-P C`, for context;
//! - `RedisTaskStore::get` of one working task, C tasks each looping;
//! - `tasks/get` of that task through `TasksLayer` over the in-process inner
//!   service (`support/inner.rs`), C tasks each looping;
//! - park → complete: C tasks each looping over a declaring `tools/call`
//!   parked at once (threshold zero, the inner answers after one yield) and
//!   polling the store until that task is terminal.
//!
//! All of it runs on a tokio multi-thread runtime with 2 workers. Each
//! measurement runs for a fixed time after a short warm-up, and the whole set
//! runs [`ROUNDS`] times; the table shows medians and ranges. "Redis
//! commands/op" and "µs in Redis/command" come from `INFO commandstats`,
//! reset before each measurement; for the store they count script calls
//! (`EVALSHA`/`EVAL`) and `HMGET` (`get`), each one round trip.

#[path = "support/inner.rs"]
mod inner;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{NewTask, Quota, TaskId, TaskStore, TasksLayer, Timestamp};
use tower::Layer;

use inner::{Answers, Inner, request, roundtrip};
use redis_server::{RedisServer, load_average, redis_benchmark};

/// Concurrencies measured, for redis-benchmark and for the layer alike.
const CONCURRENCY: [usize; 2] = [1, 16];
/// Requests per redis-benchmark test.
const REDIS_BENCHMARK_REQUESTS: u32 = 100_000;
/// Untimed run before each measurement.
const WARM_UP: Duration = Duration::from_millis(500);
/// Timed run of each measurement.
const MEASURE: Duration = Duration::from_secs(3);

/// Store reads and cycles of park → complete over the whole run, to tell
/// the waiting loop's polls apart from the layer's own Redis commands.
static PARK_POLLS: AtomicU64 = AtomicU64::new(0);
static PARK_CYCLES: AtomicU64 = AtomicU64::new(0);

/// Rounds of the whole set of measurements.
const ROUNDS: usize = 5;

/// What one measurement gives.
struct Measured {
    what: &'static str,
    ops_per_sec: f64,
    /// Redis commands sent per operation (scripts and HMGETs for the store).
    calls_per_op: f64,
    /// Redis's own time per command (`usec_per_call` of `INFO commandstats`).
    usec_per_call: f64,
    /// The redis-benchmark test it compares with.
    baseline: Option<&'static str>,
}

/// One line of the table, with a value per round.
struct Row {
    what: &'static str,
    concurrency: usize,
    ops_per_sec: Vec<f64>,
    /// Redis commands (round trips) per operation.
    calls_per_op: Vec<f64>,
    /// Redis's own time per command, µs.
    usec_per_call: Vec<f64>,
    /// Compared with redis-benchmark's GET or SET, when it is one of ours.
    baseline: Option<&'static str>,
}

impl Row {
    fn median(&self) -> f64 {
        median(&self.ops_per_sec)
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn main() {
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let load_before = load_average();
    // Rounds, each measuring everything once, so that the baseline and the
    // store figures of a round are taken side by side; the table shows the
    // median of the rounds and their range.
    let mut rows: Vec<Row> = Vec::new();
    for round in 1..=ROUNDS {
        eprintln!("round {round} of {ROUNDS}");
        for concurrency in CONCURRENCY {
            let mut measured = runtime.block_on(baselines(&server, concurrency));
            measured.extend(runtime.block_on(through_the_store(&server, concurrency)));
            for one in measured {
                let (what, baseline) = (one.what, one.baseline);
                let row = match rows
                    .iter_mut()
                    .find(|row| row.what == what && row.concurrency == concurrency)
                {
                    Some(row) => row,
                    None => {
                        rows.push(Row {
                            what,
                            concurrency,
                            ops_per_sec: Vec::new(),
                            calls_per_op: Vec::new(),
                            usec_per_call: Vec::new(),
                            baseline,
                        });
                        rows.last_mut().expect("just pushed")
                    }
                };
                row.ops_per_sec.push(one.ops_per_sec);
                row.calls_per_op.push(one.calls_per_op);
                row.usec_per_call.push(one.usec_per_call);
            }
        }
    }
    let load_after = load_average();

    print_table(&rows, &load_before, &load_after);
    drop(runtime);
    drop(server);
}

/// `redis-benchmark -t get,set` at `concurrency` (with `-P 1`, as the
/// issue asks), and, at C > 1, GET over one connection with C requests in
/// flight (`-c 1 -P C`), which is how the store's single multiplexed
/// connection carries C concurrent clients.
async fn baselines(server: &RedisServer, concurrency: usize) -> Vec<Measured> {
    let mut admin = admin(server).await;
    let mut out = Vec::new();
    reset_stats(&mut admin).await;
    let (get, set) = redis_benchmark(server.port, concurrency, 1, "get,set");
    let stats = command_stats(&mut admin).await;
    for (what, ops, command) in [
        ("redis-benchmark GET", get, "get"),
        ("redis-benchmark SET", set, "set"),
    ] {
        out.push(Measured {
            what,
            ops_per_sec: ops,
            calls_per_op: 1.0,
            usec_per_call: usec_per_call(&stats, &[command]),
            baseline: None,
        });
    }
    if concurrency > 1 {
        reset_stats(&mut admin).await;
        let (get, _) = redis_benchmark(server.port, 1, concurrency, "get");
        let stats = command_stats(&mut admin).await;
        out.push(Measured {
            what: "redis-benchmark GET, one connection, -P C (context)",
            ops_per_sec: get,
            calls_per_op: 1.0,
            usec_per_call: usec_per_call(&stats, &["get"]),
            baseline: None,
        });
    }
    out
}

/// The three store measurements at `concurrency`, each on a fresh prefix.
async fn through_the_store(server: &RedisServer, concurrency: usize) -> Vec<Measured> {
    let mut admin = admin(server).await;
    let mut rows = Vec::new();

    // The store alone: one HMGET per get.
    let store = connect(server).await;
    let id = working_task(&store).await;
    let (ops, calls, usec) = measure(&mut admin, concurrency, move || {
        let store = store.clone();
        async move {
            let task = store.get(id, None).await.expect("store get");
            assert!(task.is_some(), "the task is there");
        }
    })
    .await;
    rows.push(Measured {
        what: "RedisTaskStore::get",
        ops_per_sec: ops,
        calls_per_op: calls,
        usec_per_call: usec,
        baseline: Some("GET"),
    });

    // tasks/get through the layer, of the same kind of working task.
    let store = connect(server).await;
    let id = working_task(&store).await;
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
    let (ops, calls, usec) = measure(&mut admin, concurrency, move || {
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
    .await;
    rows.push(Measured {
        what: "tasks/get through the layer",
        ops_per_sec: ops,
        calls_per_op: calls,
        usec_per_call: usec,
        baseline: Some("GET"),
    });

    // park → complete: each cycle parks a call and waits, through the store,
    // until its task is terminal.
    let store = connect(server).await;
    // Completed tasks stay live until their TTL: the default caps would
    // soon refuse to park (the call is then answered as without the layer).
    let layered = TasksLayer::new(store.clone())
        .threshold(Duration::ZERO)
        .max_tasks(None)
        .max_tasks_per_principal(None)
        .layer(Inner {
            answers: Answers::AfterYield,
        });
    let (ops, calls, usec) = measure(&mut admin, concurrency, move || {
        let layered = layered.clone();
        let store = store.clone();
        async move {
            let body = roundtrip(layered, fast_call()).await;
            let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
            let id = value["result"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("the call was parked: {value}"));
            let id = TaskId::parse(id).expect("task id");
            PARK_CYCLES.fetch_add(1, Ordering::Relaxed);
            loop {
                PARK_POLLS.fetch_add(1, Ordering::Relaxed);
                let task = store.get(id, None).await.expect("store").expect("task");
                if task.status().is_terminal() {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
    })
    .await;
    rows.push(Measured {
        what: "park → complete (cycles)",
        ops_per_sec: ops,
        calls_per_op: calls,
        usec_per_call: usec,
        baseline: Some("SET"),
    });
    rows
}

async fn connect(server: &RedisServer) -> RedisTaskStore {
    RedisTaskStore::builder(server.url())
        .prefix(format!("bench-{}", TaskId::generate().expect("random")))
        .connect()
        .await
        .expect("connect to the bench redis-server")
}

/// A working task with the layer's default TTL and poll interval, no owner.
async fn working_task(store: &RedisTaskStore) -> TaskId {
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
/// [`MEASURE`]; returns, for the timed part, operations per second, script
/// calls per operation and Redis's time per store command (µs).
async fn measure<F, Fut>(
    admin: &mut redis::aio::MultiplexedConnection,
    concurrency: usize,
    op: F,
) -> (f64, f64, f64)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    run_for(WARM_UP, concurrency, &op).await;
    // Let background work of the warm-up (drivers, publishes) settle.
    tokio::time::sleep(Duration::from_millis(100)).await;
    reset_stats(admin).await;
    let (ops, elapsed) = run_for(MEASURE, concurrency, &op).await;
    let stats = command_stats(admin).await;
    (
        ops as f64 / elapsed.as_secs_f64(),
        calls(&stats, SCRIPTS) as f64 / ops.max(1) as f64,
        usec_per_call(&stats, SCRIPTS),
    )
}

/// The commands the store sends: each writing trait method is one script,
/// and `get` one `HMGET`.
const SCRIPTS: &[&str] = &["evalsha", "eval", "evalsha_ro", "eval_ro", "hmget"];

async fn admin(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection")
}

async fn reset_stats(admin: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(admin)
        .await
        .expect("CONFIG RESETSTAT");
}

async fn command_stats(admin: &mut redis::aio::MultiplexedConnection) -> String {
    redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await
        .expect("INFO commandstats")
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

/// `(calls, usec)` of each of `commands` in an `INFO commandstats` answer
/// (lines like `cmdstat_get:calls=3,usec=5,usec_per_call=1.67,…`).
fn stat_lines<'a>(
    stats: &'a str,
    commands: &'a [&'a str],
) -> impl Iterator<Item = (u64, u64)> + 'a {
    stats.lines().filter_map(move |line| {
        let (name, rest) = line.trim().split_once(':')?;
        let name = name.strip_prefix("cmdstat_")?;
        if !commands.contains(&name) {
            return None;
        }
        let field = |key: &str| -> Option<u64> {
            rest.split(',')
                .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))?
                .parse()
                .ok()
        };
        Some((field("calls")?, field("usec")?))
    })
}

fn calls(stats: &str, commands: &[&str]) -> u64 {
    stat_lines(stats, commands).map(|(calls, _)| calls).sum()
}

fn usec_per_call(stats: &str, commands: &[&str]) -> f64 {
    let (calls, usec) =
        stat_lines(stats, commands).fold((0, 0), |(c, u), (calls, usec)| (c + calls, u + usec));
    usec as f64 / calls.max(1) as f64
}

fn print_table(rows: &[Row], load_before: &str, load_after: &str) {
    println!();
    println!(
        "Command: cargo bench --features redis --bench redis  \
         (redis-benchmark -h 127.0.0.1 -p <port> -t get,set -n {REDIS_BENCHMARK_REQUESTS} \
         -c C -P 1 -q --csv; tokio multi-thread runtime, 2 workers; \
         {}s per measurement after {}ms warm-up; {ROUNDS} rounds)",
        MEASURE.as_secs(),
        WARM_UP.as_millis()
    );
    println!(
        "Machine: {} CPUs; load average before {load_before}, after {load_after}",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!();
    println!(
        "| What | C | ops/s (median of {ROUNDS}) | range | Redis commands/op | µs in Redis/command | vs redis-benchmark -P 1 (medians) | same, per round (min–max) |"
    );
    println!("|------|---|-------|-------|---|---|---|---|");
    for row in rows {
        let versus = row.baseline.map_or_else(
            || "— | —".to_owned(),
            |which| {
                let base = rows
                    .iter()
                    .find(|base| {
                        base.concurrency == row.concurrency
                            && base.what == format!("redis-benchmark {which}")
                    })
                    .expect("baseline at this concurrency");
                // Each round's figure against the same round's baseline.
                let per_round: Vec<f64> = row
                    .ops_per_sec
                    .iter()
                    .zip(&base.ops_per_sec)
                    .map(|(ops, base)| ops / base)
                    .collect();
                let low = per_round.iter().copied().fold(f64::INFINITY, f64::min);
                let high = per_round.iter().copied().fold(0.0, f64::max);
                format!(
                    "{:.2}× {which} | {low:.2}–{high:.2}",
                    row.median() / base.median()
                )
            },
        );
        let calls = format!("{:.2}", median(&row.calls_per_op));
        let usec = format!("{:.2}", median(&row.usec_per_call));
        let low = row
            .ops_per_sec
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let high = row.ops_per_sec.iter().copied().fold(0.0, f64::max);
        println!(
            "| {} | {} | {} | {}–{} | {} | {} | {} |",
            row.what,
            row.concurrency,
            thousands(row.median()),
            thousands(low),
            thousands(high),
            calls,
            usec,
            versus
        );
    }
    println!();
    println!(
        "park → complete: the waiting loop read the store {:.2} times per cycle \
         (whole run); the rest of the commands per cycle are the layer's",
        PARK_POLLS.load(Ordering::Relaxed) as f64
            / PARK_CYCLES.load(Ordering::Relaxed).max(1) as f64
    );
    println!();
}

/// `123456.7` as `123,457`.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
