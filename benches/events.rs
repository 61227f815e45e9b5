//! What task events cost (issue #50): memory per subscription, deliveries
//! per second, over the memory store.
//!
//! Run: `cargo bench --bench events`. Prints:
//! (a) live heap bytes per webhook subscription, 10,000 of them in
//!     `MemoryTaskStore` (the record, its key and secret, the index);
//! (b) live heap bytes per open `events/stream` through `TasksLayer`, 1,000
//!     of them (the stream's slot, its channel of 64, its feeder task and the
//!     response body the client holds);
//! (c) deliveries per second to one subscription, 10,000 status changes
//!     (5,000 tasks created and completed): to a transport that answers at
//!     once (the layer's own cost: the log read, the claim, the signature,
//!     the cursor's move), and to a loopback HTTP receiver over hyper, a
//!     connection per delivery (as the gateway's transport makes them);
//! (d) the same to ten subscriptions at once.
//!
//! What one status change costs the fast path is in the `layer` bench
//! (`fast_tools_call/with_layer_events`): a call answered within the
//! threshold makes no task, so no status change.

#[path = "support/counting.rs"]
mod counting;
#[path = "support/inner.rs"]
mod inner;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use mcp_tasks::store::Hook;
use mcp_tasks::webhook::{
    CallbackPolicy, Deliver, DeliverFuture, Delivered, Delivery, DeliveryError,
};
use mcp_tasks::{
    EventsConfig, MemoryTaskStore, NewTask, Quota, TaskId, TaskStore, TasksLayer, Timestamp,
};
use tower::{Layer, ServiceExt};

const HOOKS: usize = 10_000;
const STREAMS: usize = 1_000;
const TASKS: usize = 5_000;

fn heap() -> isize {
    counting::LIVE.load(Ordering::Relaxed)
}

fn hook(n: usize, cursor: &str) -> Hook {
    Hook {
        id: format!("sub_{n:032x}"),
        owner: Some(format!("principal-{}", n % 100)),
        url: format!("https://hooks.example.com/mcp/{n}?key=0123456789"),
        name: "mcp-tasks/status".to_owned(),
        arguments: "{}".to_owned(),
        secret: format!("whsec_{}", STANDARD.encode([7u8; 32])),
        expires_at: Some(Timestamp::now().saturating_add(Duration::from_secs(3600))),
        cursor: cursor.to_owned(),
    }
}

/// (a)
async fn memory_per_hook() {
    let store = MemoryTaskStore::new();
    let cursor = store.status_events(None, None, 1).await.unwrap().cursor;
    let before = heap();
    for n in 0..HOOKS {
        store
            .put_hook(hook(n, &cursor), u32::MAX, u32::MAX)
            .await
            .unwrap();
    }
    let per = (heap() - before) / HOOKS as isize;
    println!("(a) webhook subscription in MemoryTaskStore: {per} B of heap each ({HOOKS})");
}

/// (b)
async fn memory_per_stream() {
    let events = EventsConfig::new().max_streams(STREAMS as u32 * 2, STREAMS as u32 * 2);
    let service = TasksLayer::new(MemoryTaskStore::new())
        .events(events)
        .layer(inner::Inner {
            answers: inner::Answers::AtOnce,
        });
    let params = r#""name":"mcp-tasks/status","arguments":{},"cursor":null"#;
    // One first, so that what is built once is not counted.
    let first = service
        .clone()
        .oneshot(inner::request(
            0,
            "events/stream",
            params,
            Some("mcp-tasks/status"),
            false,
        ))
        .await
        .unwrap();
    tokio::task::yield_now().await;
    let before = heap();
    let mut open = Vec::with_capacity(STREAMS);
    for n in 0..STREAMS {
        let request = inner::request(
            n as u64 + 1,
            "events/stream",
            params,
            Some("mcp-tasks/status"),
            false,
        );
        open.push(service.clone().oneshot(request).await.unwrap());
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let per = (heap() - before) / STREAMS as isize;
    println!("(b) open events/stream through the layer: {per} B of heap each ({STREAMS})");
    drop((first, open));
}

/// A transport that answers 204 at once, counting.
#[derive(Clone, Default)]
struct AtOnce(Arc<AtomicUsize>);

impl Deliver for AtOnce {
    fn deliver(&self, _delivery: Delivery) -> DeliverFuture {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(async {
            Ok(Delivered {
                status: http::StatusCode::NO_CONTENT,
                body: Bytes::new(),
            })
        })
    }
}

/// A transport that POSTs over a fresh loopback connection, counting the
/// receiver's 204s.
#[derive(Clone)]
struct Loopback {
    address: std::net::SocketAddr,
    taken: Arc<AtomicUsize>,
}

impl Deliver for Loopback {
    fn deliver(&self, delivery: Delivery) -> DeliverFuture {
        let (address, taken) = (self.address, self.taken.clone());
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(address)
                .await
                .map_err(|_| DeliveryError::Connect)?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .map_err(|_| DeliveryError::Connect)?;
            tokio::spawn(connection);
            let mut request = http::Request::post(delivery.url.path())
                .header("host", "127.0.0.1")
                .body(http_body_util::Full::new(delivery.body))
                .expect("a request");
            request.headers_mut().extend(delivery.headers);
            let answer = sender
                .send_request(request)
                .await
                .map_err(|_| DeliveryError::Connect)?;
            let status = answer.status();
            let _ = answer.into_body().collect().await;
            if status.is_success() {
                taken.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Delivered {
                status,
                body: Bytes::new(),
            })
        })
    }
}

/// A receiver answering 204 to everything.
async fn receiver() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_request| async {
                    let mut answer = http::Response::new(Empty::<Bytes>::new());
                    *answer.status_mut() = http::StatusCode::NO_CONTENT;
                    Ok::<_, std::convert::Infallible>(answer)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    address
}

/// (c), (d): `subscriptions` subscriptions over `deliver`, whose count of
/// taken events is `taken`; events per second.
async fn deliveries(
    deliver: impl Deliver + Clone,
    taken: Arc<AtomicUsize>,
    subscriptions: usize,
) -> f64 {
    let store = MemoryTaskStore::new();
    let events = EventsConfig::new().webhooks(deliver, CallbackPolicy::new());
    let _service = TasksLayer::new(store.clone())
        .events(events)
        .layer(inner::Inner {
            answers: inner::Answers::AtOnce,
        });
    let cursor = store.status_events(None, None, 1).await.unwrap().cursor;
    for n in 0..subscriptions {
        let mut hook = hook(n, &cursor);
        hook.owner = None;
        store.put_hook(hook, u32::MAX, u32::MAX).await.unwrap();
    }
    let started = Instant::now();
    for _ in 0..TASKS {
        let task = NewTask {
            id: TaskId::generate().unwrap(),
            owner: None,
            created_at: Timestamp::now(),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: None,
            status_message: None,
            quota: Quota::default(),
            tool: None,
            rerun: None,
        };
        let id = task.id;
        store.create(task).await.unwrap();
        let result = serde_json::value::RawValue::from_string("{}".to_owned()).unwrap();
        store.complete(id, result).await.unwrap();
    }
    let want = 2 * TASKS * subscriptions;
    while taken.load(Ordering::Relaxed) < want {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    want as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        memory_per_hook().await;
        memory_per_stream().await;
        for subscriptions in [1, 10] {
            let at_once = AtOnce::default();
            let taken = at_once.0.clone();
            let rate = deliveries(at_once, taken, subscriptions).await;
            println!("({}) {subscriptions} subscription(s), a transport that answers at once: {rate:.0} deliveries/s", if subscriptions == 1 { "c" } else { "d" });
            let taken = Arc::new(AtomicUsize::new(0));
            let loopback = Loopback { address: receiver().await, taken: taken.clone() };
            let rate = deliveries(loopback, taken, subscriptions).await;
            println!("({}) {subscriptions} subscription(s), a loopback HTTP receiver, a connection each: {rate:.0} deliveries/s", if subscriptions == 1 { "c" } else { "d" });
        }
    });
}
