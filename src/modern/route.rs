//! What the 2026-07-28 wing takes from a classified request: its [`Route`],
//! its parsed calls, and the one table of its task methods.
//!
//! | Route | Made by `layer::classify` for | Answered by |
//! |-------|-------------------------------|-------------|
//! | `ForwardCall` | a `tools/call` of a client without tasks, for the inner server | `early.rs` (a long one) |
//! | `Discover` | `server/discover`, whose answer gains the tasks extension | `rewrite.rs`, `own_tasks.rs` |
//! | `ToolCall` ([`ToolCall`]) | a `tools/call` the layer races and may park: a declaring client's, or one that falls back | `tool_call.rs` |
//! | `Added` | a `tools/call` of a tool the fallback adds | `fallback/answer.rs` |
//! | `ToolsList` | `tools/list` with the fallback on | `fallback/tools.rs` |
//! | `Task` ([`TaskCall`]) | `tasks/get`, `tasks/update`, `tasks/cancel` past the request-level checks ([`TaskMethod`]) | `methods.rs` |
//! | `Listen` | a declaring client's `subscriptions/listen` for task status | `push/` |
//! | `EventsList`, `Events` | `events/list`, and an events method about the layer's event type, with task events on | `events/` |

use std::ops::Range;

use serde_json::value::RawValue;

use super::events::EventsCall;
use super::fallback::Handle;
use super::fallback::answer::AddedCall;
use super::push::ListenCall;
use crate::policy::ToolPolicy;
use crate::rewrite::Strip;
use crate::task::TaskId;

/// Who in the 2026-07-28 wing answers a request, with what it parsed; the
/// fallback for clients without tasks, whatever their generation, is here
/// too.
#[derive(Debug)]
pub(crate) enum Route {
    /// A `tools/call` the layer does not take (a client without tasks), for
    /// the inner server, without the related task ids at the range if any;
    /// a long one may get an SSE head of the layer's (`early`).
    ForwardCall(Option<Range<usize>>),
    /// The inner server; the layer adds the tasks extension to its answer.
    Discover,
    /// A `tools/call` the layer races and may park: a declaring client's,
    /// or one that falls back (`fallback`).
    ToolCall(ToolCall),
    /// A `tools/call` of a tool the fallback adds: the layer answers it.
    Added(AddedCall),
    /// A `tools/list` with the fallback on: the inner server's answer
    /// gains the fallback's tools (on the first page) and a wider
    /// `outputSchema` on each tool that may fall back.
    ToolsList { first_page: bool },
    /// `tasks/get`, `tasks/update` or `tasks/cancel`.
    Task(TaskCall),
    /// A declaring client's `subscriptions/listen` for task status only.
    Listen(ListenCall),
    /// `events/list` with task events on: the inner server's list with the
    /// layer's event type (`first_page`), or the layer's alone.
    EventsList { first_page: bool, id: Box<RawValue> },
    /// An events method about the layer's event type.
    Events(EventsCall),
}

/// A `tools/call` the layer races and may park.
#[derive(Debug)]
pub(crate) struct ToolCall {
    /// What a parked call answers.
    pub handle: Handle,
    /// Where the request's `id` (the JSON value) is in the body: a copy is
    /// made only if the call is parked or fails.
    pub id: Range<usize>,
    pub policy: ToolPolicy,
    /// What the inner server must not get, and where it is in the body.
    pub strip: Strip,
    /// Where `params.name` (the JSON string) is in the body, for the span.
    pub name: Option<Range<usize>>,
    /// Where `params` is in the body: what a parked call is re-issued with.
    pub params: Option<Range<usize>>,
}

/// The task methods the layer answers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMethod {
    Get,
    Update,
    Cancel,
}

/// The one table of task method names: routing, the header checks and the
/// span names all read it, so a new method is one line here and its arm in
/// `methods::answer`.
const TASK_METHODS: [(&str, TaskMethod); 3] = [
    ("tasks/get", TaskMethod::Get),
    ("tasks/update", TaskMethod::Update),
    ("tasks/cancel", TaskMethod::Cancel),
];

impl TaskMethod {
    /// The task method a JSON-RPC method name names, if any.
    pub(crate) fn named(method: &str) -> Option<Self> {
        TASK_METHODS
            .iter()
            .find(|(name, _)| *name == method)
            .map(|(_, task_method)| *task_method)
    }

    /// The JSON-RPC method name (also the span name).
    pub(crate) fn name(self) -> &'static str {
        TASK_METHODS
            .iter()
            .find(|(_, task_method)| *task_method == self)
            .map_or("tasks/unknown", |(name, _)| *name)
    }
}

/// A task method call that passed the request-level checks.
#[derive(Debug)]
pub(crate) struct TaskCall {
    pub id: Box<RawValue>,
    pub method: TaskMethod,
    /// `None` for a `taskId` this layer never issues: no such task.
    pub task: Option<TaskId>,
    /// `params.inputResponses` of a `tasks/update`, as sent.
    pub input_responses: Option<Box<RawValue>>,
}
