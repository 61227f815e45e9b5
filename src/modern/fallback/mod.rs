//! The fallback for clients that know no tasks: a call still running after
//! a longer threshold answers with an ordinary tool result that names its
//! task, and two tools the layer adds to `tools/list` read its outcome and
//! cancel it.
//!
//! | Request (fallback on)                                  | The layer                                     |
//! |--------------------------------------------------------|-----------------------------------------------|
//! | `tools/call` of a client without tasks, a tool with a fallback time | forwarded and raced against that time; still running then, it becomes a task and the call answers a `CallToolResult` naming it (text and `structuredContent`) |
//! | `tools/call` of the result tool (`get_task_result`)    | answered by the layer: the call's own result once done, else its status and progress so far |
//! | `tools/call` of the cancel tool (`cancel_task`)        | answered by the layer: the task is cancelled, its inner call stopped |
//! | `tools/list` (first page)                              | forwarded; the two tools are appended         |
//!
//! Off by default, and opt-in per tool or for every tool, because it changes
//! what a tool answers: a client gets a result that is not the tool's. A
//! tool with the `Never` policy is never answered this way, and a
//! `Required` one still refuses clients without tasks.
//!
//! Such a task is like any other: owned by the caller's principal, under
//! the same limits and TTL, readable with `tasks/get` by a client that has
//! tasks. A call refused a task at a limit stays synchronous (during a
//! drain a new call gets `503`). A
//! call of a session-based client (protocol 2025-11-25 and older) is not
//! run again after a restart: its session would be gone.

pub(crate) mod answer;
pub(crate) mod tools;

pub(crate) use crate::config::fallback::{Added, Names};

use http::HeaderValue;

/// What a parked call answers, and when it parks.
#[derive(Debug)]
pub(crate) enum Handle {
    /// A declaring client's call: the `CreateTaskResult`, after the
    /// threshold (or at once, by its policy).
    Task,
    /// A call of a client without tasks: a tool result that names the task
    /// (`fallback`). Boxed: rare, and the race moves its call around.
    Fallback(Box<FallbackCall>),
}

/// A call of a client without tasks that falls back.
#[derive(Debug)]
pub(crate) struct FallbackCall {
    /// How long it runs before it falls back.
    pub after: std::time::Duration,
    /// The `MCP-Protocol-Version` of an older, session-based client
    /// (`None`: a 2026-07-28 one).
    pub older: Option<HeaderValue>,
}

impl FallbackCall {
    /// Whether the client speaks 2026-07-28.
    pub(crate) fn modern(&self) -> bool {
        self.older.is_none()
    }
}
