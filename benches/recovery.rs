//! How soon a task cut by a lost process runs again: the delay from the loss
//! to the moment the inner service sees the call re-issued.
//!
//! Run: `cargo bench --features redis,sqlite --bench recovery`. Results:
//! `BENCHMARKS.md`, section "Recovery".
//!
//! - Redis: instance A parks a call of a tool allowed re-runs, then stops at
//!   once (its runtime is dropped: no drain, no lease release, as a `kill -9`
//!   leaves it). Instance B, on the same `redis-server` and key prefix, has
//!   served one request before. The clock runs from A's stop to B's inner
//!   service receiving the call. The bound to meet is one lease plus one
//!   sweep period (half a lease): the lease may have just been renewed when
//!   A stops, and the sweep that finds it lapsed may come half a lease later.
//! - SQLite: a process parks such a call and stops the same way; the next
//!   opens the file and serves its first request. The clock runs from the
//!   open and from that first request to the re-issue.
//!
//! Each is measured [`ROUNDS`] times; the report gives every round and the
//! median. The Redis rounds stop A at points spread evenly over one lease
//! after B's first request (0, 1/ROUNDS, 2/ROUNDS … of a lease), since
//! where in its renewal and sweep cycles the loss falls sets the delay.

#[path = "support/inner.rs"]
mod inner;
#[allow(dead_code)] // `redis-benchmark` is for the Redis bench
#[path = "support/redis_server.rs"]
mod redis_server;

use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use mcp_tasks::store::{RedisTaskStore, SqliteTaskStore};
use mcp_tasks::{TaskId, TasksLayer};
use tokio::sync::mpsc;
use tower::{Layer, Service};

use inner::{Answers, Inner, request, roundtrip};
use redis_server::{RedisServer, load_average};

/// Rounds of each measurement.
const ROUNDS: usize = 6;
/// Leases measured with Redis: a short one, and the store's default.
const LEASES: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(10)];
/// Unused here; `support/redis_server.rs` reads it for `redis-benchmark`.
const REDIS_BENCHMARK_REQUESTS: u32 = 0;
/// The tool every measurement calls, allowed three runs in all.
const TOOL: &str = "job";

/// The inner service, telling `seen` when a `tools/call` reaches it.
#[derive(Clone)]
struct Recorder {
    inner: Inner,
    seen: mpsc::UnboundedSender<Instant>,
}

impl<B> Service<Request<B>> for Recorder
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Debug,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let mut inner = self.inner;
        let seen = self.seen.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = body.collect().await.expect("body").to_bytes();
            let text = std::str::from_utf8(&body).unwrap_or_default();
            if text.contains(r#""method":"tools/call""#) {
                let _ = seen.send(Instant::now());
            }
            inner
                .call(Request::from_parts(parts, Full::new(body)))
                .await
        })
    }
}

/// A recorder over an inner service that answers `answers`, and its feed.
fn recorder(answers: Answers) -> (Recorder, mpsc::UnboundedReceiver<Instant>) {
    let (seen, feed) = mpsc::unbounded_channel();
    let inner = Inner { answers };
    (Recorder { inner, seen }, feed)
}

fn call_request() -> Request<Full<Bytes>> {
    request(
        1,
        "tools/call",
        &format!(r#""name":"{TOOL}""#),
        Some(TOOL),
        true,
    )
}

fn get_request(task: &str) -> Request<Full<Bytes>> {
    request(2, "tasks/get", &format!(r#""taskId":"{task}""#), None, true)
}

/// Parks one call through `layer` over an inner service that never answers.
async fn park(layer: TasksLayer) -> String {
    let (inner, _feed) = recorder(Answers::Never);
    let body = roundtrip(layer.layer(inner), call_request()).await;
    let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
    value["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("the call was parked: {value}"))
        .to_owned()
}

/// Runs `life` on a runtime of its own in a thread of its own: it reports
/// its task id, then everything it started stops at once when the returned
/// trigger is pulled (the runtime is dropped, as a killed process stops).
fn doomed<F>(life: impl FnOnce() -> F + Send + 'static) -> (String, impl FnOnce())
where
    F: Future<Output = String>,
{
    let (task_tx, task_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime of the doomed process");
        runtime.block_on(async move {
            let task = life().await;
            task_tx.send(task).expect("report the task");
            let _ = stopped.await;
        });
        drop(runtime);
    });
    let task = task_rx.recv().expect("the doomed process parked a call");
    let kill = move || {
        let _ = stop.send(());
        thread.join().expect("the doomed process stopped");
    };
    (task, kill)
}

async fn redis_store(server: &RedisServer, prefix: &str, lease: Duration) -> RedisTaskStore {
    RedisTaskStore::builder(server.url())
        .prefix(prefix)
        .lease(lease)
        .connect()
        .await
        .expect("connect to the bench redis-server")
}

/// One Redis round: the delay from A's stop to B's re-issue. A stops
/// `phase` after B served its request, so that the rounds stop A at
/// different points of its renewal and of B's sweep period.
async fn redis_round(server: &RedisServer, lease: Duration, phase: Duration) -> Duration {
    let prefix = format!("recovery-{}", TaskId::generate().expect("random"));
    let url = server.url();
    let a_prefix = prefix.clone();
    let (task, kill) = tokio::task::block_in_place(|| {
        doomed(move || async move {
            let store = RedisTaskStore::builder(url)
                .prefix(a_prefix)
                .lease(lease)
                .connect()
                .await
                .expect("connect A");
            park(
                TasksLayer::new(store)
                    .threshold(Duration::ZERO)
                    .tool_retry(TOOL, 3),
            )
            .await
        })
    });
    let store = redis_store(server, &prefix, lease).await;
    let (inner, mut feed) = recorder(Answers::AtOnce);
    let b = TasksLayer::new(store.clone())
        .threshold(Duration::ZERO)
        .tool_retry(TOOL, 3)
        .layer(inner);
    // B serves a request before the loss, as a replica behind a balancer does.
    let before = roundtrip(b.clone(), get_request(&task)).await;
    assert!(
        String::from_utf8_lossy(&before).contains("working"),
        "{before:?}"
    );
    tokio::time::sleep(phase).await;
    let lost = Instant::now();
    tokio::task::block_in_place(kill);
    let seen = tokio::time::timeout(lease * 4, feed.recv())
        .await
        .expect("B re-issued the call within four leases")
        .expect("B's inner service is alive");
    seen - lost
}

/// One SQLite round: from the open, and from the first request, to the re-issue.
async fn sqlite_round(path: PathBuf) -> (Duration, Duration) {
    let a_path = path.clone();
    let (task, kill) = tokio::task::block_in_place(|| {
        doomed(move || async move {
            let store = SqliteTaskStore::open(a_path).await.expect("open A");
            park(
                TasksLayer::new(store)
                    .threshold(Duration::ZERO)
                    .tool_retry(TOOL, 3),
            )
            .await
        })
    });
    tokio::task::block_in_place(kill);
    // The stopped process's writer thread lets go of the file when it ends.
    let opened = Instant::now();
    let store = loop {
        match SqliteTaskStore::open(&path).await {
            Ok(store) => break store,
            Err(error) if opened.elapsed() < Duration::from_secs(5) => {
                let _ = error;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(error) => panic!("reopen: {error}"),
        }
    };
    let (inner, mut feed) = recorder(Answers::AtOnce);
    let b = TasksLayer::new(store.clone())
        .threshold(Duration::ZERO)
        .tool_retry(TOOL, 3)
        .layer(inner);
    let first = Instant::now();
    let _ = roundtrip(b.clone(), get_request(&task)).await;
    let seen = tokio::time::timeout(Duration::from_secs(10), feed.recv())
        .await
        .expect("the call was re-issued within 10 s")
        .expect("the inner service is alive");
    store.close().await;
    (seen - opened, seen - first)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1000.0)
}

fn rounds(values: &[Duration]) -> String {
    values
        .iter()
        .map(|value| ms(*value))
        .collect::<Vec<_>>()
        .join(", ")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    println!("load average before: {}", load_average());
    let server = tokio::task::block_in_place(RedisServer::start);
    println!("Redis: from the stop of instance A to the call reaching B's inner service");
    println!("| lease | bound (1.5 leases) | median | rounds | within the bound |");
    println!("|------:|-------------------:|-------:|--------|------------------|");
    for lease in LEASES {
        let mut delays = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            // Stops spread evenly over one lease.
            let phase = lease.mul_f64(round as f64 / ROUNDS as f64);
            delays.push(redis_round(&server, lease, phase).await);
        }
        let bound = lease + lease / 2;
        let within = delays.iter().filter(|delay| **delay <= bound).count();
        println!(
            "| {} | {} | {} | {} | {within} of {ROUNDS} |",
            ms(lease),
            ms(bound),
            ms(median(delays.clone())),
            rounds(&delays),
        );
    }
    drop(server);

    println!("SQLite: the next process, to the call reaching its inner service");
    println!("| from | median | rounds |");
    println!("|------|-------:|--------|");
    let directory = std::env::temp_dir();
    let (mut from_open, mut from_first) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let path = directory.join(format!(
            "mcp-tasks-recovery-{}-{round}.db",
            std::process::id()
        ));
        let (open, first) = sqlite_round(path.clone()).await;
        from_open.push(open);
        from_first.push(first);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    println!(
        "| the open | {} | {} |",
        ms(median(from_open.clone())),
        rounds(&from_open)
    );
    println!(
        "| the first request | {} | {} |",
        ms(median(from_first.clone())),
        rounds(&from_first)
    );
    println!("load average after: {}", load_average());
}
