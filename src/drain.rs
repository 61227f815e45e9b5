//! [`Drain`]: stopping a layer's background work cleanly.
//!
//! A parked call runs on a tokio task that no connection owns, so a process
//! that just exits leaves its tasks `working` until their TTL (memory store)
//! or until another instance's lease sweep (Redis). A drain ends them
//! properly:
//!
//! | Phase    | What happens                                                                 |
//! |----------|------------------------------------------------------------------------------|
//! | close    | no task starts: calls stay synchronous, 2025-11-25 `params.task` gets `-32000`; task methods are still answered |
//! | wait     | running tasks may finish, up to the grace                                    |
//! | abort    | what still runs is failed ("The server shut down before the task finished") and its inner call cancelled |
//! | release  | the store lets go of this instance (Redis: its lease is dropped, so another instance sweeps what is left at once) |
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

use std::sync::Arc;
use std::time::Duration;

use crate::background::Background;
use crate::store::TaskStore;

/// How long the failure writes of aborted tasks may take.
const ABORT_WAIT: Duration = Duration::from_secs(10);

/// A handle that drains one layer's background work; cheap to clone.
///
/// Made by [`TasksLayer::drain`](crate::TasksLayer::drain).
#[derive(Clone)]
pub struct Drain {
    background: Arc<Background>,
    store: Arc<dyn TaskStore>,
}

/// What a [`Drain::shutdown`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Whether everything finished within the grace.
    pub finished: bool,
    /// Background jobs (drivers, re-issues, deliveries) still running when
    /// the grace ran out, whose tasks were failed.
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
    pub(crate) fn new(background: Arc<Background>, store: Arc<dyn TaskStore>) -> Self {
        Self { background, store }
    }

    /// Stops starting tasks. Idempotent.
    pub fn close(&self) {
        self.background.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.background.is_closing()
    }

    /// How many background jobs are running now.
    pub fn running(&self) -> usize {
        self.background.tracked()
    }

    /// Closes, waits up to `grace` for the running tasks, fails the rest,
    /// and releases the store's hold of this instance.
    pub async fn shutdown(&self, grace: Duration) -> DrainReport {
        self.close();
        let finished = tokio::time::timeout(grace, self.background.idle())
            .await
            .is_ok();
        let mut report = DrainReport {
            finished,
            aborted: 0,
            settled: true,
        };
        if !finished {
            report.aborted = self.background.tracked();
            tracing::warn!(
                aborted = report.aborted,
                "drain grace over: failing the tasks still running"
            );
            self.background.abort();
            report.settled = tokio::time::timeout(ABORT_WAIT, self.background.idle())
                .await
                .is_ok();
        }
        if let Err(error) = self.store.release().await {
            tracing::warn!(%error, "the task store could not release this instance");
        }
        report
    }
}
