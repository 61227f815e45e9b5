//! The pass-through path allocates nothing beyond the buffer it needs to
//! classify a POST, and nothing at all for a 2026-07-28 request that its
//! `Mcp-Method` header routes past the layer: counted with a counting global
//! allocator, the same in-process inner service with and without the layer.
//! Such a request also reaches the inner server before its body has ended.
//!
//! The count is per thread: each test runs on a current-thread runtime, so
//! every allocation of a round trip happens on the test's own thread, while
//! the harness and the other tests allocate on theirs (a process-wide count
//! picked those up and failed at random).

#[path = "../benches/support/inner.rs"]
mod inner;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use http_body_util::{BodyExt, StreamBody};
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

/// A 2026-07-28 `tools/list` (`routed`: the layer can route it by its
/// `Mcp-Method` header), or one of an older protocol generation, without
/// routing headers and `_meta`, which the layer must read to route.
fn tools_list(routed: bool) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    if routed {
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
async fn allocations_of<S, B>(service: S, routed: bool) -> usize
where
    S: tower::Service<
            http::Request<http_body_util::Full<bytes::Bytes>>,
            Response = http::Response<B>,
        >,
    S::Error: std::fmt::Debug,
    B: http_body::Body<Data = bytes::Bytes>,
    B::Error: std::fmt::Debug,
{
    let request = tools_list(routed);
    let before = allocations();
    let response = service.oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let after = allocations();
    assert!(body.starts_with(br#"{"jsonrpc":"2.0","id":1,"result""#));
    after - before
}

/// Allocations of one `tools/list` round trip without and with the layer,
/// over the same inner service, after a warm-up of both paths.
async fn without_and_with(routed: bool) -> (usize, usize) {
    let bare = inner::Inner {
        answers: inner::Answers::AtOnce,
    };
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(bare);
    allocations_of(bare, routed).await;
    allocations_of(layered.clone(), routed).await;
    (
        allocations_of(bare, routed).await,
        allocations_of(layered, routed).await,
    )
}

#[tokio::test(flavor = "current_thread")]
async fn a_forwarded_request_costs_at_most_the_classification_buffer() {
    let (without, with) = without_and_with(false).await;
    // Without routing headers the layer reads the body to route it: collecting
    // it into one buffer is the only extra allocation the layer is allowed;
    // everything else borrows from that buffer.
    assert!(
        with <= without + 1,
        "pass-through allocated {with} times with the layer, {without} without"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_routed_past_the_layer_by_its_headers_allocates_nothing() {
    let (without, with) = without_and_with(true).await;
    assert_eq!(
        with, without,
        "a request routed by Mcp-Method allocated {with} times with the layer, {without} without"
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

#[tokio::test(flavor = "current_thread")]
async fn a_request_routed_past_the_layer_reaches_the_inner_server_before_its_body_ends() {
    // The inner service answers from the head alone.
    let inner = tower::service_fn(|request: http::Request<_>| async move {
        let method = request.headers()["mcp-method"].clone();
        Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(
            bytes::Bytes::copy_from_slice(method.as_bytes()),
        )))
    });
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(inner);
    let wait = std::time::Duration::from_secs(5);

    let (request, _open) = unfinished("tools/list");
    let response = tokio::time::timeout(wait, layered.clone().oneshot(request))
        .await
        .expect("the layer waited for the body of a request it does not handle")
        .unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"tools/list");

    // A method the layer handles is read whole first.
    let (request, open) = unfinished("tools/call");
    let pending = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        layered.clone().oneshot(request),
    )
    .await;
    assert!(
        pending.is_err(),
        "a tools/call was routed before its body was read"
    );
    drop(open);
}
