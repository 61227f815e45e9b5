//! What the services of one layer share: the state sized by its limits
//! ([`Core`], built once), and per `layer()` the engine over it
//! ([`Shared`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::TasksConfig;
use crate::legacy::sessions::{SessionLimits, Sessions};
use crate::legacy::waiters::Waiters;
use crate::modern::events::{Events, deliver};
use crate::modern::own_tasks::OwnTasks;
use crate::observe::Waiting;
use crate::runtime::background::Background;
use crate::runtime::feed::Hub;
use crate::runtime::{Hints, Runtime};

/// The state every service of a layer and its clones shares, built from
/// the layer's limits the first time one of them is needed.
pub(crate) struct Core {
    /// The background work, capped by `max_running`.
    pub background: Arc<Background>,
    /// The traces of tasks waiting for input, for their resume.
    pub waiting: Arc<Waiting>,
    /// The tools the inner server marks idempotent, as last read.
    pub hints: Arc<Hints>,
    /// The 2025-11-25 sessions.
    pub sessions: Arc<Sessions>,
    /// The 2025-11-25 `tasks/result` waiters.
    pub waiters: Arc<Waiters>,
    /// The task status subscriptions and the changes they watch.
    pub hub: Arc<Hub>,
    /// Whether the inner server has tasks of its own.
    pub own: Arc<OwnTasks>,
    /// Task events, when on.
    pub events: Option<Arc<Events>>,
    /// Set once the webhook deliverer was started.
    pub delivering: Arc<AtomicBool>,
}

impl Core {
    /// The state `config`'s limits size.
    pub(crate) fn new(config: &TasksConfig) -> Self {
        let background = Arc::new(Background::new(config.max_running));
        Self {
            waiting: Arc::default(),
            hints: Arc::default(),
            sessions: Arc::new(Sessions::new(SessionLimits {
                max: config.max_sessions,
                idle: config.session_idle,
            })),
            waiters: Arc::new(Waiters::new(config.waiters)),
            hub: Arc::new(Hub::new(config.subscriptions, background.clone())),
            own: Arc::default(),
            events: config
                .events
                .clone()
                .map(|events| Arc::new(Events::new(events))),
            delivering: Arc::default(),
            background,
        }
    }
}

/// What one `layer()` call's service (and its clones) works with: the
/// engine, and the state of each protocol generation, which the engine
/// knows nothing of and which is handed to that generation's handlers.
pub(crate) struct Shared {
    pub runtime: Arc<Runtime>,
    /// The 2025-11-25 sessions the layer serves tasks in.
    pub sessions: Arc<Sessions>,
    /// Waiters on 2025-11-25 `tasks/result`.
    pub waiters: Arc<Waiters>,
    /// The task status subscriptions and the changes they watch.
    pub hub: Arc<Hub>,
    /// Whether the inner server has tasks of its own (2026-07-28).
    pub own: Arc<OwnTasks>,
    /// Set once the store's tasks to run again were asked for (with the
    /// first request, which brings the inner service to run them on).
    pub recovering: AtomicBool,
    /// Task events, when on.
    pub events: Option<Arc<Events>>,
    delivering: Arc<AtomicBool>,
}

impl Shared {
    /// The engine over `core` for `runtime`'s settings.
    pub(crate) fn new(runtime: Runtime, core: &Core) -> Self {
        Self {
            runtime: Arc::new(runtime),
            sessions: core.sessions.clone(),
            waiters: core.waiters.clone(),
            hub: core.hub.clone(),
            own: core.own.clone(),
            recovering: AtomicBool::new(false),
            events: core.events.clone(),
            delivering: core.delivering.clone(),
        }
    }

    /// Starts the webhook deliverer of the layer, once, when a tokio
    /// runtime runs this thread (at `layer()`, else at the first request).
    pub(crate) fn deliver_once(&self) {
        let Some(events) = &self.events else { return };
        if self.delivering.load(Ordering::Relaxed)
            || tokio::runtime::Handle::try_current().is_err()
            || self.delivering.swap(true, Ordering::AcqRel)
        {
            return;
        }
        deliver::start(self.runtime.clone(), events.clone());
    }
}
