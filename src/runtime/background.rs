//! The background work of one layer: every tokio task the layer starts is
//! started here, so that a [`Drain`](crate::Drain) can stop parking, wait
//! for what runs, and fail what is left.
//!
//! | Kind       | What                                                        | A drain                     |
//! |------------|-------------------------------------------------------------|-----------------------------|
//! | tracked    | drivers, re-issues, answer deliveries, outcome writes       | waits for it, then aborts it |
//! | detached   | streams to clients (listen, session GET, `tasks/result`), the change-feed reader, input watchdogs | does not wait: it ends by its own signal (`closing`, `abort`, the client leaving, the task ending) |
//!
//! | Signal    | Fired by                        | Effect                                                   |
//! |-----------|---------------------------------|----------------------------------------------------------|
//! | `closing` | [`Drain::close`](crate::Drain::close) | no new task or call starts: a new `tools/call` gets `503` (the layer's dispatch) |
//! | `abort`   | the drain deadline              | every running driver fails its task ("the server shut down") and stops its call |
//! | `done`    | the end of [`Drain::shutdown`](crate::Drain::shutdown) | a `tasks/result` still waiting reads its task once more and ends, so the server's own graceful shutdown does not wait for it |

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// Tracked background work and the signals that stop it.
#[derive(Debug)]
pub(crate) struct Background {
    tracker: TaskTracker,
    /// Streams and watchdogs: counted, never waited for.
    detached: TaskTracker,
    closing: CancellationToken,
    abort: CancellationToken,
    done: CancellationToken,
    /// Inner calls that may run in the background at once.
    running: Arc<Semaphore>,
}

impl Background {
    /// Background work with at most `running` inner calls at once.
    pub(crate) fn new(running: usize) -> Self {
        Self {
            tracker: TaskTracker::new(),
            detached: TaskTracker::new(),
            closing: CancellationToken::new(),
            abort: CancellationToken::new(),
            done: CancellationToken::new(),
            running: Arc::new(Semaphore::new(running.min(Semaphore::MAX_PERMITS))),
        }
    }

    /// Runs `future` on a tokio task of its own, tracked, in the current
    /// span.
    pub(crate) fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_in(tracing::Span::current(), future)
    }

    /// Runs `future` on a tokio task of its own, in the current span,
    /// counted apart from the work a drain waits for: a stream to a client
    /// or a watchdog, which ends by its own signal (the client leaving, the
    /// drain's `closing` or `abort`), not by finishing a task.
    pub(crate) fn spawn_detached<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.detached
            .spawn(future.instrument(tracing::Span::current()))
    }

    /// Runs `future` on a tokio task of its own, tracked, in `span`.
    pub(crate) fn spawn_in<F>(
        &self,
        span: tracing::Span,
        future: F,
    ) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(future.instrument(span))
    }

    /// Whether new tasks are refused.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.is_cancelled()
    }

    /// Refuses new tasks from now on.
    pub(crate) fn close(&self) {
        self.closing.cancel();
        self.tracker.close();
    }

    /// Fired when the drain starts (new tasks refused, subscriptions end).
    pub(crate) fn closing_signal(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// Fired when what still runs must stop.
    pub(crate) fn abort_signal(&self) -> CancellationToken {
        self.abort.clone()
    }

    /// Stops what still runs.
    pub(crate) fn abort(&self) {
        self.abort.cancel();
    }

    /// Fired when the drain is over: streams that wait for a task end.
    pub(crate) fn done_signal(&self) -> CancellationToken {
        self.done.clone()
    }

    /// The drain is over.
    pub(crate) fn finish(&self) {
        self.done.cancel();
    }

    /// Resolves once every tracked tokio task has ended (after [`close`](Self::close)).
    pub(crate) async fn idle(&self) {
        self.tracker.wait().await;
    }

    /// How many tracked tokio tasks are running.
    pub(crate) fn tracked(&self) -> usize {
        self.tracker.len()
    }

    /// A place for one more background inner call, if one is free now.
    pub(crate) fn try_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.running.clone().try_acquire_owned().ok()
    }

    /// The semaphore of background inner calls, for work that waits its turn.
    pub(crate) fn slots(&self) -> Arc<Semaphore> {
        self.running.clone()
    }
}
