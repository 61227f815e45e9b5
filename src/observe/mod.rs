//! What an operator sees of the layer: spans, lifecycle events and metrics.
//!
//! **Spans.** Each request the layer handles itself (a declaring
//! `tools/call`, the task methods, `server/discover`, the 2025-11-25 session
//! messages it takes part in) runs in an `mcp.request` span named after the
//! MCP method (`otel.name`, `mcp.method.name`, `gen_ai.tool.name`,
//! `mcp.task.id`; field names after OpenTelemetry's MCP conventions). A
//! request that passes through to the inner server untouched gets none: it
//! is the inner server's to trace. A parked call gets an `mcp.task` span,
//! a child of the request that created it, that lives until the task is
//! terminal: the background driver, each re-issued inner call
//! (`mcp.inner_call`) and each outcome write run under it. A `tasks/update`
//! that resumes the task is linked to it (`follows_from`). Every tokio task
//! the layer spawns for a request or a task carries the span it was
//! spawned in. As `tracing` keeps a span open while a child lives, the
//! request span of a parked call closes with its task; its `time.busy` is
//! the request's own work.
//!
//! **Events**: one `info` event per lifecycle step, with target
//! `mcp_tasks::lifecycle`, and one per refusal at a limit.
//!
//! **Metrics** ([`metrics`]): through the `metrics` facade. The layer
//! installs no recorder; with none installed, recording costs a few
//! nanoseconds.
//!
//! **Calls** ([`calls`]): one record per `tools/call` the layer routed, for
//! an observer installed with
//! [`TasksLayer::observe_calls`](crate::TasksLayer::observe_calls);
//! [`ToolStats`] keeps them per tool, slot by slot, for a console.

pub mod calls;
pub(crate) mod events;
mod make_span;
pub mod metrics;
mod stats;
pub(crate) mod store;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tracing::Span;
use tracing::field::Empty;

use crate::task::{TaskId, Timestamp};

pub use make_span::{DefaultMakeSpan, MakeSpan};
pub use stats::{SlotStats, ToolSeries, ToolStats};

/// A response extension: the JSON-RPC error code of an error the layer
/// answered itself, for the request span's `error.type`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ErrorCode(pub i64);

/// The span of a request the layer handles, named after its method.
///
/// None at all (`Span::none()`) when no subscriber takes `info` spans:
/// making a disabled span still costs a declaring client's fast call (and,
/// with `tracing`'s `log` feature, a record for the `log` crate that
/// nothing reads of a request span).
pub(crate) fn request_span(method: &'static str) -> Span {
    if !tracing::level_enabled!(tracing::Level::INFO) {
        return Span::none();
    }
    tracing::info_span!(
        "mcp.request",
        otel.name = method,
        otel.kind = "server",
        mcp.method.name = method,
        gen_ai.tool.name = Empty,
        mcp.task.id = Empty,
        error.type = Empty,
    )
}

/// The current span, or none without asking when no subscriber is set up
/// (asking costs a fast call a look into the thread's dispatcher).
pub(crate) fn current_span() -> Span {
    if tracing::level_filters::LevelFilter::current() == tracing::level_filters::LevelFilter::OFF {
        return Span::none();
    }
    Span::current()
}

/// The span of a task, a child of the current span (the request that
/// parks the call, or the one that resumes it on an instance that did not
/// park it).
pub(crate) fn task_span(id: TaskId) -> Span {
    tracing::info_span!(
        "mcp.task",
        otel.name = "mcp.task",
        mcp.task.id = %id,
    )
}

/// The span of one inner call sent in the background (a re-issue).
pub(crate) fn inner_call_span(id: TaskId, round: u32, attempt: u32) -> Span {
    tracing::info_span!(
        "mcp.inner_call",
        otel.name = "tools/call",
        otel.kind = "client",
        mcp.task.id = %id,
        mcp.round = round,
        mcp.attempt = attempt,
    )
}

/// Records the tool's name on `span` from `name`, the JSON string as sent
/// (located by the request's one parse), when a subscriber listens to it
/// (the string is only decoded then).
pub(crate) fn record_tool(span: &Span, name: Option<&[u8]>) {
    if span.is_disabled() {
        return;
    }
    if let Some(Ok(name)) = name.map(serde_json::from_slice::<std::borrow::Cow<'_, str>>) {
        span.record("gen_ai.tool.name", &*name);
    }
}

/// What outlives a driver that stops for input: the task's span and when
/// it was parked here.
#[derive(Clone, Debug)]
pub(crate) struct TaskTrace {
    /// The task's span.
    pub span: Span,
    /// When this instance parked the task (`None` when it was parked
    /// elsewhere), for the time-to-terminal histogram.
    pub parked: Option<Instant>,
    /// While the task waits for input: the watchdog of its deadline, which
    /// a resume here stops (it also holds the span open).
    pub watchdog: Option<tokio::task::AbortHandle>,
    /// The call, for the call observer, when there is one and the task was
    /// parked here.
    pub call: Option<calls::ParkedCall>,
}

/// The traces of tasks waiting for input on this instance, so that a
/// resume continues the same span. Bounded by the live tasks; entries of
/// tasks that expire while waiting are dropped as the map grows.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    traces: Mutex<HashMap<TaskId, (TaskTrace, Option<Timestamp>)>>,
}

/// How many entries before expired ones are looked for.
const PRUNE_FROM: usize = 256;

impl Waiting {
    /// Keeps `trace` until the task resumes, or `expires`.
    pub(crate) fn put(&self, id: TaskId, trace: TaskTrace, expires: Option<Timestamp>) {
        let mut traces = self.traces.lock().unwrap_or_else(|e| e.into_inner());
        if traces.len() >= PRUNE_FROM && traces.len().is_power_of_two() {
            let now = Timestamp::now();
            traces.retain(|_, (_, expires)| expires.is_none_or(|at| at > now));
        }
        traces.insert(id, (trace, expires));
    }

    /// The trace of a task that resumes, if it waited here; its input
    /// watchdog is stopped.
    /// The tasks waiting here whose time has not run out.
    pub(crate) fn ids(&self) -> Vec<TaskId> {
        let traces = self.traces.lock().unwrap_or_else(|e| e.into_inner());
        let now = Timestamp::now();
        traces
            .iter()
            .filter(|(_, (_, expires))| expires.is_none_or(|at| at > now))
            .map(|(id, _)| *id)
            .collect()
    }

    pub(crate) fn take(&self, id: TaskId) -> Option<TaskTrace> {
        let mut traces = self.traces.lock().unwrap_or_else(|e| e.into_inner());
        let (mut trace, _) = traces.remove(&id)?;
        if let Some(watchdog) = trace.watchdog.take() {
            watchdog.abort();
        }
        Some(trace)
    }
}
