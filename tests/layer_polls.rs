//! A fast `tools/call` through the layer costs the task that serves it no
//! more polls than the bare rmcp fixture does.
//!
//! The task here stands for a server's connection task: it sends one call,
//! reads the answer whole, then waits for more (the next request). Every
//! poll of it is a poll of the whole connection's future. The layer races a
//! fast call with one extra turn of the scheduler before any timer; that
//! turn must not leave a wake behind that polls the task again, for nothing,
//! once the answer has gone (on a multi-threaded runtime; see the last test
//! for a current-thread one).

mod support;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use mcp_tasks::{MemoryTaskStore, TasksLayer};
use serde_json::json;
use support::fixture::{FixtureMode, FixtureOptions, Probe, service_with};
use support::in_process::{post, tasks_declared};
use tokio::sync::oneshot;
use tower::{Layer, ServiceExt};

/// The bare and layered fixture, answering JSON or SSE.
fn router() -> axum::Router {
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let fixture = |json: bool| {
        let options = FixtureOptions::new(FixtureMode::Stateless).json_response(json);
        service_with(options, Probe::new())
    };
    axum::Router::new()
        .route_service("/bare/json", fixture(true))
        .route_service("/bare/sse", fixture(false))
        .route_service("/layered/json", layer.layer(fixture(true)))
        .route_service("/layered/sse", layer.layer(fixture(false)))
}

/// A fast `greet` from a client that declares the tasks extension.
fn fast_call(path: &str) -> Request<Body> {
    let params = json!({"name": "greet", "arguments": {"name": "polls"}});
    let (mut parts, body) =
        post("tools/call", params, Some("greet"), tasks_declared()).into_parts();
    parts.uri = path.parse().expect("path");
    parts.headers.insert(
        http::header::HOST,
        http::HeaderValue::from_static("127.0.0.1"),
    );
    parts.headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json, text/event-stream"),
    );
    Request::from_parts(parts, Body::new(body))
}

/// `future`, counting its polls in `polls`.
fn counted<F: Future + Send + 'static>(
    polls: Arc<AtomicUsize>,
    future: F,
) -> impl Future<Output = F::Output> + Send + 'static {
    let mut future = Box::pin(future);
    std::future::poll_fn(move |cx| {
        polls.fetch_add(1, Ordering::SeqCst);
        future.as_mut().poll(cx)
    })
}

/// The polls of a task that makes one call on `path`, reads the answer, and
/// then waits until the scheduler has gone idle.
async fn polls_of_one_call(router: axum::Router, path: &'static str) -> usize {
    let polls = Arc::new(AtomicUsize::new(0));
    let (answered, answer) = oneshot::channel();
    let (next, wait_for_next) = oneshot::channel::<()>();
    let task = tokio::spawn(counted(polls.clone(), async move {
        let response = router.oneshot(fast_call(path)).await.expect("infallible");
        let body = response.into_body().collect().await.expect("body");
        let _ = answered.send(body.to_bytes());
        let _ = wait_for_next.await;
    }));
    let body = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .expect("no answer within 10 s")
        .expect("the task ended without an answer");
    assert!(
        body.windows(9).any(|window| window == br#""result":"#),
        "{path}: {}",
        String::from_utf8_lossy(&body)
    );
    // Idle now: the worker parks, and a wake left behind would poll the task.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let seen = polls.load(Ordering::SeqCst);
    next.send(()).expect("the task is waiting");
    task.await.expect("the task");
    seen
}

/// The most polls any of a few calls on `path` took (the first call of a
/// route also builds what later ones reuse).
async fn most_polls(router: &axum::Router, path: &'static str) -> usize {
    let mut most = 0;
    for _ in 0..4 {
        most = most.max(polls_of_one_call(router.clone(), path).await);
    }
    most
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_fast_call_costs_its_task_no_more_polls_than_the_bare_server() {
    let router = router();
    for answers in ["json", "sse"] {
        let (bare, layered) = match answers {
            "json" => ("/bare/json", "/layered/json"),
            _ => ("/bare/sse", "/layered/sse"),
        };
        let bare = most_polls(&router, bare).await;
        let layered = most_polls(&router, layered).await;
        assert!(bare >= 2, "{answers}: the bare call took {bare} polls");
        assert!(
            layered <= bare,
            "{answers}: the layered call took {layered} polls, the bare one {bare}"
        );
    }
}

/// On a current-thread runtime rmcp's handler runs two spawns away from the
/// call: the layer waits for the scheduler to go idle before it polls again
/// (`tokio::task::yield_now`), which leaves one wake behind. One poll more
/// than the bare server, and no more.
#[tokio::test(flavor = "current_thread")]
async fn on_one_thread_a_fast_call_costs_its_task_one_poll_more_at_most() {
    let router = router();
    for (bare, layered) in [
        ("/bare/json", "/layered/json"),
        ("/bare/sse", "/layered/sse"),
    ] {
        let bare_polls = most_polls(&router, bare).await;
        let layered_polls = most_polls(&router, layered).await;
        assert!(
            layered_polls <= bare_polls + 1,
            "{layered}: {layered_polls} polls, {bare}: {bare_polls}"
        );
    }
}
