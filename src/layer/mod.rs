//! [`TasksLayer`], the builder, and the tower face it makes, laid out as
//! tower-http lays out a middleware:
//!
//! | File         | What it holds                                                        |
//! |--------------|----------------------------------------------------------------------|
//! | `mod.rs`     | the builder: settings only, and the one step that builds              |
//! | `tasks.rs`   | [`Tasks`]: the layer built, with the `Drain` and `Admin` handles      |
//! | `shared.rs`  | the one state the services of a built layer share                     |
//! | `service.rs` | [`TasksService`]: a short `call` that starts reading or passes on    |
//! | `future.rs`  | [`ResponseFuture`]: reads the body, then runs what dispatch chose    |
//! | `state.rs`   | the states of that future                                            |
//! | `gather.rs`  | reads a POST body whole, up to a limit, into one buffer              |
//! | `classify/`  | the one parse of a POST: which generation, and which `Route`         |
//! | `dispatch.rs`| picks the handler of a request, with its owner resolved once         |
//! | `tests.rs`   | the builder's unit tests: clones share one build, a drain before it  |

mod classify;
mod dispatch;
mod future;
mod gather;
mod service;
mod shared;
mod state;
mod tasks;

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tower_layer::Layer;

use crate::admin::Admin;
use crate::config::{TasksConfig, WaiterLimits};
use crate::observe::calls::CallObserver;
use crate::owner::{DefaultOwner, ResolveOwner};
use crate::policy::ToolPolicy;
use crate::runtime::drain::Drain;
use crate::runtime::queued::Queued;
use crate::store::TaskStore;

pub use future::ResponseFuture;
pub use service::TasksService;
use shared::Shared;
pub use tasks::Tasks;

/// Makes any MCP Streamable-HTTP service task-capable: the settings, and
/// [`build`](Self::build), which makes the state the services share.
///
/// As a [`Layer`] itself it builds on its first [`layer`](Layer::layer), so
/// that `ServiceBuilder::new().layer(TasksLayer::new(store))` needs no more;
/// clones made before that share what it builds, and a [`drain`](Self::drain)
/// taken before it drains what it builds. A setting changed after it gives a
/// layer that builds anew. With more than one service, or for the handles,
/// [`build`](Self::build) once and layer with the [`Tasks`] it gives.
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
    make_span: Arc<dyn crate::observe::MakeSpan>,
    calls: Option<Arc<dyn CallObserver>>,
    scope: Option<Arc<str>>,
    /// The re-runs taken from the store that wait for a running slot,
    /// counted across what this layer and its clones build.
    queued: Arc<Queued>,
    /// What the first `layer()` of this layer and its clones built, and the
    /// drain handed out before it.
    built: Arc<Built>,
}

/// The state a [`TasksLayer`] used as a [`Layer`] builds on first use.
struct Built {
    tasks: OnceLock<Tasks>,
    /// Handed out by [`TasksLayer::drain`]; tied to `tasks` once built.
    drain: Drain,
}

impl Built {
    fn new(store: &Arc<dyn TaskStore>) -> Arc<Self> {
        Arc::new(Self {
            tasks: OnceLock::new(),
            drain: Drain::pending(store.clone()),
        })
    }
}

impl fmt::Debug for TasksLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TasksLayer")
            .field("config", &self.config)
            .field("scope", &self.scope)
            .field("observe_calls", &self.calls.is_some())
            .field("built", &self.built.tasks.get().is_some())
            .finish_non_exhaustive()
    }
}

impl TasksLayer {
    /// A layer keeping its tasks in `store`, with the default settings
    /// ([`TasksConfig`]) and the [`DefaultOwner`] resolver.
    pub fn new(store: impl TaskStore) -> Self {
        Self::with_store(Arc::new(store))
    }

    /// A layer over a store that is already shared.
    pub fn with_store(store: Arc<dyn TaskStore>) -> Self {
        // Each operation timed, for the store metrics.
        let store: Arc<dyn TaskStore> = Arc::new(crate::observe::store::Measured(store));
        Self {
            config: TasksConfig::default(),
            built: Built::new(&store),
            store,
            owner: Arc::new(DefaultOwner),
            make_span: Arc::new(crate::observe::DefaultMakeSpan),
            calls: None,
            scope: None,
            queued: Arc::default(),
        }
    }

    /// Builds the state the services share, sized by the settings in force:
    /// the one step that makes it. Layer with the [`Tasks`] it gives, and
    /// take the [`Drain`] and [`Admin`] handles from it (see [`Tasks`] for
    /// an example). A layer already used as a [`Layer`] gives what that use
    /// built, so that a drain taken before either drains both.
    pub fn build(self) -> Tasks {
        self.built().clone()
    }

    /// What this layer and its clones build, built now if not yet.
    fn built(&self) -> &Tasks {
        self.built.tasks.get_or_init(|| {
            let shared = Shared::build(
                self.config.clone(),
                self.store.clone(),
                self.owner.clone(),
                (self.make_span.clone(), self.calls.clone()),
                self.scope.clone(),
                self.queued.clone(),
            );
            let tasks = Tasks::new(shared);
            self.built.drain.bind(&tasks.drain());
            tasks
        })
    }

    /// After a setting: a layer that built already builds anew, with the
    /// new settings, for the services it makes from now on; and so does a
    /// clone set apart before either built, which would otherwise serve
    /// with the settings of whichever of them builds first.
    fn changed(mut self) -> Self {
        if self.built.tasks.get().is_some() || Arc::strong_count(&self.built) > 1 {
            self.built = Built::new(&self.store);
        }
        self
    }

    /// How long a call may run before it becomes a task. Zero parks every
    /// call from a declaring client at once, before its first answer.
    pub fn threshold(mut self, threshold: Duration) -> Self {
        self.config.threshold = threshold;
        self.changed()
    }

    /// How long a task lives from its creation (`None`: until the process
    /// ends). TTLs are kept in whole milliseconds, so anything shorter than
    /// one millisecond is raised to one.
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.config.ttl = ttl.map(|ttl| ttl.max(Duration::from_millis(1)));
        self.changed()
    }

    /// The polling interval suggested to clients.
    pub fn poll_interval(mut self, interval: Option<Duration>) -> Self {
        self.config.poll_interval = interval;
        self.changed()
    }

    /// The policy of one tool.
    pub fn tool_policy(mut self, tool: impl Into<String>, policy: ToolPolicy) -> Self {
        self.config.policies.insert(tool.into(), policy);
        self.changed()
    }

    /// The policy of tools without one of their own.
    pub fn default_policy(mut self, policy: ToolPolicy) -> Self {
        self.config.default_policy = policy;
        self.changed()
    }

    /// Where the principal of a request comes from.
    pub fn owner_resolver(mut self, resolver: impl ResolveOwner) -> Self {
        self.owner = Arc::new(resolver);
        self.changed()
    }

    /// How the span of each request the layer handles is made
    /// ([`DefaultMakeSpan`](crate::observe::DefaultMakeSpan) unless set):
    /// a type of yours, or a closure `Fn(&'static str, &Parts) -> Span`.
    pub fn make_span(mut self, make_span: impl crate::observe::MakeSpan) -> Self {
        self.make_span = Arc::new(make_span);
        self.changed()
    }

    /// Tells `observer` of every `tools/call` the layer routes, once, as it
    /// ends: its tool, how long it took, whether it parked and how it ended
    /// (see [`observe::calls`](crate::observe::calls) for which calls, when,
    /// and what counts as failed). [`ToolStats`](crate::observe::ToolStats)
    /// keeps them per tool for a console. Without an observer a call costs
    /// nothing more; with one, an answer in time is followed as it passes.
    ///
    /// ```
    /// use mcp_tasks::observe::ToolStats;
    /// use mcp_tasks::{MemoryTaskStore, TasksLayer};
    ///
    /// let stats = ToolStats::new();
    /// let layer = TasksLayer::new(MemoryTaskStore::new()).observe_calls(stats.clone());
    /// assert!(format!("{layer:?}").contains("observe_calls: true"));
    /// assert!(stats.snapshot().is_empty());
    /// ```
    pub fn observe_calls(mut self, observer: impl CallObserver) -> Self {
        self.calls = Some(Arc::new(observer));
        self.changed()
    }

    /// Keeps request extensions of type `T` for a call the layer may have
    /// to send again on its own.
    ///
    /// A parked call that the inner server sheds (`input_required` with
    /// only a `requestState`) is re-issued in the background, with its
    /// original headers and, of its extensions, [`Principal`](crate::Principal),
    /// tower-mcp's `TokenClaims` (with the `tower-mcp` feature) and the
    /// types named here. Name the types your tools read from the request,
    /// such as the claims of an authentication layer of your own. A call
    /// re-issued for a `tasks/update` carries all of that request's
    /// extensions regardless.
    ///
    /// ```
    /// use mcp_tasks::{MemoryTaskStore, TasksLayer};
    ///
    /// #[derive(Clone)]
    /// struct Tenant(String);
    ///
    /// let layer = TasksLayer::new(MemoryTaskStore::new()).reissue_extension::<Tenant>();
    /// # let _ = layer;
    /// ```
    pub fn reissue_extension<T: Clone + Send + Sync + 'static>(mut self) -> Self {
        self.config.carried.add::<T>();
        self.changed()
    }

    /// Keeps every request extension for a call the layer may have to send
    /// again on its own (see [`reissue_extension`](Self::reissue_extension)).
    /// This clones the request's extensions on every raced `tools/call`,
    /// most of which answer in time; naming the types needed is cheaper.
    pub fn reissue_all_extensions(mut self) -> Self {
        self.config.carried.all();
        self.changed()
    }

    /// The largest JSON POST body the layer buffers; larger ones get HTTP
    /// 413 (one announcing more in its `Content-Length` at once). Every
    /// JSON POST is read, a 2026-07-28 one whatever method its
    /// `Mcp-Method` names, so that no body goes on as something its header
    /// does not say. Requests that are no MCP message (a non-JSON POST,
    /// another route of a wrapped router) keep their own limits.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.config.max_body_bytes = limit;
        self.changed()
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
        self.changed()
    }

    /// The longest TTL a 2025-11-25 client may ask for with `params.task.ttl`
    /// (`None`: any). Until this is called it follows [`ttl`](Self::ttl):
    /// a client can ask for less than the operator's TTL, not more. Without a
    /// request the [`ttl`](Self::ttl) applies.
    pub fn max_ttl(mut self, max: Option<Duration>) -> Self {
        self.config.max_ttl = Some(max.map(|max| max.max(Duration::from_millis(1))));
        self.changed()
    }

    /// How many tasks a 2025-11-25 `tasks/list` page holds (1 to 1000).
    pub fn list_page_size(mut self, size: usize) -> Self {
        self.config.list_page_size = size.clamp(1, 1000);
        self.changed()
    }

    /// How many 2025-11-25 sessions the layer keeps, and how long an idle
    /// one is kept. The least recently used session goes when it is full.
    ///
    /// Sizes shared state (see [`max_running`](Self::max_running)).
    pub fn legacy_sessions(mut self, max: usize, idle: Duration) -> Self {
        self.config.max_sessions = max.max(1);
        self.config.session_idle = idle;
        self.changed()
    }

    /// How often a quiet SSE stream gets a comment, so that proxies that
    /// cut idle connections keep it open (default 15 s): a waiting
    /// 2025-11-25 `tasks/result`, a listen, an SSE answer the layer relays,
    /// and a `tools/call` of a client without tasks whose inner server has
    /// sent no response head after this long: the layer then sends an SSE
    /// head itself, and the answer comes on that stream.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.config.keep_alive = interval.max(Duration::from_millis(10));
        self.changed()
    }

    /// The most live tasks (any status, until their TTL) one principal may
    /// hold; anonymous callers count together as one principal. `None`: no
    /// cap. Default 100.
    ///
    /// A 2026-07-28 call that would park over the cap stays synchronous; a
    /// 2025-11-25 `params.task` over it gets a JSON-RPC error `-32000`.
    pub fn max_tasks_per_principal(mut self, max: Option<u32>) -> Self {
        self.config.quota.per_owner = max;
        self.changed()
    }

    /// The most live tasks in the store, every owner together (`None`: no
    /// cap). Default 10 000. Refusals as for
    /// [`max_tasks_per_principal`](Self::max_tasks_per_principal).
    pub fn max_tasks(mut self, max: Option<u32>) -> Self {
        self.config.quota.total = max;
        self.changed()
    }

    /// The most inner calls running in the background at once (at least
    /// one). Default 1 000. A call that would park while all are taken stays
    /// synchronous; a resumed call waits for a place.
    ///
    /// Like every limit that sizes shared state, it is read when the state
    /// is built ([`build`](Self::build), or the first [`layer`](Layer::layer)).
    /// Set on a layer that built already, it gives a layer that builds
    /// anew, which services made before and drain handles taken before do
    /// not see; so does every other setting.
    pub fn max_running(mut self, max: usize) -> Self {
        self.config.max_running = max.max(1);
        self.changed()
    }

    /// The largest result a parked call may produce, and the largest SSE
    /// event the layer reads (at least 1 KiB). Default 4 MiB. A parked call
    /// over it fails with a clear error, and its response is never buffered
    /// past it. An answer that arrives in time is relayed unchanged (a
    /// larger JSON one streams through unbuffered, as does an SSE one that
    /// starts with its response); an SSE event over it, while the call
    /// races, ends the answer with a JSON-RPC error that names the limit.
    pub fn max_result_bytes(mut self, max: usize) -> Self {
        self.config.max_result_bytes = max.max(1024);
        self.changed()
    }

    /// The most input rounds (MRTR rounds; relayed requests in a
    /// 2025-11-25 session) one task may ask for. Default 16; past it the
    /// task fails.
    pub fn max_input_rounds(mut self, max: u32) -> Self {
        self.config.max_input_rounds = max;
        self.changed()
    }

    /// How long a task may run before it is failed and its inner call
    /// cancelled (`None`: no limit but the TTL). Default 30 minutes.
    ///
    /// Separate from the TTL, which is how long the task is *kept*: a task
    /// is failed in any case a grace before its TTL (a quarter of it, at most
    /// one minute), so that no task is `working` one moment and unknown
    /// the next.
    pub fn max_runtime(mut self, max: Option<Duration>) -> Self {
        self.config.max_runtime = max;
        self.changed()
    }

    /// The most 2025-11-25 `tasks/result` streams waiting on one task, and
    /// on one principal's tasks. Default 4 and 100. A waiter over either
    /// gets a JSON-RPC error `-32000`.
    ///
    /// Sizes shared state (see [`max_running`](Self::max_running)).
    pub fn max_result_waiters(mut self, per_task: u32, per_principal: u32) -> Self {
        self.config.waiters = WaiterLimits {
            per_task,
            per_owner: per_principal,
        };
        self.changed()
    }

    /// The most `subscriptions/listen` streams asking for task status per
    /// principal and in all (defaults 16 and 10 000); a listen over either
    /// gets a JSON-RPC error (`-32000`) instead of a stream.
    ///
    /// Sizes shared state (see [`max_running`](Self::max_running)).
    pub fn max_subscriptions(mut self, per_principal: u32, total: u32) -> Self {
        self.config.subscriptions.per_owner = per_principal;
        self.config.subscriptions.total = total;
        self.changed()
    }

    /// The most task ids one `subscriptions/listen` may ask for (default
    /// 100); a listen asking for more is refused (`-32602`).
    ///
    /// Sizes shared state (see [`max_running`](Self::max_running)).
    pub fn max_subscription_task_ids(mut self, max: usize) -> Self {
        self.config.subscriptions.task_ids = max;
        self.changed()
    }

    /// Lets a parked call of `tool` run again, up to `attempts` runs in all,
    /// when the process that ran it stops (a crash, a `kill -9`, a deploy),
    /// over a store that outlives the process (`SqliteTaskStore`). Only for
    /// tools that are safe to run twice: the tool may have done part of its
    /// work, or all of it, before the process stopped. `attempts` of 1 (the
    /// default) runs a call at most once; the task then fails with a reason.
    ///
    /// What a re-run needs is stored with the task when the call is parked:
    /// the `tools/call` params as the layer forwards them, the request's
    /// URI and the headers a re-issued call carries (its credentials
    /// included, so protect the store as you would those), capped at
    /// `max_body_bytes`. Request extensions do not outlive the process: a
    /// re-run carries none. A re-run keeps the task's TTL and its
    /// `max_runtime`, both from the task's creation; it starts the call
    /// afresh (input answered in earlier rounds is not replayed); a
    /// cancelled or expired task is never run again. The layer takes the
    /// store's waiting re-runs with the first request it serves, and a
    /// [`Drain`] whose grace runs out leaves a re-runnable call `working`
    /// for the next process instead of failing it.
    ///
    /// ```
    /// use mcp_tasks::{MemoryTaskStore, TasksLayer};
    ///
    /// let layer = TasksLayer::new(MemoryTaskStore::new()).tool_retry("reindex", 3);
    /// assert_eq!(layer.config().retry_for("reindex"), 3);
    /// assert_eq!(layer.config().retry_for("send_email"), 1);
    /// ```
    pub fn tool_retry(mut self, tool: impl Into<String>, attempts: u32) -> Self {
        self.config.retries.insert(tool.into(), attempts.max(1));
        self.changed()
    }

    /// Whether a tool the inner server marks `idempotentHint: true` in its
    /// `tools/list` may run again (3 runs in all) without a
    /// [`tool_retry`](Self::tool_retry) of its own (default: yes; a
    /// `tool_retry` names the number, 1 to forbid). The layer reads the
    /// inner server's `tools/list` when it first parks such a call over a
    /// store that keeps re-runs, with that call's credentials, and again
    /// after five minutes.
    pub fn retry_hints(mut self, on: bool) -> Self {
        self.config.retry_hints = on;
        self.changed()
    }

    /// Turns on the fallback for clients that know no tasks, for every tool
    /// (off by default: it changes what a tool answers). Such a client's
    /// `tools/call` still running after `after` is answered with an
    /// ordinary tool result that names the task its work goes on as, and
    /// the layer adds two tools to `tools/list` (`get_task_result` and
    /// `cancel_task`, see [`fallback_tool_names`](Self::fallback_tool_names))
    /// with which the client, or the model driving it, reads the outcome or
    /// the progress so far, and cancels. The task is like any other:
    /// owned, limited, kept until its TTL. Tools with the `Never` or
    /// `Required` policy never fall back. Pick `after` longer than the
    /// threshold and shorter than your clients' timeouts.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_tasks::{MemoryTaskStore, TasksLayer};
    ///
    /// let layer = TasksLayer::new(MemoryTaskStore::new())
    ///     .fallback_after(Duration::from_secs(20))
    ///     .tool_fallback("render", Some(Duration::from_secs(5)))
    ///     .tool_fallback("send_email", None);
    /// let config = layer.config();
    /// assert_eq!(config.fallback_after("search"), Some(Duration::from_secs(20)));
    /// assert_eq!(config.fallback_after("render"), Some(Duration::from_secs(5)));
    /// assert_eq!(config.fallback_after("send_email"), None);
    /// ```
    pub fn fallback_after(mut self, after: Duration) -> Self {
        self.config.fallback.every = Some(after);
        self.changed()
    }

    /// The fallback for one tool: its own time, or `None` for never (see
    /// [`fallback_after`](Self::fallback_after)). Naming a time turns the
    /// fallback on for that tool alone when no global one is set.
    pub fn tool_fallback(mut self, tool: impl Into<String>, after: Option<Duration>) -> Self {
        self.config.fallback.tools.insert(tool.into(), after);
        self.changed()
    }

    /// The names of the two tools the fallback adds (default
    /// `get_task_result` and `cancel_task`): rename them when the inner
    /// server has tools of those names, which the layer would shadow.
    pub fn fallback_tool_names(
        mut self,
        result: impl Into<String>,
        cancel: impl Into<String>,
    ) -> Self {
        self.config.fallback.names = crate::config::fallback::Names {
            result: result.into(),
            cancel: cancel.into(),
        };
        self.changed()
    }

    /// Offers task events (the MCP Events extension): every status change
    /// of a caller's tasks by `events/poll`, `events/stream` and, when
    /// `events` has a transport, signed webhooks. Needs a store that logs
    /// status changes ([`TaskStore::status_events`]); off by default.
    pub fn events(mut self, events: crate::EventsConfig) -> Self {
        self.config.events = Some(events);
        self.changed()
    }

    /// The name of the inner server this layer wraps. Tasks made under one
    /// scope are unknown under every other, byte for byte, even in one
    /// store: give each route its own scope when clones of one layer wrap
    /// different servers, or a `tasks/update` sent through one route could
    /// re-issue another route's call on the wrong server. Replicas of one
    /// server over a shared store use the same scope (or none). Over one
    /// store, scope every layer or none: an unscoped layer keys tasks by the
    /// bare principal.
    pub fn scope(mut self, name: impl Into<Arc<str>>) -> Self {
        self.scope = Some(name.into());
        self.changed()
    }

    /// A handle that drains the services this layer and its clones make: it
    /// stops starting tasks, waits for running ones and fails the rest (or
    /// hands them over: [`tool_retry`](Self::tool_retry)). Taken before the
    /// first [`layer`](Layer::layer) or [`build`](Self::build), it drains
    /// what that builds; [`Tasks::drain`] is the same without the wait.
    pub fn drain(&self) -> Drain {
        self.built.drain.clone()
    }

    /// The operator's view of this layer's store: every owner's tasks,
    /// counted, listed, cancelled or deleted ([`Admin`]).
    pub fn admin(&self) -> Admin {
        Admin::new(self.store.clone(), self.queued.clone())
    }

    /// The settings in force.
    pub fn config(&self) -> &TasksConfig {
        &self.config
    }
}

impl<S> Layer<S> for TasksLayer {
    type Service = TasksService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        self.built().layer(inner)
    }
}

#[cfg(test)]
mod tests;
