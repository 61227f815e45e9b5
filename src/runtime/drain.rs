//! [`Drain`]: stopping a layer's background work cleanly.
//!
//! A parked call runs on a tokio task that no connection owns, so a process
//! that just exits leaves its tasks `working` until their TTL (memory store)
//! or until another instance's lease sweep (Redis). A drain ends them
//! properly:
//!
//! | Phase    | What happens                                                                 |
//! |----------|------------------------------------------------------------------------------|
//! | close    | no task starts, nor any call: a new `tools/call` gets `503` with `Retry-After` and `-32000` (a call the server might not finish would leave its client a stream that just ends; a load balancer sends the retry elsewhere); calls and tasks already running go on; task methods are still answered |
//! | wait     | running tasks may finish, up to the grace                                    |
//! | abort    | what still runs is failed ("The server shut down before the task finished") and its inner call cancelled; with a store that does not outlive the process (the memory store), so is a task waiting for its client's input |
//! | release  | the store lets go of this instance (Redis: its lease is dropped, so another instance sweeps what is left at once) |
//! | linger   | when any task was running or waiting as the drain began: twice the poll interval the layer suggests (1 s: so 2 s; at most 10 s), so that a client polling as suggested reads the task's end before the server goes |
//!
//! [`Drain::shutdown`] returns after at most the grace, 10 s for the
//! failure writes, and the linger.
//!
//! The release is the store's, not the layer's: drain once per store, after
//! every layer over it has drained (with Redis, the lease belongs to the
//! `RedisTaskStore` value, whatever layers share it).
//!
//! Keep serving HTTP while the drain runs, so that clients can still read
//! their tasks; stop the server afterwards:
//!
//! ```no_run
//! use std::time::Duration;
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//!
//! # async fn serve(listener: tokio::net::TcpListener, app: axum::Router) {
//! let layer = TasksLayer::new(MemoryTaskStore::new());
//! let drain = layer.drain();
//! // … build `app` with `layer` …
//! axum::serve(listener, app)
//!     .with_graceful_shutdown(async move {
//!         let _ = tokio::signal::ctrl_c().await;
//!         let report = drain.shutdown(Duration::from_secs(30)).await;
//!         eprintln!("drained: {report:?}");
//!     })
//!     .await
//!     .unwrap();
//! # }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::observe::{Waiting, events};
use crate::runtime::background::Background;
use crate::store::TaskStore;
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR};

/// How long the failure writes of the tasks a drain fails may take, in all.
const ABORT_WAIT: Duration = Duration::from_secs(10);
/// The longest linger, whatever the poll interval.
const MAX_LINGER: Duration = Duration::from_secs(10);
/// The linger when the layer suggests no poll interval.
const DEFAULT_LINGER: Duration = Duration::from_secs(2);

/// A handle that drains one layer's background work; cheap to clone.
///
/// Made by [`Tasks::drain`](crate::Tasks::drain), or by
/// [`TasksLayer::drain`](crate::TasksLayer::drain) before the layer made its
/// first service: such a handle drains the state that service is built
/// with, and until then has nothing to wait for (a [`close`](Self::close)
/// or [`shutdown`](Self::shutdown) meanwhile makes that state start
/// closed).
#[derive(Clone)]
pub struct Drain {
    slot: Arc<Slot>,
}

/// What a drain works on, once the state it drains is built.
struct Slot {
    target: OnceLock<Target>,
    /// Closed before the state was built: it starts closed.
    closed: AtomicBool,
    /// The store, released by a shutdown even before the state was built.
    store: Arc<dyn TaskStore>,
}

#[derive(Clone)]
struct Target {
    background: Arc<Background>,
    store: Arc<dyn TaskStore>,
    /// The tasks waiting for input on this instance.
    waiting: Arc<Waiting>,
    /// How long the drain keeps going once the tasks ended.
    linger: Duration,
}

/// What a [`Drain::shutdown`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Whether everything finished within the grace.
    pub finished: bool,
    /// Background jobs (drivers, re-issues, deliveries) still running when
    /// the grace ran out, whose tasks were failed, and tasks failed while
    /// they waited for input (a store that does not outlive the process).
    pub aborted: usize,
    /// Whether the failure writes of those were all done in time.
    pub settled: bool,
}

impl std::fmt::Debug for Drain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drain")
            .field("closed", &self.is_closed())
            .field("running", &self.running())
            .finish()
    }
}

impl Drain {
    /// The drain of `background` over `store`; `poll`: the poll interval
    /// the layer suggests, which sets the linger.
    pub(crate) fn new(
        background: Arc<Background>,
        store: Arc<dyn TaskStore>,
        waiting: Arc<Waiting>,
        poll: Option<Duration>,
    ) -> Self {
        let linger = poll.map_or(DEFAULT_LINGER, |poll| {
            poll.saturating_mul(2).min(MAX_LINGER)
        });
        let drain = Self::pending(store.clone());
        let target = Target {
            background,
            store,
            waiting,
            linger,
        };
        let _ = drain.slot.target.set(target);
        drain
    }

    /// A drain of state not built yet over `store`; [`bind`](Self::bind)
    /// ties it.
    pub(crate) fn pending(store: Arc<dyn TaskStore>) -> Self {
        Self {
            slot: Arc::new(Slot {
                target: OnceLock::new(),
                closed: AtomicBool::new(false),
                store,
            }),
        }
    }

    /// Ties this pending drain to what `built` drains (once; later calls
    /// change nothing). Closed already: that state is closed now.
    pub(crate) fn bind(&self, built: &Drain) {
        let Some(target) = built.slot.target.get() else {
            return;
        };
        let _ = self.slot.target.set(target.clone());
        if self.slot.closed.load(Ordering::SeqCst) {
            self.close();
        }
    }

    /// Stops starting tasks. Idempotent.
    pub fn close(&self) {
        self.slot.closed.store(true, Ordering::SeqCst);
        if let Some(target) = self.slot.target.get() {
            target.background.close();
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.slot.target.get().map_or_else(
            || self.slot.closed.load(Ordering::SeqCst),
            |target| target.background.is_closing(),
        )
    }

    /// How many background jobs are running now.
    pub fn running(&self) -> usize {
        self.slot
            .target
            .get()
            .map_or(0, |target| target.background.tracked())
    }

    /// Closes, waits up to `grace` for the running tasks, fails the rest,
    /// releases the store's hold of this instance, and lingers when there
    /// were tasks (see the module docs). Keep serving HTTP until it returns.
    /// Before the state it drains was built, nothing ran: it closes and
    /// releases the store.
    pub async fn shutdown(&self, grace: Duration) -> DrainReport {
        self.close();
        let Some(target) = self.slot.target.get() else {
            release(&*self.slot.store).await;
            return DrainReport {
                finished: true,
                aborted: 0,
                settled: true,
            };
        };
        target.shutdown(grace).await
    }
}

impl Target {
    async fn shutdown(&self, grace: Duration) -> DrainReport {
        let busy = self.background.tracked() > 0 || !self.waiting.ids().is_empty();
        let finished = tokio::time::timeout(grace, self.background.idle())
            .await
            .is_ok();
        let mut report = DrainReport {
            finished,
            aborted: 0,
            settled: true,
        };
        // One budget for every failure write.
        let writes = tokio::time::Instant::now() + ABORT_WAIT;
        if !finished {
            report.aborted = self.background.tracked();
            tracing::warn!(
                aborted = report.aborted,
                "drain grace over: failing the tasks still running"
            );
            self.background.abort();
            report.settled = tokio::time::timeout_at(writes, self.background.idle())
                .await
                .is_ok();
        }
        let (failed, written) = tokio::time::timeout_at(writes, self.fail_waiting())
            .await
            .unwrap_or((0, false));
        report.aborted += failed;
        report.settled &= written;
        release(&*self.store).await;
        if busy {
            tracing::info!(linger = ?self.linger, "drained: answering polls a little longer");
            tokio::time::sleep(self.linger).await;
        }
        self.background.finish();
        report
    }

    /// Fails the tasks waiting for input here when the store does not
    /// outlive the process: no answer could reach them after it. How many,
    /// and whether every write took.
    async fn fail_waiting(&self) -> (usize, bool) {
        if self.store.keeps_reruns() {
            return (0, true);
        }
        let message = "The server shut down while the task waited for input";
        let error = ErrorObject::new(INTERNAL_ERROR, message).to_raw();
        let (mut failed, mut written) = (0, true);
        for id in self.waiting.ids() {
            // Resumed meanwhile (its answers came): it runs, and is aborted
            // or finishes as any running task.
            if self.waiting.take(id).is_none() {
                continue;
            }
            match self.store.fail(id, error.clone()).await {
                Ok(()) => {
                    failed += 1;
                    events::stopped(id, "drain", message);
                }
                Err(error) => {
                    written = false;
                    tracing::warn!(task = %id, %error, "a waiting task could not be failed");
                }
            }
        }
        (failed, written)
    }
}

/// Lets the store go of this instance; a failure is logged.
async fn release(store: &dyn TaskStore) {
    if let Err(error) = store.release().await {
        tracing::warn!(%error, "the task store could not release this instance");
    }
}
