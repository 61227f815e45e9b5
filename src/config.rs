//! The layer's settings and their defaults.

use std::collections::HashMap;
use std::time::Duration;

use crate::policy::ToolPolicy;

/// Settings shared by every clone of a [`TasksService`](crate::TasksService).
///
/// | Setting            | Default   | Why this default                                                                 |
/// |--------------------|-----------|----------------------------------------------------------------------------------|
/// | `threshold`        | 500 ms    | interactive tools answer well within it and stay synchronous; a call still running after half a second is likely to run for seconds, and is parked long before any 10–60 s client or proxy timeout |
/// | `ttl`              | 1 hour    | counts from creation, so it must cover the run time plus the time a client needs to come back for the outcome |
/// | `poll_interval`    | 1 s       | one cheap read per second per task; a finished task is seen within a second   |
/// | `max_body_bytes`   | 4 MiB     | every POST is buffered to be classified; this bounds that buffer                |
/// | `require_task_name_header` | off | the body's `taskId` is authoritative: a *mismatched* `Mcp-Name` on `tasks/get`, `tasks/update`, `tasks/cancel` is always refused (`-32020`), but a *missing* one is accepted, because real clients (Python ones among them) send `tasks/get` without it; the header only helps load balancers route, and `tools/call` still requires it |
/// | `max_ttl`          | the `ttl` | 2025-11-25 clients ask for a TTL; honoured up to this, so a client cannot keep a task longer than the operator chose unless the operator raises it |
/// | `list_page_size`   | 100       | `tasks/list` pages: one store read each, small enough to answer in a millisecond |
/// | `max_sessions`     | 10 000    | bounds what the layer keeps of 2025-11-25 sessions (about 100 B each)     |
/// | `session_idle`     | 1 hour    | a 2025-11-25 session with no request for this long is forgotten            |
/// | `keep_alive`       | 15 s      | a waiting `tasks/result` sends an SSE comment this often, well under the 30–60 s idle timeouts of common proxies |
#[derive(Clone, Debug)]
pub struct TasksConfig {
    pub(crate) threshold: Duration,
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll_interval: Option<Duration>,
    pub(crate) default_policy: ToolPolicy,
    pub(crate) policies: HashMap<String, ToolPolicy>,
    pub(crate) max_body_bytes: usize,
    pub(crate) require_task_name_header: bool,
    /// `None`: the same as `ttl`; `Some(cap)`: set with `max_ttl`.
    pub(crate) max_ttl: Option<Option<Duration>>,
    pub(crate) list_page_size: usize,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle: Duration,
    pub(crate) keep_alive: Duration,
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            threshold: Duration::from_millis(500),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Some(Duration::from_secs(1)),
            default_policy: ToolPolicy::Threshold,
            policies: HashMap::new(),
            max_body_bytes: 4 * 1024 * 1024,
            require_task_name_header: false,
            max_ttl: None,
            list_page_size: 100,
            max_sessions: 10_000,
            session_idle: Duration::from_secs(3600),
            keep_alive: Duration::from_secs(15),
        }
    }
}

impl TasksConfig {
    /// The policy of the named tool.
    pub fn policy_for(&self, tool: &str) -> ToolPolicy {
        self.policies
            .get(tool)
            .copied()
            .unwrap_or(self.default_policy)
    }

    /// The latency threshold after which a call is parked.
    pub fn threshold(&self) -> Duration {
        self.threshold
    }

    /// The task lifetime from creation; `None` is unlimited.
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// The suggested polling interval.
    pub fn poll_interval(&self) -> Option<Duration> {
        self.poll_interval
    }

    /// The longest TTL a 2025-11-25 client may ask for (`None`: any).
    pub fn max_ttl(&self) -> Option<Duration> {
        self.max_ttl.unwrap_or(self.ttl)
    }

    /// How many tasks one `tasks/list` page holds at most.
    pub fn list_page_size(&self) -> usize {
        self.list_page_size
    }

    /// How often a waiting `tasks/result` stream sends a keep-alive comment.
    pub fn keep_alive(&self) -> Duration {
        self.keep_alive
    }

    /// The largest request body the layer buffers.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }
}
