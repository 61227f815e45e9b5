//! When a task must be terminal at the latest, and why.
//!
//! The TTL is how long a task is *kept*; `max_runtime` is how long it may
//! *run*. A task still running at its deadline is failed with the reason
//! below and its inner call is cancelled, so that no task is ever `working`
//! one moment and "not found" the next:
//!
//! | Deadline                                   | Message of the `failed` task                          |
//! |--------------------------------------------|-------------------------------------------------------|
//! | creation + `max_runtime`                   | "The task ran longer than its runtime limit of …"     |
//! | creation + TTL − grace, if that is earlier | "The task was still running when its TTL ran out …"   |
//!
//! The grace is a quarter of the TTL, at most one minute: a task failed for
//! its TTL stays readable that long before the store forgets it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::task::Timestamp;

/// The longest grace between a TTL-forced failure and the TTL itself.
const MAX_GRACE: Duration = Duration::from_secs(60);

/// The deadline of one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Deadline {
    /// When, in milliseconds since the epoch.
    pub at: u64,
    /// Which limit set it.
    pub cause: Cause,
}

/// Which limit a deadline comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Cause {
    /// `max_runtime`, in milliseconds.
    Runtime { limit: u64 },
    /// The task's TTL, less the grace.
    Ttl,
}

/// How long before its TTL a still-running task is failed.
pub(crate) fn grace(ttl: Duration) -> Duration {
    (ttl / 4).min(MAX_GRACE)
}

impl Deadline {
    /// The deadline of a task created at `created` with `ttl`, under
    /// `max_runtime`; `None` when neither limits it.
    pub(crate) fn of(
        created: Timestamp,
        ttl: Option<Duration>,
        max_runtime: Option<Duration>,
    ) -> Option<Self> {
        let runtime = max_runtime.map(|limit| Self {
            at: created.saturating_add(limit).as_millis(),
            cause: Cause::Runtime {
                limit: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            },
        });
        let ttl = ttl.map(|ttl| Self {
            at: created.saturating_add(ttl - grace(ttl)).as_millis(),
            cause: Cause::Ttl,
        });
        match (runtime, ttl) {
            (Some(runtime), Some(ttl)) if ttl.at < runtime.at => Some(ttl),
            (Some(runtime), _) => Some(runtime),
            (None, ttl) => ttl,
        }
    }

    /// How long from now until the deadline (zero once it has passed).
    pub(crate) fn remaining(self) -> Duration {
        Duration::from_millis(self.at.saturating_sub(Timestamp::now().as_millis()))
    }

    /// The status message of a task failed at this deadline.
    pub(crate) fn message(self) -> String {
        match self.cause {
            Cause::Runtime { limit } => format!(
                "The task ran longer than its runtime limit of {}",
                humantime::format_duration(Duration::from_millis(limit))
            ),
            Cause::Ttl => {
                "The task was still running when its TTL ran out; it is kept briefly so that this failure can be read".to_owned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_limit_wins_and_a_ttl_leaves_a_grace() {
        let created = Timestamp::from_millis(1_000_000);
        let hour = Duration::from_secs(3600);
        let runtime = Deadline::of(created, Some(hour), Some(Duration::from_secs(60))).unwrap();
        assert_eq!(runtime.at, 1_060_000);
        assert!(runtime.message().contains("runtime limit of 1m"));
        let ttl = Deadline::of(created, Some(Duration::from_secs(8)), Some(hour)).unwrap();
        assert_eq!((ttl.at, ttl.cause), (1_006_000, Cause::Ttl));
        let long = Deadline::of(created, Some(hour), None).unwrap();
        assert_eq!(long.at, 1_000_000 + 3_540_000);
        assert_eq!(Deadline::of(created, None, None), None);
    }
}
