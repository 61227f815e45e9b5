//! The one backoff: waits that double from a first one up to a longest one.
//!
//! Every retry loop of the layer and its stores waits through a [`Backoff`]
//! (the engine sits above the stores, so this lives below both):
//!
//! | Who retries                                   | First  | Longest | Reset                 |
//! |-----------------------------------------------|--------|---------|-----------------------|
//! | `runtime/settle.rs`, a write the store refused | 50 ms  | 5 s     | never (gives up at expiry) |
//! | `runtime/drive.rs`, an inner server shedding load | 10 ms | 640 ms | by the attempt count  |
//! | `runtime/drive.rs`, an inner server not reached | 250 ms | 10 s   | by the attempt count  |
//! | `legacy/answer.rs`, failing a task whose answer was lost | 100 ms | none (7 tries) | never |
//! | `store/redis`, resubscribing after a lost subscription | 100 ms | 5 s | once subscribed |
//! | `store/redis`, a step on a Redis Cluster that is not ready | 100 ms | 2 s | never (a deadline) |
//! | `modern/events/deliver.rs`, a webhook receiver that did not take an event | `EventsConfig::retries` (1 s) | (5 min) | each event |
//!
//! Doubling saturates: no wait overflows, however many attempts.

use std::time::Duration;

/// Waits doubling from `first` up to `longest`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    first: Duration,
    longest: Duration,
    next: Duration,
}

impl Backoff {
    /// Waits from `first`, doubling up to `longest`.
    pub(crate) const fn new(first: Duration, longest: Duration) -> Self {
        Self {
            first,
            longest,
            next: first,
        }
    }

    /// The wait [`next`](Self::next) gives now.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn peek(&self) -> Duration {
        self.next
    }

    /// The wait before the next try; the one after is twice as long, up to
    /// the longest.
    pub(crate) fn next(&mut self) -> Duration {
        let wait = self.next;
        self.next = wait.saturating_mul(2).min(self.longest);
        wait
    }

    /// The wait before try `n` after the first failure (`0` waits `first`),
    /// for a caller that counts its tries itself.
    pub(crate) fn nth(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n).unwrap_or(u32::MAX);
        self.first.saturating_mul(factor).min(self.longest)
    }

    /// Starts again from the first wait.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn reset(&mut self) {
        self.next = self.first;
    }

    /// Sleeps the next wait.
    pub(crate) async fn sleep(&mut self) {
        tokio::time::sleep(self.next()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn waits_double_up_to_the_longest_and_start_again_after_a_reset() {
        let mut backoff = Backoff::new(100 * MS, 500 * MS);
        let waits: Vec<_> = (0..5).map(|_| backoff.next()).collect();
        assert_eq!(waits, [100 * MS, 200 * MS, 400 * MS, 500 * MS, 500 * MS]);
        backoff.reset();
        assert_eq!(backoff.peek(), 100 * MS);
    }

    #[test]
    fn the_nth_wait_is_the_first_doubled_n_times_and_never_overflows() {
        let backoff = Backoff::new(10 * MS, 640 * MS);
        assert_eq!(backoff.nth(1), 20 * MS);
        assert_eq!(backoff.nth(6), 640 * MS);
        assert_eq!(backoff.nth(40), 640 * MS);
    }
}
