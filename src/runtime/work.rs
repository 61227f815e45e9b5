//! [`Work`]: what the background life of one task needs, built in one
//! place for each way a task's call starts.
//!
//! | Constructor       | For                                   | Round, deadline and expiry from |
//! |-------------------|---------------------------------------|---------------------------------|
//! | [`Work::new`]     | a task just parked (or asked for)     | round 0; the task's TTL and the layer's `max_runtime`, from creation |
//! | [`Work::resumed`] | a call re-issued after an input round | the stored resume context, so a resume on any instance keeps them |

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::Runtime;
use crate::observe::{TaskTrace, Waiting};
use crate::runtime::background::Background;
use crate::runtime::deadline::Deadline;
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::{Resume, Template};
use crate::store::TaskStore;
use crate::task::{TaskId, Timestamp};

/// Everything the background work of one task needs, across input rounds.
pub(crate) struct Work {
    pub store: Arc<dyn TaskStore>,
    pub id: TaskId,
    pub stop: CancellationToken,
    pub caller: Box<dyn CallInner>,
    /// Credentials and extensions for re-issued calls.
    pub template: Box<Template>,
    /// The original `tools/call` params.
    pub params: Box<RawValue>,
    /// Input rounds so far (requests relayed, in a 2025-11-25 session).
    pub round: u32,
    /// The most input rounds the task may ask for.
    pub max_rounds: u32,
    /// Calls sent in this round (for fresh JSON-RPC ids).
    pub attempts: u32,
    /// Load-shedding retries in a row.
    pub shed: u32,
    /// Sends in a row that did not reach the inner server (`Unreached`).
    pub unreached: u32,
    /// When the task expires (`None`: never); outcome writes are retried
    /// until then.
    pub expires: Option<Timestamp>,
    /// When the task must be terminal at the latest.
    pub deadline: Option<Deadline>,
    /// The largest result (or SSE event) read from the inner server.
    pub max_result: usize,
    /// The layer's background work: outcome writes run there, so that a
    /// deadline or a drain that stops the call cannot cut a write short.
    pub background: Arc<Background>,
    /// The task's span, and when it was parked here.
    pub trace: TaskTrace,
    /// Where the trace waits while the task waits for input.
    pub waiting: Arc<Waiting>,
    /// Whether the store keeps what it takes to run the call again in a
    /// later process: a drain that gives up on it leaves it `working`.
    pub rerunnable: bool,
}

/// How a task's call is reached and what it was asked.
pub(crate) struct Call {
    pub caller: Box<dyn CallInner>,
    /// Credentials and extensions for calls sent later.
    pub template: Template,
    /// The `tools/call` params, for re-issuing.
    pub params: Box<RawValue>,
}

impl Work {
    /// The work of a task created at `created_at` with `ttl`; its stop
    /// signal is the store's, set once the task exists.
    pub(crate) fn new(
        runtime: &Runtime,
        id: TaskId,
        call: Call,
        created_at: Timestamp,
        ttl: Option<Duration>,
        trace: TaskTrace,
    ) -> Self {
        let mut work = Self::of(runtime, id, CancellationToken::new(), call, trace);
        work.expires = ttl.map(|ttl| created_at.saturating_add(ttl));
        work.deadline = Deadline::of(created_at, ttl, runtime.config.max_runtime);
        work
    }

    /// The work of a task whose input round `resume` describes (its
    /// params are the call's), resumed with `stop` (the store's signal for
    /// the task).
    pub(crate) fn resumed(
        runtime: &Runtime,
        id: TaskId,
        stop: CancellationToken,
        (caller, template): (Box<dyn CallInner>, Template),
        resume: Resume,
        trace: TaskTrace,
    ) -> Self {
        let call = Call {
            caller,
            template,
            params: resume.params,
        };
        let mut work = Self::of(runtime, id, stop, call, trace);
        work.round = resume.round;
        work.expires = resume.expires.map(Timestamp::from_millis);
        work.deadline = resume.deadline;
        work
    }

    fn of(
        runtime: &Runtime,
        id: TaskId,
        stop: CancellationToken,
        call: Call,
        trace: TaskTrace,
    ) -> Self {
        Self {
            store: runtime.store.clone(),
            id,
            stop,
            caller: call.caller,
            template: Box::new(call.template.parked()),
            params: call.params,
            round: 0,
            max_rounds: runtime.config.max_input_rounds,
            attempts: 0,
            shed: 0,
            unreached: 0,
            expires: None,
            deadline: None,
            max_result: runtime.config.max_result_bytes,
            background: runtime.background.clone(),
            trace,
            waiting: runtime.waiting.clone(),
            rerunnable: false,
        }
    }
}

/// A place among the background inner calls.
pub(crate) enum Slot {
    /// Taken already (a call parked with a free place).
    Held(OwnedSemaphorePermit),
    /// Wait for one (a resumed call, a re-run), counted meanwhile when the
    /// mark is there (a re-run).
    Wait(Arc<Semaphore>, Option<super::queued::InQueue>),
}
