//! The tasks extension of protocol 2026-07-28 (SEP-2663): the wing of the
//! layer that answers a client declaring `io.modelcontextprotocol/tasks`,
//! beside [`legacy`](crate::legacy), the 2025-11-25 wing. The two never
//! import each other; what both need is in the engine
//! ([`runtime`](crate::runtime)) or the wire.
//!
//! | Room | Holds |
//! |------|-------|
//! | `route.rs` | the parsed calls `layer::classify` hands this wing, and the one table of task method names |
//! | `tool_call.rs` | a declaring client's `tools/call`: forwarded, raced against the threshold, parked |
//! | `in_time.rs` | the race's first steps: two polls around one turn of the scheduler before the threshold's timer |
//! | `methods.rs` | `tasks/get`, `tasks/update`, `tasks/cancel` over the store |
//! | `own_tasks.rs` | whether the inner server has tasks of its own: then its tasks pass through |
//! | `early.rs` | a long synchronous call answered early: the layer's own SSE head and keep-alives |
//! | `fallback/` | the fallback for clients without tasks: a tool result that names the task, and the two tools that read and cancel it |
//! | `push/` | `subscriptions/listen` for task status: the filter, the stream, a listen mixed with the inner server's stream |
//! | `events/` | task events (MCP Events extension): the event type in `events/list`, poll, stream, webhook subscriptions and their deliverer |

pub(crate) mod early;
pub(crate) mod events;
pub(crate) mod fallback;
mod in_time;
pub(crate) mod methods;
pub(crate) mod own_tasks;
pub(crate) mod push;
pub(crate) mod route;
pub(crate) mod tool_call;
