//! The layer's metrics, recorded through the [`metrics`](https://docs.rs/metrics)
//! facade. Install a recorder (e.g. `metrics-exporter-prometheus`) to see
//! them, then call [`describe`] for their help texts and units; the layer
//! installs none.
//!
//! | Name | Kind | Labels | Unit | What |
//! |------|------|--------|------|------|
//! | `mcp_tasks_created_total` | counter | | tasks | tasks created (parked calls, 2025-11-25 `params.task` calls) |
//! | `mcp_tasks_terminal_total` | counter | `status`: `completed`, `failed`, `cancelled`, `expired`, `deleted` | tasks | tasks that reached a terminal state, as this instance saw it (`deleted`: removed by the operator before it ended) |
//! | `mcp_tasks_input_required_total` | counter | | rounds | input rounds asked for by parked tools |
//! | `mcp_tasks_resumed_total` | counter | | rounds | input rounds answered, the call re-issued |
//! | `mcp_tasks_refused_total` | counter | `reason`: `draining`, `running`, `quota_owner`, `quota_total`, `body_size`, `subscriptions` | requests | refusals at a limit |
//! | `mcp_tasks_live` | gauge | `status` | tasks | live tasks in the whole store, set by [`Admin::record_live`](crate::Admin::record_live) (the gateway: on a scrape of `--metrics`, at most once a second) |
//! | `mcp_tasks_running` | gauge | | calls | parked calls running in the background now |
//! | `mcp_tasks_time_to_park_seconds` | histogram | | seconds | from the request's arrival to the task's creation |
//! | `mcp_tasks_duration_seconds` | histogram | `status` | seconds | from parking to the terminal state, for tasks parked and ended on this instance |
//! | `mcp_tasks_get_seconds` | histogram | | seconds | `tasks/get` answered by the layer (2026-07-28) |
//! | `mcp_tasks_store_seconds` | histogram | `op` | seconds | one task store operation (`create`, `get`, `set_status_message`, `complete`, `fail`, `cancel`, `require_input`, `answer_input`, `list`) |
//! | `mcp_tasks_store_errors_total` | counter | `op` | errors | task store operations that failed (not "not found") |
//! | `mcp_tasks_event_deliveries_total` | counter | `outcome`: `sent`, `retried`, `failed` (given up after the last try), `refused` (410, 413) | deliveries | webhook deliveries of task events |
//! | `mcp_tasks_event_delivery_seconds` | histogram | | seconds | one webhook delivery try, from the send to the answer or the failure |
//! | `mcp_tasks_event_streams` | gauge | | streams | `events/stream` requests of the layer's event type open on this instance |
//! | `mcp_tasks_event_webhooks` | gauge | | subscriptions | webhook subscriptions in the store, as this instance's deliverer last read them |
//!
//! **Histogram buckets.** A recorder that exports histograms with buckets
//! (Prometheus) needs bounds that fit each figure; [`buckets`] gives them,
//! for the layer's threshold, and `mcp-tasks-gateway --metrics` uses them:
//!
//! | Histogram | Bounds | Why |
//! |-----------|--------|-----|
//! | `mcp_tasks_time_to_park_seconds` | [`time_to_park_buckets`]: 1, 5, 25, 100 ms below the threshold; the threshold itself and the threshold + 1, 2.5, 5, 10, 25, 50, 100, 250 ms; then 1, 5, 15, 30, 60, 300 s | a call under the `Threshold` policy parks at the threshold plus what parking costs (the store's `create`), so the fine bounds just past it show that cost; calls parked at once (`Always`, a 2025-11-25 `params.task`) fall below it, calls parked by the fallback for clients without tasks (`fallback_after`) in the seconds after it |
//! | `mcp_tasks_duration_seconds` | [`DURATION_BUCKETS`]: 0.1, 0.5, 1, 2.5, 5, 10, 30 s, 1, 2, 5, 10, 30 min, 1, 2, 6, 24 h | a parked task runs from under a second past the threshold to `max_runtime` (30 min by default), longer across input rounds that wait for a person (up to the TTL) |
//! | `mcp_tasks_get_seconds` | [`GET_BUCKETS`]: 25, 50, 100, 250, 500 µs, 1, 2.5, 5, 10, 25, 100, 500 ms | `tasks/get` is one store read and a render: a few µs over memory, 50 µs to a few ms over SQLite or Redis on the same host, tens of ms when the store is under load or far |
//! | `mcp_tasks_store_seconds` | [`STORE_BUCKETS`]: 10, 25, 50, 100, 250, 500 µs, 1, 2.5, 5, 10, 25, 50, 100, 250 ms, 1 s | memory answers in µs, SQLite in 30 µs to a few ms (an fsync per commit), Redis in 50 µs to 1 ms on loopback and more over a network; the top bounds catch an outage's slow failures |

use std::time::Duration;

use metrics::Unit;

/// Tasks created.
pub const CREATED: &str = "mcp_tasks_created_total";
/// Tasks that reached a terminal state; label `status`.
pub const TERMINAL: &str = "mcp_tasks_terminal_total";
/// Input rounds asked for.
pub const INPUT_REQUIRED: &str = "mcp_tasks_input_required_total";
/// Input rounds answered and resumed.
pub const RESUMED: &str = "mcp_tasks_resumed_total";
/// Refusals at a limit; label `reason`.
pub const REFUSED: &str = "mcp_tasks_refused_total";
/// Live tasks in the store; label `status`. Set by
/// [`Admin::record_live`](crate::Admin::record_live).
pub const LIVE: &str = "mcp_tasks_live";
/// Parked calls running now.
pub const RUNNING: &str = "mcp_tasks_running";
/// Seconds from a request's arrival to its task's creation.
pub const TIME_TO_PARK: &str = "mcp_tasks_time_to_park_seconds";
/// Seconds from parking to the terminal state; label `status`.
pub const DURATION: &str = "mcp_tasks_duration_seconds";
/// Seconds to answer `tasks/get`.
pub const GET: &str = "mcp_tasks_get_seconds";
/// Seconds of one store operation; label `op`.
pub const STORE: &str = "mcp_tasks_store_seconds";
/// Failed store operations; label `op`.
pub const STORE_ERRORS: &str = "mcp_tasks_store_errors_total";
/// Webhook deliveries of task events; label `outcome`.
pub const EVENT_DELIVERIES: &str = "mcp_tasks_event_deliveries_total";
/// Seconds of one webhook delivery try.
pub const EVENT_DELIVERY_SECONDS: &str = "mcp_tasks_event_delivery_seconds";
/// Open `events/stream` requests of the layer's event type.
pub const EVENT_STREAMS: &str = "mcp_tasks_event_streams";
/// Webhook subscriptions in the store.
pub const EVENT_WEBHOOKS: &str = "mcp_tasks_event_webhooks";

/// Bucket bounds of [`DURATION`], in seconds: see the [module docs](self).
pub const DURATION_BUCKETS: &[f64] = &[
    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
    21600.0, 86400.0,
];

/// Bucket bounds of [`GET`], in seconds: see the [module docs](self).
pub const GET_BUCKETS: &[f64] = &[
    0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1, 0.5,
];

/// Bucket bounds of [`EVENT_DELIVERY_SECONDS`], in seconds: a receiver on
/// the same network answers in a millisecond or two, one across the
/// internet in tens to hundreds, and a try ends at the delivery timeout
/// (5 s by default).
pub const DELIVERY_BUCKETS: &[f64] = &[
    0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Bucket bounds of [`STORE`], in seconds: see the [module docs](self).
pub const STORE_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 1.0,
];

/// Bounds of [`TIME_TO_PARK`] below the threshold: calls parked at once.
const PARKED_AT_ONCE: [f64; 4] = [0.001, 0.005, 0.025, 0.1];
/// Bounds of [`TIME_TO_PARK`] past the threshold, added to it: what
/// parking costs.
const PAST_THRESHOLD: [f64; 9] = [0.0, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
/// Bounds of [`TIME_TO_PARK`] well past the threshold: the fallback for
/// clients without tasks, and stalls.
const PARKED_LATE: [f64; 6] = [1.0, 5.0, 15.0, 30.0, 60.0, 300.0];

/// Bucket bounds of [`TIME_TO_PARK`], in seconds, for a layer whose
/// threshold is `threshold`: fine just past it, coarse elsewhere (see the
/// [module docs](self)).
///
/// ```
/// use std::time::Duration;
/// use mcp_tasks::observe::metrics::time_to_park_buckets;
///
/// let bounds = time_to_park_buckets(Duration::from_millis(500));
/// assert_eq!(bounds[..6], [0.001, 0.005, 0.025, 0.1, 0.5, 0.501]);
/// assert!(bounds.windows(2).all(|pair| pair[0] < pair[1]));
/// ```
pub fn time_to_park_buckets(threshold: Duration) -> Vec<f64> {
    let threshold = threshold.as_secs_f64();
    let below = PARKED_AT_ONCE.iter().copied().filter(|b| *b < threshold);
    // Rounded to the µs: `0.5 + 0.001` would print as 0.5010000000000001.
    let past = PAST_THRESHOLD
        .iter()
        .map(|b| ((threshold + b) * 1e6).round() / 1e6);
    let mut bounds: Vec<f64> = below.chain(past).filter(|b| *b > 0.0).collect();
    let last = bounds.last().copied().unwrap_or_default();
    bounds.extend(PARKED_LATE.iter().copied().filter(|b| *b > last));
    bounds
}

/// Every histogram of the layer with its bucket bounds, for a layer whose
/// threshold is `threshold`: what a Prometheus recorder is configured with,
/// e.g. `metrics-exporter-prometheus`'s `set_buckets_for_metric`.
pub fn buckets(threshold: Duration) -> [(&'static str, Vec<f64>); 5] {
    [
        (TIME_TO_PARK, time_to_park_buckets(threshold)),
        (DURATION, DURATION_BUCKETS.to_vec()),
        (GET, GET_BUCKETS.to_vec()),
        (STORE, STORE_BUCKETS.to_vec()),
        (EVENT_DELIVERY_SECONDS, DELIVERY_BUCKETS.to_vec()),
    ]
}

/// Gives the installed recorder the help text and unit of every metric
/// above (Prometheus: the `# HELP` lines). Call it once, after installing
/// the recorder; a description given before is lost.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        CREATED,
        Unit::Count,
        "Tasks created: parked tools/call requests and 2025-11-25 params.task calls."
    );
    describe_counter!(
        TERMINAL,
        Unit::Count,
        "Tasks that reached a terminal state, as this instance saw it, by status (deleted: removed by the operator before it ended)."
    );
    describe_counter!(
        INPUT_REQUIRED,
        Unit::Count,
        "Input rounds asked for by parked tools."
    );
    describe_counter!(
        RESUMED,
        Unit::Count,
        "Input rounds answered, the call re-issued to the server."
    );
    describe_counter!(
        REFUSED,
        Unit::Count,
        "Requests refused at a limit, by reason."
    );
    describe_gauge!(
        LIVE,
        Unit::Count,
        "Live tasks in the whole task store, by status, as last counted."
    );
    describe_gauge!(
        RUNNING,
        Unit::Count,
        "Parked calls running in the background on this instance now."
    );
    describe_histogram!(
        TIME_TO_PARK,
        Unit::Seconds,
        "Seconds from a tools/call request's arrival to its task's creation."
    );
    describe_histogram!(
        DURATION,
        Unit::Seconds,
        "Seconds from parking to the terminal state, by status, for tasks parked and ended on this instance."
    );
    describe_histogram!(GET, Unit::Seconds, "Seconds to answer a tasks/get.");
    describe_histogram!(
        STORE,
        Unit::Seconds,
        "Seconds of one task store operation, by op."
    );
    describe_counter!(
        STORE_ERRORS,
        Unit::Count,
        "Task store operations that failed (not \"not found\"), by op."
    );
    describe_counter!(
        EVENT_DELIVERIES,
        Unit::Count,
        "Webhook deliveries of task events, by outcome (sent, retried, failed, refused)."
    );
    describe_histogram!(
        EVENT_DELIVERY_SECONDS,
        Unit::Seconds,
        "Seconds of one webhook delivery try, from the send to the answer or the failure."
    );
    describe_gauge!(
        EVENT_STREAMS,
        Unit::Count,
        "events/stream requests of the layer's event type open on this instance."
    );
    describe_gauge!(
        EVENT_WEBHOOKS,
        Unit::Count,
        "Webhook subscriptions in the store, as this instance's deliverer last read them."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_histogram_has_rising_bounds() {
        for threshold in [0, 1, 100, 500, 2_000, 60_000] {
            for (name, bounds) in buckets(Duration::from_millis(threshold)) {
                assert!(!bounds.is_empty(), "{name}");
                assert!(bounds[0] > 0.0, "{name}: {bounds:?}");
                assert!(
                    bounds.windows(2).all(|pair| pair[0] < pair[1]),
                    "{name} at {threshold} ms: {bounds:?}"
                );
            }
        }
    }

    #[test]
    fn time_to_park_is_fine_just_past_the_threshold() {
        let bounds = time_to_park_buckets(Duration::from_secs(2));
        assert_eq!(
            bounds,
            [
                0.001, 0.005, 0.025, 0.1, 2.0, 2.001, 2.0025, 2.005, 2.01, 2.025, 2.05, 2.1, 2.25,
                5.0, 15.0, 30.0, 60.0, 300.0
            ]
        );
    }

    #[test]
    fn a_zero_threshold_keeps_only_the_bounds_past_it() {
        let bounds = time_to_park_buckets(Duration::ZERO);
        assert_eq!(bounds[0], 0.001);
        assert_eq!(bounds.last(), Some(&300.0));
    }
}
