//! The pass-through path allocates nothing beyond the buffer it needs to
//! classify a POST, and nothing at all for a 2026-07-28 request of a method
//! the layer does not handle (read, checked against its `Mcp-Method`, and
//! forwarded from the one frame it came in): counted with a counting global
//! allocator, the same in-process inner service with and without the layer.
//! A body that is not what its `Mcp-Method` says never reaches the inner
//! server. With a call observer (`ToolStats`), a fast `tools/call` costs
//! the answer's watcher and nothing per record: a known tool's call is
//! recorded without allocating.
//!
//! The count is per thread: each test runs on a current-thread runtime, so
//! every allocation of a round trip happens on the test's own thread, while
//! the harness and the other tests allocate on theirs (a process-wide count
//! picked those up and failed at random).

#[path = "../benches/support/inner.rs"]
mod inner;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use http_body_util::{BodyExt, StreamBody};
use mcp_tasks::observe::ToolStats;
use mcp_tasks::observe::calls::{CallObserver, CallOutcome, CallRecord};
use mcp_tasks::{MemoryTaskStore, TasksLayer};
use tower::{Layer, ServiceExt};

struct Counting;

thread_local! {
    /// Allocations made on this thread; `const` and without a destructor,
    /// so reading it never allocates.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Allocations made so far on the calling thread.
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // During thread teardown the slot may be gone: such an allocation
        // belongs to no round trip.
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A 2026-07-28 `tools/list` (`modern`: with its routing headers, which
/// the layer checks against the body), or one of an older protocol
/// generation, without routing headers and `_meta`.
fn tools_list(modern: bool) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    if modern {
        return inner::request(1, "tools/list", "", None, false);
    }
    http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
        )))
        .expect("valid request")
}

/// Allocations made by one `tools/list` round trip through `service`.
async fn allocations_of<S, B>(service: S, modern: bool) -> usize
where
    S: tower::Service<
            http::Request<http_body_util::Full<bytes::Bytes>>,
            Response = http::Response<B>,
        >,
    S::Error: std::fmt::Debug,
    B: http_body::Body<Data = bytes::Bytes>,
    B::Error: std::fmt::Debug,
{
    let request = tools_list(modern);
    let before = allocations();
    let response = service.oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let after = allocations();
    assert!(body.starts_with(br#"{"jsonrpc":"2.0","id":1,"result""#));
    after - before
}

/// Allocations of one `tools/list` round trip without and with the layer,
/// over the same inner service, after a warm-up of both paths.
async fn without_and_with(modern: bool) -> (usize, usize) {
    let bare = inner::Inner {
        answers: inner::Answers::AtOnce,
    };
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(bare);
    allocations_of(bare, modern).await;
    allocations_of(layered.clone(), modern).await;
    (
        allocations_of(bare, modern).await,
        allocations_of(layered, modern).await,
    )
}

#[tokio::test(flavor = "current_thread")]
async fn a_forwarded_request_costs_at_most_the_classification_buffer() {
    let (without, with) = without_and_with(false).await;
    // The layer reads the body to route it: collecting it into one buffer
    // is the only extra allocation the layer is allowed (none for one
    // frame); everything else borrows from that buffer.
    assert!(
        with <= without + 1,
        "pass-through allocated {with} times with the layer, {without} without"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_2026_request_of_a_method_the_layer_does_not_handle_allocates_nothing() {
    let (without, with) = without_and_with(true).await;
    assert_eq!(
        with, without,
        "a 2026-07-28 tools/list allocated {with} times with the layer, {without} without"
    );
}

/// A request whose body never ends: its head, then nothing.
fn unfinished(method: &str) -> (http::Request<StreamBody<Chunks>>, Sender) {
    let (sender, receiver) = tokio::sync::mpsc::channel(1);
    let body = StreamBody::new(chunks_from(receiver));
    let request = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body)
        .expect("valid request");
    (request, sender)
}

type Frame = Result<http_body::Frame<bytes::Bytes>, std::convert::Infallible>;
type Sender = tokio::sync::mpsc::Sender<Frame>;
type Chunks = futures_util::stream::BoxStream<'static, Frame>;

fn chunks_from(mut receiver: tokio::sync::mpsc::Receiver<Frame>) -> Chunks {
    Box::pin(futures_util::stream::poll_fn(move |cx| {
        receiver.poll_recv(cx)
    }))
}

/// A 2026-07-28 body whose method is not what its `Mcp-Method` says never
/// reaches the inner server, here one that checks nothing (a `tools/call`
/// sent as `resources/read` would skip the layer's policies, quotas and
/// time limits, and run): the layer reads it first and answers `-32020`.
/// The body is read whole before the inner server sees any of it.
#[tokio::test(flavor = "current_thread")]
async fn a_body_that_is_not_what_its_mcp_method_says_never_reaches_the_inner_server() {
    // An inner service that checks nothing and counts the requests it gets.
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = reached.clone();
    let inner = tower::service_fn(move |_request| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let mut response = http::Response::new(http_body_util::Full::new(
                bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            ));
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(inner);
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

    let (request, open) = unfinished("resources/read");
    let answer = tokio::spawn(layered.clone().oneshot(request));
    open.send(Ok(http_body::Frame::data(bytes::Bytes::from_static(call))))
        .await
        .unwrap();
    // Nothing reaches the inner server while the body is open.
    tokio::task::yield_now().await;
    assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0);
    drop(open);
    let response = answer.await.unwrap().unwrap();
    assert_eq!(response.status(), 400);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], -32020, "{error}");
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the call reached the inner server"
    );

    // A body that is what its header says goes on.
    let read = br#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"a://b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (request, open) = unfinished("resources/read");
    let answer = tokio::spawn(layered.clone().oneshot(request));
    open.send(Ok(http_body::Frame::data(bytes::Bytes::from_static(read))))
        .await
        .unwrap();
    drop(open);
    let response = answer.await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A declaring client's fast `tools/call`, as the benchmarks send it.
fn fast_call() -> http::Request<http_body_util::Full<bytes::Bytes>> {
    inner::request(
        2,
        "tools/call",
        r#""name":"job","arguments":{}"#,
        Some("job"),
        true,
    )
}

/// Allocations of one fast `tools/call` round trip through `service`.
async fn call_allocations<S>(service: S) -> usize
where
    S: tower::Service<
            http::Request<http_body_util::Full<bytes::Bytes>>,
            Response = http::Response<mcp_tasks::ResponseBody<http_body_util::Full<bytes::Bytes>>>,
        >,
    S::Error: std::fmt::Debug,
{
    let before = allocations();
    let response = service.oneshot(fast_call()).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let after = allocations();
    assert!(body.starts_with(br#"{"jsonrpc":"2.0","id":2,"result""#));
    after - before
}

#[tokio::test(flavor = "current_thread")]
async fn observing_calls_costs_a_fast_call_the_answers_watcher_and_nothing_per_record() {
    let bare = inner::Inner {
        answers: inner::Answers::AtOnce,
    };
    let plain = TasksLayer::new(MemoryTaskStore::new()).layer(bare);
    let stats = ToolStats::new();
    let observed = TasksLayer::new(MemoryTaskStore::new())
        .observe_calls(stats.clone())
        .layer(bare);
    // Warm-up: the tool's window in the stats, its slot's histogram.
    call_allocations(plain.clone()).await;
    call_allocations(observed.clone()).await;
    let without = call_allocations(plain).await;
    let with = call_allocations(observed).await;
    assert_eq!(stats.snapshot()[0].total.calls, 2);
    // The answer's watcher, boxed as a body (39 against 38 when written);
    // the record itself allocates nothing.
    assert!(
        with <= without + 1,
        "a fast call allocated {with} times observed, {without} without"
    );
}

#[test]
fn tool_stats_record_a_call_of_a_known_tool_without_allocating() {
    // One slot of an hour: no new period while the test runs.
    let stats = ToolStats::with_window(Duration::from_secs(3600), 1);
    let call = CallRecord::new(
        "search",
        Duration::from_millis(3),
        true,
        CallOutcome::Failed,
    );
    // The first call makes the tool's window and its slot's histogram.
    stats.finished(&call);
    let before = allocations();
    for _ in 0..1000 {
        stats.finished(&call);
    }
    assert_eq!(allocations() - before, 0);
    assert_eq!(stats.snapshot()[0].total.calls, 1001);
}
