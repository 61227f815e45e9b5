//! Status push at scale: 1,000 subscribers on 1,000 tasks, each task
//! changing status once (issue #13).
//!
//! Run: `cargo bench --bench push [-- --subscribers N]`. Two measurements:
//!
//! 1. **Delivery latency, over loopback HTTP.** `TasksLayer` over
//!    `MemoryTaskStore` is served by the examples' HTTP server. N tasks are
//!    created in the store; N clients (one connection each) open a
//!    `subscriptions/listen` for one task each and read its acknowledgement
//!    and first notification. Then every task is completed, one after the
//!    other, as fast as the store takes it; the latency of a task is from
//!    just before its `complete` to the moment its client read the
//!    `completed` notification. Prints p50, p99 and max, and how long the
//!    whole burst took to be delivered.
//! 2. **Memory per subscriber, in process.** The same listens sent straight
//!    to the layer's service (no sockets), their response bodies held
//!    unread after the first two events: live heap growth (a counting
//!    global allocator) divided by N. This is what the layer holds per
//!    open subscription (feeder task, event buffer, watch entry, body);
//!    the HTTP connection is the server's, not the layer's.

#[path = "support/counting.rs"]
mod counting;
#[path = "../examples/support/http.rs"]
#[allow(dead_code)]
mod serving;

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_tasks::{
    MemoryTaskStore, NewTask, Quota, RequestBody, TaskId, TaskStore, TasksLayer, Timestamp,
};
use serde_json::json;
use tower::{Layer, ServiceExt};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#;

fn main() {
    let subscribers = std::env::args()
        .skip_while(|arg| arg != "--subscribers")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        latency(subscribers).await;
        memory(subscribers).await;
    });
}

/// A layer with room for `n` subscriptions of one (anonymous) principal.
fn layer(store: &MemoryTaskStore, n: usize) -> TasksLayer {
    TasksLayer::new(store.clone()).max_subscriptions(n as u32 + 1, n as u32 + 1)
}

/// An inner server that is never asked: the layer answers every listen.
async fn inner<B>(
    _: http::Request<RequestBody<B>>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    Ok(http::Response::new(Full::default()))
}

async fn tasks(store: &MemoryTaskStore, n: usize) -> Vec<TaskId> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let id = TaskId::generate().expect("id");
        store
            .create(NewTask {
                id,
                owner: None,
                created_at: Timestamp::now(),
                ttl: Some(Duration::from_secs(600)),
                poll_interval: None,
                status_message: None,
                quota: Quota::default(),
                tool: None,
                rerun: None,
            })
            .await
            .expect("create");
        ids.push(id);
    }
    ids
}

fn listen_body(id: TaskId) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{"notifications":{{"taskIds":["{id}"]}},"_meta":{META}}}}}"#
    )
}

async fn latency(n: usize) {
    let store = MemoryTaskStore::new();
    let ids = tasks(&store, n).await;
    let service = layer(&store, n).layer(tower::service_fn(inner::<axum::body::Body>));
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let limits = serving::Limits {
        max_connections: n + 16,
        ..serving::Limits::default()
    };
    tokio::spawn(serving::serve_with(
        listener,
        router,
        limits,
        std::future::pending(),
    ));

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(n);
    let mut readers = tokio::task::JoinSet::new();
    for &id in &ids {
        let (client, url, ready) = (client.clone(), url.clone(), ready_tx.clone());
        readers.spawn(async move {
            let mut response = client
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "subscriptions/listen")
                .body(listen_body(id))
                .send()
                .await
                .expect("listen");
            let mut seen = String::new();
            let mut signalled = false;
            while let Some(chunk) = response.chunk().await.expect("chunk") {
                seen.push_str(&String::from_utf8_lossy(&chunk));
                if !signalled && seen.contains(r#""status":"working""#) {
                    signalled = true;
                    let _ = ready.send(()).await;
                }
                if seen.contains(r#""status":"completed""#) {
                    return (id, Instant::now());
                }
            }
            panic!("the stream of {id} ended without the completed notification");
        });
    }
    drop(ready_tx);
    for _ in 0..n {
        ready_rx.recv().await.expect("a subscriber is ready");
    }
    let started = Instant::now();
    let mut sent = std::collections::HashMap::with_capacity(n);
    for &id in &ids {
        sent.insert(id, Instant::now());
        store
            .complete(
                id,
                serde_json::value::to_raw_value(&json!({})).expect("raw"),
            )
            .await
            .expect("complete");
    }
    let burst = started.elapsed();
    let mut latencies = Vec::with_capacity(n);
    let mut last = started;
    while let Some(done) = readers.join_next().await {
        let (id, at) = done.expect("reader");
        latencies.push(at - sent[&id]);
        last = last.max(at);
    }
    latencies.sort();
    let pick = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    println!(
        "latency over loopback HTTP, {n} subscribers, one completion each ({n} completions took {:?}): p50 {:?}, p99 {:?}, max {:?}; all {n} delivered {:?} after the first completion",
        burst,
        pick(0.5),
        pick(0.99),
        latencies[latencies.len() - 1],
        last - started
    );
}

async fn memory(n: usize) {
    let store = MemoryTaskStore::new();
    let ids = tasks(&store, n).await;
    let service = layer(&store, n).layer(tower::service_fn(inner::<Full<Bytes>>));
    // One listen first, so that lazily built state is not counted.
    let mut warm = Vec::with_capacity(1);
    let mut bodies = Vec::with_capacity(n);
    let mut baseline = 0;
    for (i, &id) in ids.iter().enumerate() {
        let request = http::Request::post("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(Full::new(Bytes::from(listen_body(id))))
            .expect("request");
        let response = service.clone().oneshot(request).await.expect("listen");
        let mut body = response.into_body();
        // The acknowledgement and the first notification.
        for _ in 0..2 {
            body.frame().await.expect("an event").expect("a frame");
        }
        if i == 0 {
            warm.push(body);
            tokio::time::sleep(Duration::from_millis(50)).await;
            baseline = counting::LIVE.load(Ordering::Relaxed);
        } else {
            bodies.push(body);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grown = counting::LIVE.load(Ordering::Relaxed) - baseline;
    let per = grown as f64 / (n - 1) as f64;
    println!(
        "memory in process: {} open subscriptions hold {} KiB of heap, {:.0} B each",
        n - 1,
        grown / 1024,
        per
    );
    drop(bodies);
    drop(warm);
}
