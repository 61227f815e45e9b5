//! One record per `tools/call` the layer routed, for an observer of yours
//! ([`CallObserver`], installed with
//! [`TasksLayer::observe_calls`](crate::TasksLayer::observe_calls)):
//! which tool, how long, whether it parked, how it ended.
//! [`ToolStats`](super::ToolStats) is one such observer, made for a console.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use mcp_tasks::observe::calls::{CallOutcome, CallRecord};
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//!
//! static FAILED: AtomicU64 = AtomicU64::new(0);
//! let layer = TasksLayer::new(MemoryTaskStore::new()).observe_calls(|call: &CallRecord<'_>| {
//!     if call.outcome == CallOutcome::Failed {
//!         FAILED.fetch_add(1, Ordering::Relaxed);
//!     }
//! });
//! # let _ = layer;
//! ```
//!
//! **Which calls.** Every `tools/call` the layer takes as a tool call: a
//! declaring client's (raced against the threshold, or not under the
//! `Never` policy), one that falls back for a client without tasks, and a
//! 2025-11-25 one with `params.task`: exactly once each, parked or not. Not
//! recorded: a `tools/call` the layer forwards untouched (a 2026-07-28
//! client without tasks and no fallback, a 2025-11-25 call without
//! `params.task`), which is the inner server's to count; one the layer
//! refuses before routing it (a malformed request, a policy the call
//! breaks, a drain's `503`); and a call of the fallback's own tools.
//!
//! **When, and what `elapsed` is.** From the moment the layer sends the call
//! on (its body read and classified) to:
//!
//! | The call…                                     | Recorded when                                   | `parked` |
//! |-----------------------------------------------|-------------------------------------------------|----------|
//! | answers in time (or is refused a task)        | the answer's last byte went to the client's connection, or the client dropped it | `false` |
//! | is parked                                     | its task reaches a terminal state on this instance (the outcome written, cancelled, expired) | `true` |
//!
//! A parked task whose outcome another instance writes (it resumed there
//! after an input round, or it runs again in a later process) is recorded by
//! neither; nor is a task left `working` for the next process by a drain,
//! nor one cancelled while it waits for input with neither a TTL nor a
//! `max_runtime` (no watchdog waits with it then; the defaults set both).
//!
//! **Outcomes.** What counts as failed is what the client would see as a
//! failure:
//!
//! | The call ended with…                                              | [`CallOutcome`] |
//! |-------------------------------------------------------------------|-----------------|
//! | a result (an `input_required` round included: the client's next call is counted on its own) | `Succeeded` |
//! | a result with `"isError": true`                                   | `Failed`        |
//! | a JSON-RPC error                                                  | `Failed`        |
//! | an HTTP error status, an answer that is not JSON or SSE, a body or stream that broke or ended without the response, the inner service failing | `Failed` |
//! | a parked task that ended `failed` (the tool's error, the runtime limit, a drain, a panic) or expired | `Failed` |
//! | a parked task cancelled (by its client, or the operator's cancel or delete) | `Cancelled` |
//! | an answer in time whose client went away before its response passed | `Cancelled` |
//!
//! An answer in time is never buffered or parsed to know this: its bytes are
//! followed as they pass, by a small scanner that tracks the JSON structure
//! (and an SSE stream's `data` lines) to find a top-level `error` member or a
//! `result` object's own `isError` member (a nested `isError`, in
//! `structuredContent` say, does not count). Member names written with `\u`
//! escapes are not recognized. Without an observer none of this runs: the
//! fast path costs one test of an `Option`.

mod watch;

use std::time::Duration;

pub(crate) use watch::{ParkedCall, Watch};

/// Told of every `tools/call` the layer routed, once, when it ends (see the
/// [module docs](self) for which calls, when, and what counts as failed).
///
/// `finished` runs on the task that ends the call: the request's own (in
/// the response body, as its last byte passes) or one of the layer's
/// background tasks. Keep it short and non-blocking, and do not panic in
/// it: it may run while a response body is dropped.
pub trait CallObserver: Send + Sync + 'static {
    /// One call ended.
    fn finished(&self, call: &CallRecord<'_>);
}

impl<F> CallObserver for F
where
    F: Fn(&CallRecord<'_>) + Send + Sync + 'static,
{
    fn finished(&self, call: &CallRecord<'_>) {
        self(call)
    }
}

/// One `tools/call`, as it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallRecord<'a> {
    /// The tool's name, `params.name` as the client sent it (empty when it
    /// sent none the layer could read).
    pub tool: &'a str,
    /// From the layer sending the call on to its end (see the
    /// [module docs](self)).
    pub elapsed: Duration,
    /// Whether the call became a task.
    pub parked: bool,
    /// How it ended.
    pub outcome: CallOutcome,
}

impl<'a> CallRecord<'a> {
    /// A record, as the layer makes one (for testing an observer).
    pub fn new(tool: &'a str, elapsed: Duration, parked: bool, outcome: CallOutcome) -> Self {
        Self {
            tool,
            elapsed,
            parked,
            outcome,
        }
    }
}

/// How a `tools/call` ended (see the [module docs](self) for what counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// A result the tool did not mark as an error.
    Succeeded,
    /// A JSON-RPC error, a result with `isError: true`, a task that ended
    /// `failed` or expired, or no usable answer.
    Failed,
    /// A task cancelled, or an answer in time its client did not wait for.
    Cancelled,
}
