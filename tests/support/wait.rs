//! Waiting for something to happen, rather than for a while: poll a
//! condition every [`POLL`] until it holds, and fail the test naming what
//! never happened once a generous bound has passed.
//!
//! Self-contained (std and tokio only), so a test binary without
//! `mod support;` can include it by path: the store contract does
//! (`contract::wait`), and the Redis store tests use it from there.
#![allow(dead_code)]

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

/// How often a condition is checked again.
pub const POLL: Duration = Duration::from_millis(20);

/// How long a test waits for something that takes milliseconds when the
/// machine is idle: generous, so that only a hang fails it.
pub const BOUND: Duration = Duration::from_secs(20);

/// What a check answers: whether the awaited thing happened, with its value
/// when it did and, when it did not, what was seen instead.
pub trait Check {
    /// What the wait returns once the thing happened.
    type Output;
    /// `Ok` once it happened; `Err` with what was seen, for the failure.
    fn outcome(self) -> Result<Self::Output, String>;
}

impl Check for bool {
    type Output = ();
    fn outcome(self) -> Result<(), String> {
        if self { Ok(()) } else { Err("false".into()) }
    }
}

impl<T> Check for Option<T> {
    type Output = T;
    fn outcome(self) -> Result<T, String> {
        self.ok_or_else(|| "None".into())
    }
}

impl<T, E: Debug> Check for Result<T, E> {
    type Output = T;
    fn outcome(self) -> Result<T, String> {
        self.map_err(|seen| format!("{seen:?}"))
    }
}

/// Checks `check` until it holds; panics naming `what` (and what the last
/// check saw) when `bound` passes first. Under paused tokio time the bound
/// is counted in tokio time.
pub async fn wait_until<C, F, Fut>(what: &str, bound: Duration, mut check: F) -> C::Output
where
    C: Check,
    F: FnMut() -> Fut,
    Fut: Future<Output = C>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let seen = match check().await.outcome() {
            Ok(output) => return output,
            Err(seen) => seen,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!("{what}: did not happen within {bound:?}; last seen: {seen}");
        }
        // The poll interval of a bounded wait.
        tokio::time::sleep(POLL).await;
    }
}

/// Returns once the wall clock shows a later millisecond than when called.
/// Tasks are stamped in whole milliseconds and listed by that stamp: a task
/// started after this is listed after every task started before it.
pub async fn next_millisecond() {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("a clock after 1970")
            .as_millis()
    };
    let start = now();
    wait_until("the clock moves on a millisecond", BOUND, || async {
        now() > start
    })
    .await;
}

/// Under paused tokio time: returns once every other task of the runtime
/// has run as far as it can, since paused time only moves when nothing else
/// can run. A settling point, not a wait for wall time.
pub async fn settle() {
    // Paused time: a settling point, not a wait (see above).
    tokio::time::sleep(Duration::from_millis(1)).await;
}
