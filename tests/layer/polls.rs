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

use crate::support;

#[path = "../../benches/support/http_requests.rs"]
mod http_requests;
#[path = "../../benches/support/routes.rs"]
mod routes;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use http_requests::Requests;
use routes::router;
use support::wait::{BOUND, wait_until};
use tokio::sync::oneshot;
use tower::ServiceExt;

/// The bare and layered routes of each answer mode.
const ROUTES: [(&str, &str); 2] = [
    ("/bare/json", "/layered/json"),
    ("/bare/sse", "/layered/sse"),
];

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
        let request = Requests::new().fast_call(1).to_request(path);
        let response = router.oneshot(request).await.expect("infallible");
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
    // A wake left behind would poll the task before the scheduler idles.
    idle().await;
    let seen = polls.load(Ordering::SeqCst);
    next.send(()).expect("the task is waiting");
    task.await.expect("the task");
    seen
}

/// Returns once the runtime has run everything it had queued: on a
/// multi-threaded runtime, once its one worker is parked with nothing left
/// to run; on a current-thread one, where this future is polled by the
/// scheduler itself, after one turn (a yield comes back only once the
/// queued tasks have run).
async fn idle() {
    let runtime = tokio::runtime::Handle::current();
    if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
        tokio::task::yield_now().await;
        return;
    }
    let metrics = runtime.metrics();
    assert_eq!(metrics.num_workers(), 1, "one worker runs the counted task");
    wait_until("the worker parks with nothing to run", BOUND, || async {
        // Odd: parked.
        metrics.worker_park_unpark_count(0) % 2 == 1 && metrics.global_queue_depth() == 0
    })
    .await;
}

/// The most polls any of a few calls on `path` took (the first call of a
/// route also builds what later ones reuse). One call goes first, uncounted:
/// a layer's first declaring call also asks the inner server's
/// `server/discover`, once (`own_tasks`).
async fn most_polls(router: &axum::Router, path: &'static str) -> usize {
    polls_of_one_call(router.clone(), path).await;
    let mut most = 0;
    for _ in 0..4 {
        most = most.max(polls_of_one_call(router.clone(), path).await);
    }
    most
}

/// The most polls a call took on each route of `ROUTES`, bare and layered.
async fn polls_per_route() -> Vec<(&'static str, usize, usize)> {
    let router = router();
    let mut polls = Vec::new();
    for (bare, layered) in ROUTES {
        let bare_polls = most_polls(&router, bare).await;
        polls.push((layered, bare_polls, most_polls(&router, layered).await));
    }
    polls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_fast_call_costs_its_task_no_more_polls_than_the_bare_server() {
    for (route, bare, layered) in polls_per_route().await {
        assert!(bare >= 2, "{route}: the bare call took {bare} polls");
        assert!(
            layered <= bare,
            "{route}: the layered call took {layered} polls, the bare one {bare}"
        );
    }
}

/// On a current-thread runtime rmcp's handler runs two spawns away from the
/// call: the layer waits for the scheduler to go idle before it polls again
/// (`tokio::task::yield_now`), which leaves one wake behind. One poll more
/// than the bare server, and no more.
#[tokio::test(flavor = "current_thread")]
async fn on_one_thread_a_fast_call_costs_its_task_one_poll_more_at_most() {
    for (route, bare, layered) in polls_per_route().await {
        assert!(
            layered <= bare + 1,
            "{route}: the layered call took {layered} polls, the bare one {bare}"
        );
    }
}
