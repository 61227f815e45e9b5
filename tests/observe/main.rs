//! What an operator sees of a served layer: metrics, traces, log lines and
//! the admin view. Each test sets its recorder or subscriber for its own
//! thread only (a current-thread runtime), so the tests of this binary do not
//! see each other's.
//!
//! | Module | What it reads |
//! |---|---|
//! | `admin` | the operator's view across owners, and the metrics it leaves |
//! | `calls` | the call observer: every call recorded once, and `ToolStats`' counts per tool |
//! | `metrics` | the layer's metrics for a known sequence of calls |
//! | `trace` | one trace for a parked call, resumed and completed |
//! | `log_volume` | one INFO line for one refusal |
//! | `make_span` | the span hook asked for each request the layer handles, and only those |

#[path = "../support/mod.rs"]
mod support;

mod admin;
mod calls;
mod log_volume;
mod make_span;
mod metrics;
mod trace;
