//! The state one built layer ([`Tasks`](crate::Tasks)) and every service
//! it makes share: built once, by [`TasksLayer::build`](crate::TasksLayer::build),
//! from the settings in force then.
//!
//! | Part        | Holds                                                   | Sized by                       |
//! |-------------|---------------------------------------------------------|--------------------------------|
//! | `runtime`   | the engine: settings, store, owner resolver, scope, the background work, the tasks waiting for input, the tools' hints, the hooks (spans, the call observer) | `max_running` |
//! | `sessions`  | the 2025-11-25 sessions                                  | `legacy_sessions`              |
//! | `waiters`   | the 2025-11-25 `tasks/result` waiters                    | `max_result_waiters`           |
//! | `hub`       | the task status subscriptions and the changes they watch | `max_subscriptions`            |
//! | `own`       | whether the inner server has tasks of its own            |                                |
//! | `recovering`| whether the store's tasks to run again were asked for   |                                |
//! | `events`    | task events: the streams' caps, the webhook deliverer's wake | `events`                  |
//!
//! The engine knows no protocol generation; the state of each generation
//! sits beside it and is handed to that generation's handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::TasksConfig;
use crate::legacy::sessions::{SessionLimits, Sessions};
use crate::legacy::waiters::Waiters;
use crate::modern::events::{Events, deliver};
use crate::modern::own_tasks::OwnTasks;
use crate::observe::MakeSpan;
use crate::observe::calls::CallObserver;
use crate::owner::ResolveOwner;
use crate::runtime::Runtime;
use crate::runtime::background::Background;
use crate::runtime::feed::Hub;
use crate::runtime::queued::Queued;
use crate::store::TaskStore;

/// What the services of one built layer share.
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
    /// Set once the webhook deliverer was started.
    delivering: AtomicBool,
}

impl Shared {
    /// The state `config` sizes, over `store`, with owners from `resolver`
    /// under `scope`; `calls` is told of each call as it ends.
    pub(crate) fn build(
        config: TasksConfig,
        store: Arc<dyn TaskStore>,
        resolver: Arc<dyn ResolveOwner>,
        (make_span, calls): (Arc<dyn MakeSpan>, Option<Arc<dyn CallObserver>>),
        scope: Option<Arc<str>>,
        queued: Arc<Queued>,
    ) -> Self {
        let background = Arc::new(Background::new(config.max_running));
        let sessions = Sessions::new(SessionLimits {
            max: config.max_sessions,
            idle: config.session_idle,
        });
        Self {
            sessions: Arc::new(sessions),
            waiters: Arc::new(Waiters::new(config.waiters)),
            hub: Arc::new(Hub::new(config.subscriptions, background.clone())),
            own: Arc::default(),
            recovering: AtomicBool::new(false),
            events: config
                .events
                .clone()
                .map(|events| Arc::new(Events::new(events))),
            delivering: AtomicBool::new(false),
            runtime: Arc::new(Runtime {
                config,
                store,
                resolver,
                scope,
                background,
                waiting: Arc::default(),
                hints: Arc::default(),
                make_span,
                calls,
                quiet: Default::default(),
                queued,
            }),
        }
    }
}

impl Shared {
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
