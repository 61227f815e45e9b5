//! The reaper: deletes expired rows in batches, fires their stop signals
//! and announces them, without anyone reading.
//!
//! It is a tokio task holding only a [`Weak`] to the store, so it ends with
//! the store. It sleeps until the earliest deadline in the file (read in the
//! same job that deleted the due rows), or until a `create` brings a nearer
//! one (the writer wakes it, see `shared`). Reads enforce every deadline
//! exactly in the meantime, so the reaper only reclaims space and stops work.

use std::sync::Weak;
use std::time::Duration;

use super::Inner;
use super::write::{self, REAP_BATCH};
use crate::task::Timestamp;

/// How long the reaper waits after a failed reap before it tries again.
const RETRY: Duration = Duration::from_secs(1);

/// Reaps until the store is gone.
pub(super) async fn reap(store: Weak<Inner>) {
    loop {
        let (wake, delay) = {
            let Some(inner) = store.upgrade() else { return };
            if inner.writer.is_closed() {
                return;
            }
            let reaped = inner.writer.run(write::reap).await;
            let delay = match reaped {
                // A full batch: more may be due at once.
                Ok((deleted, _)) if deleted == REAP_BATCH => Some(Duration::ZERO),
                Ok((_, next)) => next.map(|at| {
                    Duration::from_millis(at.saturating_sub(Timestamp::now().as_millis()))
                }),
                Err(error) => {
                    tracing::warn!(%error, "the SQLite task store could not reap expired tasks");
                    Some(RETRY)
                }
            };
            (inner.shared.wake.clone(), delay)
        };
        match delay {
            Some(delay) => {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
