//! Latency and throughput of `TasksLayer`, with and without the layer in the
//! same run, over the same in-process inner service (`support/inner.rs`).
//!
//! Run: `cargo bench --bench layer`. Results and how to read them: `BENCHMARKS.md`.
//!
//! `with_layer_observed` is the layer with what an operator installs: a
//! `tracing` subscriber at `info` (formatting to a sink) and the Prometheus
//! metrics recorder, both scoped to the benchmark's thread.
//! `with_layer_stats` is the layer with a call observer, `ToolStats`, that
//! records every fast call; `tool_stats/record_known_tool` is one record
//! alone.

#[path = "support/inner.rs"]
mod inner;
#[path = "support/tasks.rs"]
mod tasks;

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_tasks::observe::ToolStats;
use mcp_tasks::observe::calls::{CallObserver, CallOutcome, CallRecord};
use mcp_tasks::{MemoryTaskStore, TaskId, TaskStore, TasksLayer};
use tower::Layer;

use inner::{Answers, Inner, request, roundtrip};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn tools_list() -> http::Request<http_body_util::Full<bytes::Bytes>> {
    request(1, "tools/list", "", None, false)
}

fn fast_call() -> http::Request<http_body_util::Full<bytes::Bytes>> {
    request(
        2,
        "tools/call",
        r#""name":"job","arguments":{}"#,
        Some("job"),
        true,
    )
}

/// The fast call of a client without tasks: forwarded as it is, raced
/// only against the keep-alive interval (an early SSE head).
fn undeclared_call() -> http::Request<http_body_util::Full<bytes::Bytes>> {
    request(
        3,
        "tools/call",
        r#""name":"job","arguments":{}"#,
        Some("job"),
        false,
    )
}

fn passthrough_and_fast_calls(c: &mut Criterion) {
    let rt = runtime();
    let bare = Inner {
        answers: Answers::AtOnce,
    };
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(bare);
    let with_stats = TasksLayer::new(MemoryTaskStore::new())
        .observe_calls(ToolStats::new())
        .layer(bare);
    // Task events on: what the fast path pays for them (nothing is
    // subscribed; a call answered in time makes no status change).
    let with_events = rt.block_on(async {
        TasksLayer::new(MemoryTaskStore::new())
            .events(mcp_tasks::EventsConfig::new())
            .layer(bare)
    });

    let mut group = c.benchmark_group("pass_through_tools_list");
    group.bench_function("without_layer", |b| {
        b.to_async(&rt).iter(|| roundtrip(bare, tools_list()))
    });
    group.bench_function("with_layer", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(layered.clone(), tools_list()))
    });
    group.bench_function("with_layer_observed", |b| {
        observed(|| {
            b.to_async(&rt)
                .iter(|| roundtrip(layered.clone(), tools_list()))
        })
    });
    group.bench_function("with_layer_events", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(with_events.clone(), tools_list()))
    });
    group.finish();

    let mut group = c.benchmark_group("undeclared_tools_call");
    group.bench_function("without_layer", |b| {
        b.to_async(&rt).iter(|| roundtrip(bare, undeclared_call()))
    });
    group.bench_function("with_layer", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(layered.clone(), undeclared_call()))
    });
    group.finish();

    let mut group = c.benchmark_group("fast_tools_call");
    group.bench_function("without_layer", |b| {
        b.to_async(&rt).iter(|| roundtrip(bare, fast_call()))
    });
    group.bench_function("with_layer", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(layered.clone(), fast_call()))
    });
    group.bench_function("with_layer_observed", |b| {
        observed(|| {
            b.to_async(&rt)
                .iter(|| roundtrip(layered.clone(), fast_call()))
        })
    });
    group.bench_function("with_layer_events", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(with_events.clone(), fast_call()))
    });
    group.bench_function("with_layer_stats", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(with_stats.clone(), fast_call()))
    });
    group.finish();
}

/// One record of a fast call of a known tool into `ToolStats`.
fn tool_stats_record(c: &mut Criterion) {
    let stats = ToolStats::new();
    let call = CallRecord::new(
        "job",
        Duration::from_micros(40),
        false,
        CallOutcome::Succeeded,
    );
    stats.finished(&call);
    let mut group = c.benchmark_group("tool_stats");
    group.bench_function("record_known_tool", |b| b.iter(|| stats.finished(&call)));
    group.finish();
}

/// Runs `measure` with a subscriber (`info`, formatted into a sink) and a
/// Prometheus recorder installed for this thread.
fn observed(measure: impl FnOnce()) {
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::sink)
        .finish();
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    tracing::subscriber::with_default(subscriber, || {
        metrics::with_local_recorder(&recorder, measure)
    });
}

/// Fills `store` with 100k working tasks (TTL one hour); returns the last id.
async fn fill_100k(store: &MemoryTaskStore) -> String {
    tasks::fill(store, None, 100_000).await.to_string()
}

fn tasks_get_among_100k(c: &mut Criterion) {
    let rt = runtime();
    let store = MemoryTaskStore::new();
    let target = rt.block_on(fill_100k(&store));
    let layered = TasksLayer::new(store).layer(Inner {
        answers: Answers::AtOnce,
    });
    let params = format!(r#""taskId":"{target}""#);
    let get = || request(3, "tasks/get", &params, Some(&target), true);
    let probe = rt.block_on(roundtrip(layered.clone(), get()));
    assert!(
        std::str::from_utf8(&probe)
            .unwrap()
            .contains(r#""status":"working""#)
    );

    let mut group = c.benchmark_group("tasks_get_100k_tasks");
    group.bench_function("with_layer", |b| {
        b.to_async(&rt).iter(|| roundtrip(layered.clone(), get()))
    });
    group.finish();
}

fn park_and_complete(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("park_then_complete");
    group.sample_size(20);
    group.bench_function("one_cycle", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            // Each sample starts from a store holding 100k other tasks (not
            // timed), so the store stays near that size instead of growing
            // with every sample criterion takes.
            let store = MemoryTaskStore::new();
            fill_100k(&store).await;
            // A zero threshold parks every call; the inner answers after one
            // yield, so each cycle is: park (store create), drive, complete.
            let layered = TasksLayer::new(store.clone())
                .threshold(Duration::ZERO)
                .layer(Inner {
                    answers: Answers::AfterYield,
                });
            let start = Instant::now();
            let mut ids = Vec::with_capacity(iters as usize);
            for _ in 0..iters {
                let body = roundtrip(layered.clone(), fast_call()).await;
                let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
                let id = value["result"]["taskId"].as_str().expect("a task");
                ids.push(TaskId::parse(id).expect("task id"));
                // Let the drivers run, as a server would between requests.
                tokio::task::yield_now().await;
            }
            for id in ids {
                loop {
                    let task = store.get(id, None).await.expect("store").expect("task");
                    if task.status().is_terminal() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
            }
            start.elapsed()
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    passthrough_and_fast_calls,
    tool_stats_record,
    tasks_get_among_100k,
    park_and_complete
);
criterion_main!(benches);
