//! The upstream's metrics, recorded by [`Proxy`](super::Proxy) and
//! [`StdioUpstream`](super::stdio::StdioUpstream) through the
//! [`metrics`](https://docs.rs/metrics) facade, beside the layer's
//! ([`observe::metrics`](mcp_tasks::observe::metrics)). Call [`describe`] after
//! installing a recorder for their help texts and units.
//!
//! | Name | Kind | Labels | Unit | What |
//! |------|------|--------|------|------|
//! | `mcp_tasks_upstream_responses_total` | counter | `status`: the HTTP status, e.g. `200` | responses | response heads the HTTP upstream sent |
//! | `mcp_tasks_upstream_failures_total` | counter | `reason`: `connect`, `timeout`, `broken`, `client_body` | requests | requests the HTTP upstream sent no response head for: it could not be reached (`connect`, the connect timeout included), sent none within the header timeout (`timeout`), the connection failed after the request went (`broken`; the client got a `502` or `504` from the gateway), or the client's request body stopped arriving or broke off (`client_body`; the client got a `400`) |
//! | `mcp_tasks_upstream_latency_seconds` | histogram | | seconds | from sending a request to the HTTP upstream to its response head |
//! | `mcp_tasks_upstream_in_flight` | gauge | | requests | requests sent to the HTTP upstream that wait for their response head |
//! | `mcp_tasks_upstream_connections` | gauge | | connections | TCP connections to the HTTP upstream open now, in use or idle in the pool |
//! | `mcp_tasks_upstream_restarts_total` | counter | | restarts | times a stdio upstream (`mcp-tasks-gateway -- COMMAND`) was started again after it exited |
//!
//! In flight counts a request until its response head, not to the end of
//! its body: an SSE answer that streams for minutes holds a connection
//! (counted by the connections gauge) but is no longer in flight. Both
//! gauges are of this process's proxies, whatever their upstream.
//!
//! **Buckets** of the latency histogram ([`LATENCY_BUCKETS`]): 1, 2.5, 5,
//! 10, 25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10, 30 s, 1, 5, 30 min. A
//! request that is not a long `tools/call` answers in a few ms on the same
//! host; a tool call answered with JSON sends its head only when the tool
//! is done, so the tail runs up to the header timeout (30 min by default);
//! one answered with SSE sends it at once.

use std::time::Instant;

use http::StatusCode;
use metrics::Unit;

/// Response heads from the HTTP upstream; label `status`.
pub const RESPONSES: &str = "mcp_tasks_upstream_responses_total";
/// Requests the HTTP upstream sent no response head for; label `reason`.
pub const FAILURES: &str = "mcp_tasks_upstream_failures_total";
/// Seconds from sending a request upstream to its response head.
pub const LATENCY: &str = "mcp_tasks_upstream_latency_seconds";
/// Requests waiting for the HTTP upstream's response head now.
pub const IN_FLIGHT: &str = "mcp_tasks_upstream_in_flight";
/// TCP connections to the HTTP upstream open now.
pub const CONNECTIONS: &str = "mcp_tasks_upstream_connections";
/// Times a stdio upstream was started again after it exited.
pub const RESTARTS: &str = "mcp_tasks_upstream_restarts_total";

/// Bucket bounds of [`LATENCY`], in seconds: see the [module docs](self).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    300.0, 1800.0,
];

/// Every histogram of the upstream with its bucket bounds, for a recorder
/// that exports histograms with buckets (Prometheus).
pub fn buckets() -> [(&'static str, &'static [f64]); 1] {
    [(LATENCY, LATENCY_BUCKETS)]
}

/// Gives the installed recorder the help text and unit of every metric
/// above (Prometheus: the `# HELP` lines). Call it once, after installing
/// the recorder.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        RESPONSES,
        Unit::Count,
        "Response heads the HTTP upstream sent, by HTTP status."
    );
    describe_counter!(
        FAILURES,
        Unit::Count,
        "Requests the HTTP upstream sent no response head for, by reason: connect (unreachable), timeout (none within the header timeout), broken (the connection failed after the request went), client_body (the client's request body stopped arriving)."
    );
    describe_histogram!(
        LATENCY,
        Unit::Seconds,
        "Seconds from sending a request to the HTTP upstream to its response head."
    );
    describe_gauge!(
        IN_FLIGHT,
        Unit::Count,
        "Requests sent to the HTTP upstream that wait for their response head now."
    );
    describe_gauge!(
        CONNECTIONS,
        Unit::Count,
        "TCP connections to the HTTP upstream open now, in use or idle in the pool."
    );
    describe_counter!(
        RESTARTS,
        Unit::Count,
        "Times the stdio upstream was started again after it exited."
    );
}

/// One request to the HTTP upstream, from the moment it is sent: counted in
/// flight until its head comes or it fails, then counted by its outcome.
pub(super) struct Sent {
    at: Instant,
}

impl Sent {
    /// A request sent now.
    pub(super) fn now() -> Self {
        metrics::gauge!(IN_FLIGHT).increment(1.0);
        Self { at: Instant::now() }
    }

    /// When it was sent.
    pub(super) fn at(&self) -> Instant {
        self.at
    }

    /// Its response head came, with `status`.
    pub(super) fn answered(self, status: StatusCode) {
        metrics::histogram!(LATENCY).record(self.at.elapsed().as_secs_f64());
        metrics::counter!(RESPONSES, "status" => status.as_str().to_owned()).increment(1);
    }

    /// No response head came, for `reason` (`connect`, `timeout`, `broken`,
    /// `client_body`).
    pub(super) fn failed(self, reason: &'static str) {
        metrics::counter!(FAILURES, "reason" => reason).increment(1);
    }
}

impl Drop for Sent {
    /// Out of flight: answered, failed, or dropped by the caller.
    fn drop(&mut self) {
        metrics::gauge!(IN_FLIGHT).decrement(1.0);
    }
}

/// A stdio upstream was started again.
pub(super) fn restarted() {
    metrics::counter!(RESTARTS).increment(1);
}
