//! What the writer thread and the async side share: the stop signals this
//! process holds, the change feed, and the reaper's next deadline.
//!
//! | Rule                                                          | Why                                                              |
//! |---------------------------------------------------------------|------------------------------------------------------------------|
//! | effects are applied only after their transaction committed    | a rolled-back write neither stops work nor announces a change    |
//! | effects are applied on the writer thread, in commit order     | a cancel never fires before the create that holds its token      |
//! | a token is held from `create` (or a resumed round) to the end | `answer_input` hands out the very token `cancel` fires           |
//! | tokens of terminal or removed tasks are dropped               | the map holds only tasks that may still be stopped               |
//!
//! The map only ever gains or loses whole entries, so a panic under its lock
//! cannot leave it half-written: a poisoned lock is recovered (and said so
//! here) rather than losing the stop signals of every task.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::store::{CHANGES, TaskChange};
use crate::task::TaskId;

/// A consequence of a committed write, for this process.
#[derive(Debug)]
pub(super) enum Effect {
    /// A new task: hold its stop signal; `deadline` (ms) may wake the reaper.
    Hold(u128, CancellationToken, Option<u64>),
    /// The task changed in a way a subscriber sees.
    Changed(u128),
    /// The task is now completed or failed: forget its signal, announce.
    Finished(u128),
    /// The task was cancelled, expired or deleted: fire its signal, forget
    /// it, announce.
    Stopped(u128),
}

/// Shared by the store and its writer thread.
pub(super) struct Shared {
    stops: Mutex<HashMap<u128, CancellationToken>>,
    changes: broadcast::Sender<TaskChange>,
    /// The earliest deadline the reaper sleeps until (ms; `u64::MAX`: none).
    next_due: AtomicU64,
    /// Wakes the reaper: a nearer deadline, or the store went away.
    pub(super) wake: Arc<Notify>,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            stops: Mutex::default(),
            changes: broadcast::channel(CHANGES).0,
            next_due: AtomicU64::new(u64::MAX),
            wake: Arc::default(),
        }
    }
}

impl Shared {
    fn stops(&self) -> MutexGuard<'_, HashMap<u128, CancellationToken>> {
        // Whole entries only: see the module docs.
        self.stops.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The stop signal of `id`, held from now on if it was not (a task
    /// created by an earlier process, resumed by this one).
    pub(super) fn hand_out(&self, id: u128) -> CancellationToken {
        self.stops().entry(id).or_default().clone()
    }

    /// How many stop signals this process holds.
    pub(super) fn held(&self) -> usize {
        self.stops().len()
    }

    /// A receiver of the change feed.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<TaskChange> {
        self.changes.subscribe()
    }

    /// Records the reaper's next deadline (ms; `u64::MAX`: none).
    pub(super) fn set_next_due(&self, at: u64) {
        self.next_due.store(at, Ordering::Release);
    }

    /// Applies the effects of a committed transaction, in order.
    pub(super) fn apply(&self, effects: Vec<Effect>) {
        for effect in effects {
            let changed = match effect {
                Effect::Hold(id, stop, deadline) => {
                    self.stops().insert(id, stop);
                    if let Some(at) = deadline
                        && at < self.next_due.fetch_min(at, Ordering::AcqRel)
                    {
                        self.wake.notify_one();
                    }
                    // A new task is a change a console sees.
                    Some(id)
                }
                Effect::Changed(id) => Some(id),
                Effect::Finished(id) => {
                    self.stops().remove(&id);
                    Some(id)
                }
                Effect::Stopped(id) => {
                    if let Some(stop) = self.stops().remove(&id) {
                        stop.cancel();
                    }
                    Some(id)
                }
            };
            if let Some(id) = changed {
                // No receiver is not an error: nobody listens.
                let _ = self
                    .changes
                    .send(TaskChange::Changed(TaskId::from_u128(id)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_task_fires_the_token_it_was_created_with_and_is_forgotten() {
        let shared = Shared::default();
        let mut feed = shared.subscribe();
        let stop = CancellationToken::new();
        shared.apply(vec![Effect::Hold(7, stop.clone(), None)]);
        assert!(!shared.hand_out(7).is_cancelled());
        shared.apply(vec![Effect::Stopped(7)]);
        assert!(stop.is_cancelled());
        assert_eq!(shared.held(), 0);
        assert_eq!(
            feed.try_recv().ok(),
            Some(TaskChange::Changed(TaskId::from_u128(7)))
        );
    }

    #[test]
    fn a_finished_task_is_forgotten_without_firing_its_token() {
        let shared = Shared::default();
        let stop = CancellationToken::new();
        shared.apply(vec![
            Effect::Hold(1, stop.clone(), None),
            Effect::Finished(1),
        ]);
        assert!(!stop.is_cancelled());
        assert_eq!(shared.held(), 0);
    }

    #[test]
    fn only_a_nearer_deadline_moves_the_reapers_next_wake() {
        let shared = Shared::default();
        shared.set_next_due(1_000);
        shared.apply(vec![Effect::Hold(1, CancellationToken::new(), Some(2_000))]);
        assert_eq!(shared.next_due.load(Ordering::Acquire), 1_000);
        shared.apply(vec![Effect::Hold(2, CancellationToken::new(), Some(500))]);
        assert_eq!(shared.next_due.load(Ordering::Acquire), 500);
    }
}
