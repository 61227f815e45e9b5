//! [`TasksLayer`]: the layer and its settings.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tower_layer::Layer;

use crate::config::TasksConfig;
use crate::legacy::sessions::{SessionLimits, Sessions};
use crate::owner::{DefaultOwner, ResolveOwner};
use crate::policy::ToolPolicy;
use crate::service::{Shared, TasksService};
use crate::store::TaskStore;

/// Makes any MCP Streamable-HTTP service task-capable.
///
/// ```
/// use std::time::Duration;
/// use mcp_tasks::{MemoryTaskStore, TasksLayer, ToolPolicy};
///
/// let layer = TasksLayer::new(MemoryTaskStore::new())
///     .threshold(Duration::from_millis(300))
///     .tool_policy("export_all", ToolPolicy::Always)
///     .tool_policy("whoami", ToolPolicy::Never);
/// assert_eq!(layer.config().threshold(), Duration::from_millis(300));
/// ```
#[derive(Clone)]
pub struct TasksLayer {
    config: TasksConfig,
    store: Arc<dyn TaskStore>,
    owner: Arc<dyn ResolveOwner>,
    /// The 2025-11-25 sessions, shared by every service this layer (or a
    /// clone of it) makes; created with the settings in force at the first
    /// [`Layer::layer`].
    sessions: Arc<OnceLock<Arc<Sessions>>>,
}

impl TasksLayer {
    /// A layer keeping its tasks in `store`, with the default settings
    /// ([`TasksConfig`]) and the [`DefaultOwner`] resolver.
    pub fn new(store: impl TaskStore) -> Self {
        Self::with_store(Arc::new(store))
    }

    /// A layer over a store that is already shared.
    pub fn with_store(store: Arc<dyn TaskStore>) -> Self {
        Self {
            config: TasksConfig::default(),
            store,
            owner: Arc::new(DefaultOwner),
            sessions: Arc::new(OnceLock::new()),
        }
    }

    /// How long a call may run before it becomes a task. Zero parks every
    /// call from a declaring client at once, before its first answer.
    pub fn threshold(mut self, threshold: Duration) -> Self {
        self.config.threshold = threshold;
        self
    }

    /// How long a task lives from its creation (`None`: until the process
    /// ends). TTLs are kept in whole milliseconds, so anything shorter than
    /// one millisecond is raised to one.
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.config.ttl = ttl.map(|ttl| ttl.max(Duration::from_millis(1)));
        self
    }

    /// The polling interval suggested to clients.
    pub fn poll_interval(mut self, interval: Option<Duration>) -> Self {
        self.config.poll_interval = interval;
        self
    }

    /// The policy of one tool.
    pub fn tool_policy(mut self, tool: impl Into<String>, policy: ToolPolicy) -> Self {
        self.config.policies.insert(tool.into(), policy);
        self
    }

    /// The policy of tools without one of their own.
    pub fn default_policy(mut self, policy: ToolPolicy) -> Self {
        self.config.default_policy = policy;
        self
    }

    /// Where the principal of a request comes from.
    pub fn owner_resolver(mut self, resolver: impl ResolveOwner) -> Self {
        self.owner = Arc::new(resolver);
        self
    }

    /// The largest POST body the layer buffers; larger ones get HTTP 413.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.config.max_body_bytes = limit;
        self
    }

    /// Whether `tasks/get`, `tasks/update` and `tasks/cancel` without an
    /// `Mcp-Name` header are rejected (`-32020`, HTTP 400). Off by default:
    /// the `taskId` in the body is authoritative and some clients leave the
    /// header out. A present `Mcp-Name` that disagrees with the `taskId` is
    /// refused either way, and `tools/call` always needs `Mcp-Name`. Turn it
    /// on to hold clients to the extension's rule that they MUST send
    /// `Mcp-Name: <taskId>` on these methods.
    pub fn require_task_name_header(mut self, required: bool) -> Self {
        self.config.require_task_name_header = required;
        self
    }

    /// The longest TTL a 2025-11-25 client may ask for with `params.task.ttl`
    /// (`None`: any). Until this is called it follows [`ttl`](Self::ttl):
    /// a client can ask for less than the operator's TTL, not more. Without a
    /// request the [`ttl`](Self::ttl) applies.
    pub fn max_ttl(mut self, max: Option<Duration>) -> Self {
        self.config.max_ttl = Some(max.map(|max| max.max(Duration::from_millis(1))));
        self
    }

    /// How many tasks a 2025-11-25 `tasks/list` page holds (1 to 1000).
    pub fn list_page_size(mut self, size: usize) -> Self {
        self.config.list_page_size = size.clamp(1, 1000);
        self
    }

    /// How many 2025-11-25 sessions the layer keeps, and how long an idle
    /// one is kept. The least recently used session goes when it is full.
    pub fn legacy_sessions(mut self, max: usize, idle: Duration) -> Self {
        self.config.max_sessions = max.max(1);
        self.config.session_idle = idle;
        self
    }

    /// How often a waiting 2025-11-25 `tasks/result` stream sends an SSE
    /// comment, so that idle proxies keep it open.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.config.keep_alive = interval.max(Duration::from_millis(10));
        self
    }

    /// The settings in force.
    pub fn config(&self) -> &TasksConfig {
        &self.config
    }
}

impl<S> Layer<S> for TasksLayer {
    type Service = TasksService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let sessions = self.sessions.get_or_init(|| {
            Arc::new(Sessions::new(SessionLimits {
                max: self.config.max_sessions,
                idle: self.config.session_idle,
            }))
        });
        let shared = Shared {
            config: self.config.clone(),
            store: self.store.clone(),
            owner: self.owner.clone(),
            sessions: sessions.clone(),
        };
        TasksService::new(inner, Arc::new(shared))
    }
}
