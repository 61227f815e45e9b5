//! [`Tasks`]: a [`TasksLayer`](super::TasksLayer) built, the one step that
//! makes the state its services share.
//!
//! | Made by                    | Gives                                                       |
//! |----------------------------|-------------------------------------------------------------|
//! | [`TasksLayer::build`](super::TasksLayer::build) | the state, sized by the settings in force then |
//! | [`Tasks::layer`](tower_layer::Layer::layer)     | a service over that state; every service and clone shares it |
//! | [`Tasks::drain`]           | the handle that drains that state's background work          |
//! | [`Tasks::admin`]           | the operator's view of the store                             |

use std::fmt;
use std::sync::Arc;

use tower_layer::Layer;

use super::TasksService;
use super::shared::Shared;
use crate::admin::Admin;
use crate::config::TasksConfig;
use crate::runtime::drain::Drain;

/// A [`TasksLayer`](super::TasksLayer) built: the state that every service
/// it makes shares (the background work and its limits, the sessions, the
/// subscriptions), and the handles on that state. Cheap to clone; clones
/// share the state.
///
/// Build once, after the settings; then take the handles and layer the
/// service:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer};
/// use tower::ServiceBuilder;
///
/// let tasks = TasksLayer::new(MemoryTaskStore::new())
///     .max_running(64)
///     .threshold(Duration::from_millis(300))
///     .build();
/// let drain = tasks.drain(); // on Ctrl-C: drain.shutdown(grace).await
/// let admin = tasks.admin(); // every owner's tasks, for the operator
/// let service = ServiceBuilder::new()
///     .layer(tasks.clone())
///     .service(tower::service_fn(|_: http::Request<RequestBody<String>>| async {
///         Ok::<_, Infallible>(http::Response::new(String::new()))
///     }));
/// assert_eq!(service.config().max_running(), 64);
/// assert_eq!(admin.counts().await.unwrap().total(), 0);
/// let report = drain.shutdown(Duration::from_secs(1)).await;
/// assert!(report.finished);
/// # }
/// ```
#[derive(Clone)]
pub struct Tasks {
    shared: Arc<Shared>,
    drain: Drain,
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("config", self.config())
            .field("scope", &self.shared.runtime.scope)
            .field("drain", &self.drain)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// The handles on `shared`.
    pub(crate) fn new(shared: Shared) -> Self {
        let runtime = &shared.runtime;
        let drain = Drain::new(
            runtime.background.clone(),
            runtime.store.clone(),
            runtime.waiting.clone(),
            runtime.config.poll_interval(),
        );
        Self {
            shared: Arc::new(shared),
            drain,
        }
    }

    /// A handle that drains the services this state serves: it stops
    /// starting tasks, waits for running ones and fails the rest (or hands
    /// them over: [`tool_retry`](super::TasksLayer::tool_retry)).
    pub fn drain(&self) -> Drain {
        self.drain.clone()
    }

    /// The operator's view of the store: every owner's tasks, counted,
    /// listed, cancelled or deleted ([`Admin`]).
    pub fn admin(&self) -> Admin {
        Admin::new(
            self.shared.runtime.store.clone(),
            self.shared.runtime.queued.clone(),
        )
    }

    /// The settings in force.
    pub fn config(&self) -> &TasksConfig {
        &self.shared.runtime.config
    }
}

impl<S> Layer<S> for Tasks {
    type Service = TasksService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        self.shared.deliver_once();
        TasksService::new(inner, self.shared.clone())
    }
}
