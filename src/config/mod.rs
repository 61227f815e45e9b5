//! The layer's settings and their defaults.

pub(crate) mod events;
pub(crate) mod fallback;

use std::collections::HashMap;
use std::time::Duration;

use self::fallback::Fallback;
use crate::carry::Carried;
use crate::policy::ToolPolicy;
use crate::store::Quota;

/// The caps on 2025-11-25 `tasks/result` waiters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaiterLimits {
    pub per_task: u32,
    pub per_owner: u32,
}

/// The caps on `subscriptions/listen` streams that ask for task status.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SubscriptionLimits {
    pub per_owner: u32,
    pub total: u32,
    pub task_ids: usize,
}

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
/// | `keep_alive`       | 15 s      | a quiet SSE stream (a waiting `tasks/result`, a listen, a relayed SSE answer, a long call of a client without tasks, which gets an SSE head of the layer's after this long) gets a comment this often, well under the 30–60 s idle timeouts of common proxies |
///
/// Limits, each on by default, so that one client cannot make the server
/// hold or run unbounded work (see the README's "Limits"):
///
/// | Limit                          | Default   | Why this default                                                            |
/// |--------------------------------|-----------|-----------------------------------------------------------------------------|
/// | `max_tasks_per_principal`      | 100       | live tasks (any status, until their TTL) of one principal; anonymous callers share one count. A hundred concurrent long tool runs is far beyond one agent's needs, and bounds what one client makes the store hold |
/// | `max_tasks`                    | 10 000    | live tasks in the store, every owner together: about 10 000 × (0.4 KB + the result) of memory |
/// | `max_running`                  | 1 000     | inner calls running in the background at once: each is a tool run the server pays for, and each parked call costs tens of KB while it runs |
/// | `max_result_bytes`             | 4 MiB     | a parked call's result (or one SSE event) is held in memory until the TTL; the same size as `max_body_bytes`, so a tool's answer may be as large as its request |
/// | `max_input_rounds`             | 16        | MRTR rounds (2025-11-25: relayed requests) per task; real tools ask once or twice, a loop asks forever |
/// | `max_runtime`                  | 30 min    | how long a task may run; half the default TTL, so that the outcome of the longest run stays readable for at least as long |
/// | `max_result_waiters`           | 4 per task, 100 per principal | 2025-11-25 `tasks/result` streams, each an open connection polling the store |
/// | `max_subscriptions`            | 16 per principal, 10 000 in all | `subscriptions/listen` streams asking for task status, each an open connection the layer feeds |
/// | `max_subscription_task_ids`    | 100       | task ids in one listen: each is a store read per change and one entry in the layer's watch table |
///
/// At a limit nothing is dropped: a 2026-07-28 call that would park stays
/// synchronous, exactly as without the layer; a 2025-11-25 `params.task`
/// and a waiter over a cap get a JSON-RPC error.
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
    pub(crate) quota: Quota,
    pub(crate) max_running: usize,
    pub(crate) max_result_bytes: usize,
    pub(crate) max_input_rounds: u32,
    pub(crate) max_runtime: Option<Duration>,
    pub(crate) waiters: WaiterLimits,
    pub(crate) subscriptions: SubscriptionLimits,
    /// The extensions a parked call keeps for re-issuing.
    pub(crate) carried: Carried,
    /// Tools whose call may run again after its process stopped: how many
    /// runs each may have in all.
    pub(crate) retries: HashMap<String, u32>,
    /// Whether a tool the inner server marks `idempotentHint` may run again
    /// without a `tool_retry` of its own.
    pub(crate) retry_hints: bool,
    /// The fallback for clients without tasks (off by default).
    pub(crate) fallback: Fallback,
    /// Task events (MCP Events extension; off by default).
    pub(crate) events: Option<events::EventsConfig>,
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
            quota: Quota {
                per_owner: Some(100),
                total: Some(10_000),
            },
            max_running: 1_000,
            max_result_bytes: 4 * 1024 * 1024,
            max_input_rounds: 16,
            max_runtime: Some(Duration::from_secs(30 * 60)),
            subscriptions: SubscriptionLimits {
                per_owner: 16,
                total: 10_000,
                task_ids: 100,
            },
            waiters: WaiterLimits {
                per_task: 4,
                per_owner: 100,
            },
            carried: Carried::default(),
            retries: HashMap::new(),
            retry_hints: true,
            fallback: Fallback::default(),
            events: None,
        }
    }
}

impl TasksConfig {
    /// How many runs in all a call of `tool` may have when the process
    /// running it stops (1: at most once, the default).
    /// The inner server's `idempotentHint` is not looked at here.
    pub fn retry_for(&self, tool: &str) -> u32 {
        self.retries.get(tool).copied().unwrap_or(1)
    }

    /// Whether tools the inner server marks `idempotentHint` may run again
    /// (default: yes).
    pub fn retry_hints(&self) -> bool {
        self.retry_hints
    }

    /// How long a call of `tool` by a client without tasks runs before it
    /// is answered with a task to read later (`None`: never; the default).
    pub fn fallback_after(&self, tool: &str) -> Option<Duration> {
        match self.policy_for(tool) {
            ToolPolicy::Never | ToolPolicy::Required => None,
            _ => self.fallback.after(tool),
        }
    }

    /// The names of the tools that read and cancel such a task.
    pub fn fallback_tool_names(&self) -> (&str, &str) {
        (&self.fallback.names.result, &self.fallback.names.cancel)
    }

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

    /// The most live tasks of one principal (`None`: no cap).
    pub fn max_tasks_per_principal(&self) -> Option<u32> {
        self.quota.per_owner
    }

    /// The most live tasks in the store (`None`: no cap).
    pub fn max_tasks(&self) -> Option<u32> {
        self.quota.total
    }

    /// The most inner calls running in the background at once.
    pub fn max_running(&self) -> usize {
        self.max_running
    }

    /// The largest result (or SSE event) of a parked call.
    pub fn max_result_bytes(&self) -> usize {
        self.max_result_bytes
    }

    /// The most input rounds of one task.
    pub fn max_input_rounds(&self) -> u32 {
        self.max_input_rounds
    }

    /// How long a task may run (`None`: until its TTL's grace).
    pub fn max_runtime(&self) -> Option<Duration> {
        self.max_runtime
    }

    /// The most 2025-11-25 `tasks/result` waiters per task and per principal.
    pub fn max_result_waiters(&self) -> (u32, u32) {
        (self.waiters.per_task, self.waiters.per_owner)
    }

    /// The most task status subscriptions per principal and in all.
    pub fn max_subscriptions(&self) -> (u32, u32) {
        (self.subscriptions.per_owner, self.subscriptions.total)
    }

    /// The most task ids one subscription may ask for.
    pub fn max_subscription_task_ids(&self) -> usize {
        self.subscriptions.task_ids
    }
}
