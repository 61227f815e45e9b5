//! Which shards' announcements this instance wants, so that its subscriber
//! listens only there: a quiet instance hears nothing.
//!
//! A shard is wanted while this instance holds a stop signal for one of
//! its tasks, or while someone here listens to one of its owners
//! ([`TaskStore::listen`](crate::TaskStore::listen), the status push hub)
//! or to all of them ([`TaskStore::listen_all`](crate::TaskStore::listen_all),
//! the operator's watch),
//! and for [`LINGER`] after the last of them, so that a shard whose tasks
//! come and go is not subscribed and unsubscribed for each.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// How long a shard stays subscribed after nothing here wants it.
pub(super) const LINGER: Duration = Duration::from_secs(30);

/// How long a `create` or a resuming `answer_input` waits for its shard's
/// channels to be subscribed (one round trip when they were not).
pub(super) const SUBSCRIBE_WAIT: Duration = Duration::from_secs(2);

/// The wants of every shard, and whether the subscriber serves them.
pub(super) struct Interest {
    shards: Mutex<Vec<Want>>,
    /// Per shard: whether its channels are subscribed now.
    subscribed: Vec<watch::Sender<bool>>,
    /// Wakes the subscriber when a shard becomes wanted.
    pub(super) wake: Notify,
}

#[derive(Clone, Copy, Default)]
struct Want {
    holders: usize,
    /// Of the holders, the listeners (who may have missed a change made
    /// before the subscription).
    listeners: usize,
    /// When `holders` last fell to zero.
    idle_since: Option<Instant>,
}

impl Interest {
    pub(super) fn new(shards: usize) -> Self {
        Self {
            shards: Mutex::new(vec![Want::default(); shards]),
            subscribed: (0..shards).map(|_| watch::channel(false).0).collect(),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Want>> {
        self.shards.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One more holder of `shard`.
    pub(super) fn add(&self, shard: usize) {
        self.add_as(shard..shard + 1, 0);
    }

    /// One more holder of each of `shards`, in one step: the subscriber
    /// plans with all of them or none.
    fn add_as(&self, shards: Range<usize>, listeners: usize) {
        let mut wants = self.lock();
        let mut wake = false;
        for shard in shards {
            let Some(want) = wants.get_mut(shard) else {
                continue;
            };
            want.holders += 1;
            want.listeners += listeners;
            want.idle_since = None;
            // Read under the lock that `plan` marks a leaving shard under,
            // so a holder never takes a shard being left for a subscribed one.
            wake |= want.holders == 1 && !self.is_subscribed(shard);
        }
        drop(wants);
        if wake {
            self.wake.notify_one();
        }
    }

    /// One holder of `shard` fewer.
    pub(super) fn remove(&self, shard: usize) {
        self.remove_as(shard..shard + 1, 0);
    }

    fn remove_as(&self, shards: Range<usize>, listeners: usize) {
        let mut wants = self.lock();
        for shard in shards {
            if let Some(want) = wants.get_mut(shard) {
                want.holders = want.holders.saturating_sub(1);
                want.listeners = want.listeners.saturating_sub(listeners);
                if want.holders == 0 {
                    want.idle_since = Some(Instant::now());
                }
            }
        }
    }

    /// Per shard, whether it is wanted at `now`.
    pub(super) fn wanted(&self, now: Instant) -> Vec<bool> {
        self.lock().iter().map(|want| wanted(want, now)).collect()
    }

    /// The shards to subscribe to (wanted, not subscribed) and to leave
    /// (subscribed, no longer wanted). A shard to leave is marked
    /// unsubscribed at once, under the lock `add` reads it under: a holder
    /// that comes meanwhile waits for the subscription and wakes the
    /// subscriber to join again.
    pub(super) fn plan(&self) -> (Vec<usize>, Vec<usize>) {
        let now = Instant::now();
        let shards = self.lock();
        let (mut join, mut leave) = (Vec::new(), Vec::new());
        for (shard, want) in shards.iter().enumerate() {
            match (wanted(want, now), self.is_subscribed(shard)) {
                (true, false) => join.push(shard),
                (false, true) => {
                    self.set_subscribed(shard, false);
                    leave.push(shard);
                }
                _ => {}
            }
        }
        (join, leave)
    }

    /// Whether someone listens to one of `shards`: after subscribing to
    /// them, the change feed says it may have missed something (a stop
    /// signal's holder waited for the subscription before its write).
    pub(super) fn listened(&self, shards: &[usize]) -> bool {
        let wants = self.lock();
        shards
            .iter()
            .any(|&shard| wants.get(shard).is_some_and(|want| want.listeners > 0))
    }

    /// Every subscription was lost with its connection.
    pub(super) fn clear(&self) {
        for sender in &self.subscribed {
            sender.send_replace(false);
        }
    }

    /// Whether `shard`'s channels are subscribed now.
    pub(super) fn is_subscribed(&self, shard: usize) -> bool {
        self.subscribed.get(shard).is_some_and(|s| *s.borrow())
    }

    /// Records what the subscriber did.
    pub(super) fn set_subscribed(&self, shard: usize, subscribed: bool) {
        if let Some(sender) = self.subscribed.get(shard) {
            sender.send_replace(subscribed);
        }
    }

    /// Waits until `shard` is subscribed, at most `timeout`: a task whose
    /// stop signal is about to be handed out must be heard from the start.
    /// Past the timeout the caller goes on; an end it misses is still
    /// caught by the refused late outcome.
    pub(super) async fn subscribed(&self, shard: usize, timeout: Duration) {
        let Some(sender) = self.subscribed.get(shard) else {
            return;
        };
        // The common case, without a receiver: subscribed already.
        if *sender.borrow() {
            return;
        }
        let mut subscribed = sender.subscribe();
        let waited = tokio::time::timeout(timeout, subscribed.wait_for(|&s| s)).await;
        if waited.is_err() {
            tracing::warn!(
                shard,
                "task store: the shard's channels were not subscribed in time"
            );
        }
    }
}

fn wanted(want: &Want, now: Instant) -> bool {
    want.holders > 0 || want.idle_since.is_some_and(|at| now - at < LINGER)
}

/// Keeps shards wanted while held: a listener of one of their owners, or
/// of all of them.
pub(super) struct Held {
    interest: Arc<Interest>,
    shards: Range<usize>,
}

impl Held {
    /// `shard`, for a listener of one of its owners.
    pub(super) fn new(interest: Arc<Interest>, shard: usize) -> Self {
        Self::of(interest, shard..shard + 1)
    }

    /// Every shard, for a listener of every owner.
    pub(super) fn all(interest: Arc<Interest>) -> Self {
        let count = interest.subscribed.len();
        Self::of(interest, 0..count)
    }

    fn of(interest: Arc<Interest>, shards: Range<usize>) -> Self {
        interest.add_as(shards.clone(), 1);
        Self { interest, shards }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.interest.remove_as(self.shards.clone(), 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_shard_is_wanted_while_held_and_for_the_linger_after() {
        let interest = Arc::new(Interest::new(2));
        assert_eq!(interest.wanted(Instant::now()), [false, false]);
        let held = Held::new(interest.clone(), 1);
        interest.add(1);
        assert_eq!(interest.wanted(Instant::now()), [false, true]);
        drop(held);
        interest.remove(1);
        tokio::time::advance(LINGER - Duration::from_secs(1)).await;
        assert_eq!(interest.wanted(Instant::now()), [false, true]);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(interest.wanted(Instant::now()), [false, false]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_listener_of_every_owner_holds_every_shard_as_a_listener() {
        let interest = Arc::new(Interest::new(3));
        let all = Held::all(interest.clone());
        assert_eq!(interest.wanted(Instant::now()), [true, true, true]);
        assert!(interest.listened(&[2]), "a new subscription says Missed");
        drop(all);
        assert!(!interest.listened(&[0, 1, 2]));
        tokio::time::advance(LINGER + Duration::from_secs(1)).await;
        assert_eq!(interest.wanted(Instant::now()), [false, false, false]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shard_being_left_reads_unsubscribed_at_once() {
        let interest = Interest::new(1);
        interest.add(0);
        interest.set_subscribed(0, true);
        interest.remove(0);
        tokio::time::advance(LINGER + Duration::from_secs(1)).await;
        let (join, leave) = interest.plan();
        assert!(join.is_empty());
        assert_eq!(leave, [0]);
        // A holder that comes before the UNSUBSCRIBE is sent waits for a
        // new subscription instead of trusting the old one.
        assert!(!interest.is_subscribed(0));
    }
}
