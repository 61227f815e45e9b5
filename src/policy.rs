//! Per-tool policies: when a declaring client's `tools/call` becomes a task.
//!
//! | Policy      | Declaring client                               | Non-declaring client |
//! |-------------|------------------------------------------------|----------------------|
//! | `Threshold` | a task if still running after the threshold    | synchronous          |
//! | `Always`    | a task at once                                 | synchronous          |
//! | `Never`     | synchronous                                    | synchronous          |
//! | `Required`  | a task if still running after the threshold    | `-32021`, HTTP 400   |
//!
//! `Always` exists for tools that answer at once but are still meant to be
//! tasks (a tool that asks for input immediately, a tool whose errors should
//! be observed as a failed task). `Required` rejects non-declaring clients
//! without forcing a task on declaring ones, so an MRTR round that comes back
//! before the threshold still passes through synchronously.

/// When a tool call becomes a task.
///
/// | Policy      | Declaring client                               | Non-declaring client |
/// |-------------|------------------------------------------------|----------------------|
/// | `Threshold` | a task if still running after the threshold    | synchronous          |
/// | `Always`    | a task at once                                 | synchronous          |
/// | `Never`     | synchronous                                    | synchronous          |
/// | `Required`  | a task if still running after the threshold    | `-32021`, HTTP 400   |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ToolPolicy {
    /// A task when the call outlives the latency threshold (the default).
    #[default]
    Threshold,
    /// A task at once, for clients that declared the extension.
    Always,
    /// Never a task.
    Never,
    /// Like `Threshold`, and clients that did not declare the extension get
    /// `-32021` instead of a synchronous call.
    Required,
}
