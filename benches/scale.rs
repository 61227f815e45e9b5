//! The scale run of issue #36: up to a million live tasks on a 3+3 Redis
//! Cluster, four layer instances, many principals.
//!
//! Run: `cargo bench --features redis --bench scale` (about 10 minutes for
//! the default million; `SCALE_TASKS=100000` for a short run). Results and
//! how to read them: `BENCHMARKS.md`, section "Scale run".
//!
//! What it does, on loopback:
//!
//! - starts a Redis Cluster of three primaries and three replicas
//!   (`tests/support/redis_cluster.rs`: `redis-server` without persistence,
//!   joined by `redis-cli --cluster create`);
//! - connects four [`RedisTaskStore`] instances to it (the default 16
//!   shards) and puts a [`TasksLayer`] in front of each, over the
//!   in-process inner service of `support/inner.rs`; the principal comes
//!   from an `x-principal` header (what an authenticating proxy would set),
//!   so that no token is verified in the measured path;
//! - fills the store through the four instances, 64 creators at once:
//!   each task belongs to one of 10,000 principals, is created and then
//!   completed with a small result (`{"content":[]}`), and lives for two
//!   hours; the fill goes through `RedisTaskStore` directly, not over the
//!   layer, to take minutes rather than an hour;
//! - at 10k, 100k and 1M live tasks, measures for [`MEASURE`] each:
//!   `redis-benchmark --cluster -t get -c 16` (the baseline); `tasks/get`
//!   through the four layers, 16 loops each asking for a random task of its
//!   principal (throughput, p50, p99); and meanwhile a completer on
//!   instance 1 that creates and completes 200 tasks a second while
//!   instance 4 listens to every principal (`TaskStore::listen`, as its
//!   push hub would) and reads its change feed (the path of status push
//!   across instances): the time from the `complete` call to the
//!   announcement on the other instance, p50 and p99;
//! - Redis memory per task: the growth of `used_memory` summed over the
//!   primaries (`INFO memory`) since before the fill, divided by the tasks.

#[path = "support/inner.rs"]
mod inner;
#[allow(dead_code)]
#[path = "../tests/support/redis_cluster.rs"]
mod redis_cluster;

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{NewTask, Quota, TaskChange, TaskId, TaskStore, TasksLayer, Timestamp};
use serde_json::value::RawValue;
use tokio::sync::broadcast::error::RecvError;
use tower::Layer;

use inner::{Answers, Inner, request, roundtrip};
use redis_cluster::RedisCluster;

/// Principals the tasks belong to.
const PRINCIPALS: usize = 10_000;
/// Store instances (and layers): the four gateway replicas.
const INSTANCES: usize = 4;
/// Creators at once during the fill.
const FILL_CONCURRENCY: usize = 64;
/// Loops asking `tasks/get` at once, as redis-benchmark's `-c`.
const CONCURRENCY: usize = 16;
/// Timed run of each measurement.
const MEASURE: Duration = Duration::from_secs(5);
/// Completions a second while `tasks/get` runs.
const COMPLETIONS_PER_SEC: u64 = 200;
/// Requests of each redis-benchmark run.
const BENCHMARK_REQUESTS: &str = "200000";

fn main() {
    let total: usize = std::env::var("SCALE_TASKS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1_000_000);
    let Some(cluster) = RedisCluster::start() else {
        eprintln!("no redis-server/redis-cli: the scale run needs both");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stores: Vec<RedisTaskStore> = runtime.block_on(async {
        let mut stores = Vec::new();
        for _ in 0..INSTANCES {
            let store = RedisTaskStore::builder(cluster.urls())
                .prefix("scale")
                .connect()
                .await
                .expect("connect to the cluster");
            stores.push(store);
        }
        stores
    });
    let baseline_memory = used_memory(&cluster);
    let mut tasks: Vec<(TaskId, u32)> = Vec::with_capacity(total);
    let mut rows = Vec::new();
    for checkpoint in [10_000, 100_000, 1_000_000, total] {
        if checkpoint > total || checkpoint <= tasks.len() {
            continue;
        }
        let started = Instant::now();
        let before = tasks.len();
        runtime.block_on(fill(&stores, &mut tasks, checkpoint));
        let fill_rate = (tasks.len() - before) as f64 / started.elapsed().as_secs_f64();
        let memory = used_memory(&cluster).saturating_sub(baseline_memory);
        let baseline = redis_benchmark_get(&cluster);
        let measured = runtime.block_on(measure(&stores, &tasks));
        let row = Row {
            tasks: tasks.len(),
            fill_rate,
            bytes_per_task: memory as f64 / tasks.len() as f64,
            baseline,
            measured,
        };
        row.print();
        rows.push(row);
    }
    println!();
    println!(
        "| live tasks | fill (tasks/s) | redis-benchmark GET/s | tasks/get/s | ratio | get p50 | get p99 | push p50 | push p99 | Redis B/task |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        row.print_markdown();
    }
    drop(stores);
    drop(runtime);
    drop(cluster);
}

/// One checkpoint's figures.
struct Row {
    tasks: usize,
    fill_rate: f64,
    bytes_per_task: f64,
    baseline: f64,
    measured: Measured,
}

impl Row {
    fn print(&self) {
        eprintln!(
            "{} tasks: fill {:.0}/s, {:.0} B/task, redis-benchmark GET {:.0}/s, tasks/get {:.0}/s \
             (p50 {:?}, p99 {:?}), push p50 {:?} p99 {:?} ({} heard of {} completed)",
            self.tasks,
            self.fill_rate,
            self.bytes_per_task,
            self.baseline,
            self.measured.gets_per_sec,
            self.measured.get_p50,
            self.measured.get_p99,
            self.measured.push_p50,
            self.measured.push_p99,
            self.measured.heard,
            self.measured.completed,
        );
    }

    fn print_markdown(&self) {
        let m = &self.measured;
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.2}× | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.0} |",
            self.tasks,
            self.fill_rate,
            self.baseline,
            m.gets_per_sec,
            m.gets_per_sec / self.baseline,
            ms(m.get_p50),
            ms(m.get_p99),
            ms(m.push_p50),
            ms(m.push_p99),
            self.bytes_per_task,
        );
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn principal(index: u32) -> String {
    format!("principal-{index}")
}

fn new_task(owner: String) -> NewTask {
    NewTask {
        id: TaskId::generate().expect("random"),
        owner: Some(owner),
        created_at: Timestamp::now(),
        ttl: Some(Duration::from_secs(2 * 3600)),
        poll_interval: Some(Duration::from_secs(1)),
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    }
}

fn result() -> Box<RawValue> {
    RawValue::from_string(r#"{"content":[]}"#.to_owned()).expect("json")
}

/// Creates and completes tasks through the instances, in turn, until there
/// are `upto`.
async fn fill(stores: &[RedisTaskStore], tasks: &mut Vec<(TaskId, u32)>, upto: usize) {
    let next = Arc::new(AtomicUsize::new(tasks.len()));
    let workers = (0..FILL_CONCURRENCY).map(|worker| {
        let store = stores[worker % stores.len()].clone();
        let next = next.clone();
        tokio::spawn(async move {
            let mut made = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= upto {
                    return made;
                }
                let owner = (n % PRINCIPALS) as u32;
                let task = new_task(principal(owner));
                let id = task.id;
                store.create(task).await.expect("create");
                store.complete(id, result()).await.expect("complete");
                made.push((id, owner));
            }
        })
    });
    for made in futures_util::future::join_all(workers).await {
        tasks.extend(made.expect("a creator"));
    }
}

/// What one measurement gives.
struct Measured {
    gets_per_sec: f64,
    get_p50: Duration,
    get_p99: Duration,
    push_p50: Duration,
    push_p99: Duration,
    completed: usize,
    heard: usize,
}

/// `tasks/get` through the layers with completions and a listener running.
async fn measure(stores: &[RedisTaskStore], tasks: &[(TaskId, u32)]) -> Measured {
    let layers: Vec<_> = stores
        .iter()
        .map(|store| {
            TasksLayer::new(store.clone())
                .owner_resolver(|parts: &http::request::Parts| {
                    let header = parts.headers.get("x-principal")?;
                    header.to_str().ok().map(str::to_owned)
                })
                .layer(Inner {
                    answers: Answers::AtOnce,
                })
        })
        .collect();
    let tasks: Arc<[(TaskId, u32)]> = tasks.into();
    // A probe: the layer answers a filled task to its principal.
    let (id, owner) = tasks[tasks.len() / 2];
    let probe = roundtrip(layers[0].clone(), get_request(id, owner)).await;
    let probe = String::from_utf8_lossy(&probe);
    assert!(probe.contains(r#""status":"completed""#), "{probe}");

    // Instance 4 listens to every principal, as its push hub would for
    // subscriptions of all of them: it subscribes to every shard.
    let _listening: Vec<_> = (0..PRINCIPALS as u32)
        .map(|owner| stores[INSTANCES - 1].listen(Some(&principal(owner))))
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let deadline = Instant::now() + MEASURE;
    let sent: Arc<Mutex<HashMap<TaskId, Instant>>> = Arc::default();
    let listener = {
        let mut changes = stores[INSTANCES - 1].changes().expect("a change feed");
        let sent = sent.clone();
        tokio::spawn(async move {
            let mut delays = Vec::new();
            let until = deadline + Duration::from_secs(1);
            loop {
                match tokio::time::timeout_at(until.into(), changes.recv()).await {
                    Err(_) | Ok(Err(RecvError::Closed)) => return delays,
                    Ok(Err(RecvError::Lagged(missed))) => eprintln!("the listener missed {missed}"),
                    Ok(Ok(TaskChange::Changed(id))) => {
                        if let Some(at) = sent.lock().unwrap().remove(&id) {
                            delays.push(at.elapsed());
                        }
                    }
                    Ok(Ok(_)) => {}
                }
            }
        })
    };
    let completer = {
        let store = stores[0].clone();
        let sent = sent.clone();
        tokio::spawn(async move {
            let mut ticks =
                tokio::time::interval(Duration::from_secs(1) / COMPLETIONS_PER_SEC as u32);
            let mut completed = 0;
            while Instant::now() < deadline {
                ticks.tick().await;
                let task = new_task(principal(completed as u32 % PRINCIPALS as u32));
                let id = task.id;
                store.create(task).await.expect("create");
                sent.lock().unwrap().insert(id, Instant::now());
                store.complete(id, result()).await.expect("complete");
                completed += 1;
            }
            completed
        })
    };
    let loops = (0..CONCURRENCY).map(|worker| {
        let layer = layers[worker % layers.len()].clone();
        let tasks = tasks.clone();
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut seed = 0x9e37_79b9_7f4a_7c15_u64 ^ (worker as u64 + 1);
            while Instant::now() < deadline {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let (id, owner) = tasks[(seed % tasks.len() as u64) as usize];
                let started = Instant::now();
                let body = roundtrip(layer.clone(), get_request(id, owner)).await;
                latencies.push(started.elapsed());
                debug_assert!(body.starts_with(br#"{"jsonrpc""#));
            }
            latencies
        })
    });
    let started = Instant::now();
    let mut latencies: Vec<Duration> = Vec::new();
    for one in futures_util::future::join_all(loops).await {
        latencies.extend(one.expect("a get loop"));
    }
    let elapsed = started.elapsed();
    let completed = completer.await.expect("the completer");
    let mut delays = listener.await.expect("the listener");
    latencies.sort_unstable();
    delays.sort_unstable();
    let at = |values: &[Duration], q: f64| {
        values
            .get(((values.len() as f64 * q) as usize).min(values.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Measured {
        gets_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        get_p50: at(&latencies, 0.5),
        get_p99: at(&latencies, 0.99),
        push_p50: at(&delays, 0.5),
        push_p99: at(&delays, 0.99),
        completed,
        heard: delays.len(),
    }
}

fn get_request(id: TaskId, owner: u32) -> http::Request<Full<Bytes>> {
    let target = id.to_string();
    let params = format!(r#""taskId":"{target}""#);
    let mut request = request(3, "tasks/get", &params, Some(&target), true);
    request.headers_mut().insert(
        "x-principal",
        principal(owner).parse().expect("a header value"),
    );
    request
}

/// `used_memory` summed over the primaries.
fn used_memory(cluster: &RedisCluster) -> u64 {
    cluster
        .primaries()
        .into_iter()
        .map(|port| {
            let info = cluster.command(port, &["INFO", "memory"]);
            info.lines()
                .find_map(|line| line.strip_prefix("used_memory:"))
                .and_then(|value| value.trim().parse::<u64>().ok())
                .expect("used_memory in INFO memory")
        })
        .sum()
}

/// `redis-benchmark --cluster -t get -c 16` against the cluster: GETs a second.
fn redis_benchmark_get(cluster: &RedisCluster) -> f64 {
    let port = cluster.primaries()[0].to_string();
    let clients = CONCURRENCY.to_string();
    let args = [
        "--cluster",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "get",
        "-n",
        BENCHMARK_REQUESTS,
        "-c",
        &clients,
        "-q",
        "--csv",
    ];
    let output = Command::new("redis-benchmark")
        .args(args)
        .output()
        .expect("run redis-benchmark");
    assert!(
        output.status.success(),
        "redis-benchmark failed: {output:?}"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find(|line| line.starts_with("\"GET"))
        .and_then(|line| line.split(',').nth(1))
        .and_then(|rps| rps.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("no GET figure in: {text}"))
}
