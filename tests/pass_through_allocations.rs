//! The pass-through path allocates nothing beyond the buffer it needs to
//! classify a POST: counted with a counting global allocator, the same
//! in-process inner service with and without the layer.

#[path = "../benches/support/inner.rs"]
mod inner;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt;
use mcp_tasks::{MemoryTaskStore, TasksLayer};
use tower::{Layer, ServiceExt};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by one `tools/list` round trip through `service`.
async fn allocations_of<S, B>(service: S) -> usize
where
    S: tower::Service<
            http::Request<http_body_util::Full<bytes::Bytes>>,
            Response = http::Response<B>,
        >,
    S::Error: std::fmt::Debug,
    B: http_body::Body<Data = bytes::Bytes>,
    B::Error: std::fmt::Debug,
{
    let request = inner::request(1, "tools/list", "", None, false);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let response = service.oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(body.starts_with(br#"{"jsonrpc":"2.0","id":1,"result""#));
    after - before
}

#[tokio::test(flavor = "current_thread")]
async fn a_forwarded_request_costs_at_most_the_classification_buffer() {
    let bare = inner::Inner {
        answers: inner::Answers::AtOnce,
    };
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(bare);
    // Warm up lazily initialised state on both paths.
    allocations_of(bare).await;
    allocations_of(layered.clone()).await;

    let without = allocations_of(bare).await;
    let with = allocations_of(layered.clone()).await;
    // Collecting the body into one buffer is the only extra allocation the
    // layer is allowed; everything else borrows from that buffer.
    assert!(
        with <= without + 1,
        "pass-through allocated {with} times with the layer, {without} without"
    );
}
