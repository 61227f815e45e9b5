//! Lifecycle events (`info`, target `mcp_tasks::lifecycle`) and the
//! metrics that count them: one function per step, called where the step
//! happens.

use std::time::{Duration, Instant};

use super::metrics as m;
use crate::task::TaskId;

/// The target of every lifecycle event.
const TARGET: &str = "mcp_tasks::lifecycle";

/// A task was created, `waited` after its request arrived.
pub(crate) fn parked(id: TaskId, waited: Duration) {
    tracing::info!(target: TARGET, task = %id, waited_ms = waited.as_millis() as u64, "task parked");
    metrics::counter!(m::CREATED).increment(1);
    metrics::histogram!(m::TIME_TO_PARK).record(waited.as_secs_f64());
}

/// The tool asked for input.
pub(crate) fn input_requested(id: TaskId) {
    tracing::info!(target: TARGET, task = %id, "task input requested");
    metrics::counter!(m::INPUT_REQUIRED).increment(1);
}

/// The client answered round `round`; the call is sent again.
pub(crate) fn resumed(id: TaskId, round: u32) {
    tracing::info!(target: TARGET, task = %id, round, "task resumed");
    metrics::counter!(m::RESUMED).increment(1);
}

/// How a task ended.
#[derive(Clone, Copy, Debug)]
pub(crate) enum End<'a> {
    /// With the tool's result.
    Completed,
    /// With an error; the reason is its message.
    Failed(&'a str),
    /// By `tasks/cancel` (`by`: `client`) or the operator (`operator`).
    Cancelled {
        /// Who cancelled it.
        by: &'static str,
    },
    /// Removed by the operator before it ended.
    Deleted,
    /// Its TTL ran out while it ran.
    Expired,
}

/// A task reached a terminal state; `parked` is when this instance parked
/// it, if it did.
pub(crate) fn ended(id: TaskId, end: End<'_>, parked: Option<Instant>) {
    let status = match end {
        End::Completed => {
            tracing::info!(target: TARGET, task = %id, "task completed");
            "completed"
        }
        End::Failed(reason) => {
            tracing::info!(target: TARGET, task = %id, reason, "task failed");
            "failed"
        }
        End::Cancelled { by } => {
            tracing::info!(target: TARGET, task = %id, by, "task cancelled");
            "cancelled"
        }
        End::Deleted => {
            tracing::info!(target: TARGET, task = %id, by = "operator", "task deleted");
            "deleted"
        }
        End::Expired => {
            tracing::info!(target: TARGET, task = %id, "task expired");
            "expired"
        }
    };
    metrics::counter!(m::TERMINAL, "status" => status).increment(1);
    if let Some(parked) = parked {
        metrics::histogram!(m::DURATION, "status" => status).record(parked.elapsed().as_secs_f64());
    }
}

/// The layer stopped a running task itself (`by`: `drain`, `runtime_cap`,
/// `panic`); the task then fails with `reason`.
pub(crate) fn stopped(id: TaskId, by: &'static str, reason: &str) {
    tracing::info!(target: TARGET, task = %id, by, reason, "task stopped");
}

/// A request was refused at a limit (`reason`, a metric label).
pub(crate) fn refused(reason: &'static str, message: &str) {
    tracing::info!(target: TARGET, reason, message, "refused at a limit");
    metrics::counter!(m::REFUSED, "reason" => reason).increment(1);
}
