//! The re-runs a layer took from its store and that wait for a running
//! slot: counted for the operator, apart from the re-runs themselves so
//! that the slot a call waits for (`work::Slot`) can
//! carry the mark.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The re-runs a layer took from its store whose call waits for a running
/// slot (`max_running`), for
/// [`Admin::reruns_pending`](crate::Admin::reruns_pending). One count serves
/// a layer, its clones, what they build and their `Admin`s.
#[derive(Debug, Default)]
pub(crate) struct Queued(AtomicUsize);

impl Queued {
    /// How many wait now.
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// One more waits, until the returned mark drops.
    pub(crate) fn enter(self: &Arc<Self>) -> InQueue {
        self.0.fetch_add(1, Ordering::Relaxed);
        InQueue(self.clone())
    }
}

/// A re-run counted in [`Queued`] while it lives.
pub(crate) struct InQueue(Arc<Queued>);

impl Drop for InQueue {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}
