//! The layer's metrics, recorded through the [`metrics`](https://docs.rs/metrics)
//! facade. Install a recorder (e.g. `metrics-exporter-prometheus`) to see
//! them; the layer installs none.
//!
//! | Name | Kind | Labels | Unit | What |
//! |------|------|--------|------|------|
//! | `mcp_tasks_created_total` | counter | | tasks | tasks created (parked calls, 2025-11-25 `params.task` calls) |
//! | `mcp_tasks_terminal_total` | counter | `status`: `completed`, `failed`, `cancelled`, `expired`, `deleted` | tasks | tasks that reached a terminal state, as this instance saw it (`deleted`: removed by the operator before it ended) |
//! | `mcp_tasks_input_required_total` | counter | | rounds | input rounds asked for by parked tools |
//! | `mcp_tasks_resumed_total` | counter | | rounds | input rounds answered, the call re-issued |
//! | `mcp_tasks_refused_total` | counter | `reason`: `draining`, `running`, `quota_owner`, `quota_total`, `body_size` | requests | refusals at a limit |
//! | `mcp_tasks_live` | gauge | `status` | tasks | live tasks in the whole store, set by [`Admin::record_live`](crate::Admin::record_live) (the gateway: every 10 s with `--metrics`) |
//! | `mcp_tasks_running` | gauge | | calls | parked calls running in the background now |
//! | `mcp_tasks_time_to_park_seconds` | histogram | | seconds | from the request's arrival to the task's creation |
//! | `mcp_tasks_duration_seconds` | histogram | `status` | seconds | from parking to the terminal state, for tasks parked and ended on this instance |
//! | `mcp_tasks_get_seconds` | histogram | | seconds | `tasks/get` answered by the layer (2026-07-28) |
//! | `mcp_tasks_store_seconds` | histogram | `op` | seconds | one task store operation (`create`, `get`, `set_status_message`, `complete`, `fail`, `cancel`, `require_input`, `answer_input`, `list`) |
//! | `mcp_tasks_store_errors_total` | counter | `op` | errors | task store operations that failed (not "not found") |

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
