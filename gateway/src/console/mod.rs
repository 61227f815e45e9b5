//! The operator's console: a page in the browser that shows the layer's
//! tasks live, per-tool figures, the upstream and the store, and cancels or
//! deletes a task.
//!
//! [`Console::router`] is an axum [`Router`] under `/console`, meant for an
//! operator's listener (the gateway mounts it beside `/metrics`), never the
//! clients' one. Everything it serves is in the binary: one HTML page, one
//! script, one style sheet, no build step and nothing fetched from the
//! network.
//!
//! | Route | What |
//! |-------|------|
//! | `GET /console` | the page, or the sign-in form without a session |
//! | `POST /console/login` | checks the credential, sets the session cookie |
//! | `POST /console/logout` | ends the session |
//! | `GET /console/console.js`, `/console/console.css` | the page's script and style |
//! | `GET /console/api/session` | the session's token for state-changing requests |
//! | `GET /console/api/tasks` | one page of tasks, filtered ([`list`]) |
//! | `GET /console/api/feed` | the tasks that change, as SSE ([`feed`]) |
//! | `GET /console/api/overview` | per-tool figures, the upstream, the store ([`overview`]) |
//! | `POST /console/api/tasks/{id}/cancel`, `…/delete` | the operator's actions ([`actions`]) |
//!
//! **Who gets in** ([`access`]): a request carries the operator's
//! [`Credential`] as `Authorization: Bearer`, or the cookie of a session the
//! sign-in form opened with it. Anything else gets `401` (the page: the
//! sign-in form).
//!
//! **Cross-site requests**: a state-changing request from a browser must
//! come from the console's own origin (`Origin`, `Sec-Fetch-Site`) and carry
//! its session's token in `X-Console-Csrf`, which only a page of the same
//! origin can read; the cookie is `SameSite=Strict` and `HttpOnly`.
//!
//! **Values are text**: the script writes every value a client or a tool
//! chose (tool names, owners, status messages) with `textContent`, never as
//! markup, and every response carries a Content-Security-Policy that allows
//! only the console's own script and style (`script-src 'self'`, no inline
//! script, no other origin).

pub mod access;
pub mod actions;
mod assets;
pub mod credential;
pub mod feed;
pub mod list;
pub mod overview;
pub mod row;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use mcp_tasks::Admin;
use mcp_tasks::observe::ToolStats;

pub use credential::Credential;
pub use overview::{StoreKind, UpstreamVitals};

/// What the upstream looks like now, asked for at each overview.
pub type Vitals = Arc<dyn Fn() -> UpstreamVitals + Send + Sync>;

/// The console's settings and sources, turned into routes by
/// [`Console::router`].
///
/// ```no_run
/// use mcp_tasks::{MemoryTaskStore, TasksLayer};
/// use mcp_tasks::observe::ToolStats;
/// use mcp_tasks_gateway::console::{Console, Credential, StoreKind};
///
/// # fn build() -> Result<(), mcp_tasks_gateway::console::credential::CredentialError> {
/// let stats = ToolStats::new();
/// let layer = TasksLayer::new(MemoryTaskStore::new()).observe_calls(stats.clone());
/// let console = Console::new(layer.admin(), Credential::new("a long operator secret")?)
///     .store_kind(StoreKind::Memory)
///     .tool_stats(stats);
/// let operator = axum::Router::new().merge(console.router());
/// # let _ = operator;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Console {
    admin: Admin,
    credential: Credential,
    stats: Option<ToolStats>,
    store: StoreKind,
    vitals: Option<Vitals>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A console over the layer's tasks (`admin`), for whoever holds
    /// `credential`.
    pub fn new(admin: Admin, credential: Credential) -> Self {
        Self {
            admin,
            credential,
            stats: None,
            store: StoreKind::Memory,
            vitals: None,
        }
    }

    /// The per-tool figures, from the [`ToolStats`] the layer reports its
    /// calls to ([`TasksLayer::observe_calls`](mcp_tasks::TasksLayer::observe_calls)).
    /// Without it the console shows no per-tool figures.
    pub fn tool_stats(mut self, stats: ToolStats) -> Self {
        self.stats = Some(stats);
        self
    }

    /// Which store the layer keeps its tasks in, as the console names it.
    pub fn store_kind(mut self, kind: StoreKind) -> Self {
        self.store = kind;
        self
    }

    /// How the console learns what the upstream looks like.
    pub fn vitals(mut self, vitals: impl Fn() -> UpstreamVitals + Send + Sync + 'static) -> Self {
        self.vitals = Some(Arc::new(vitals));
        self
    }

    /// The console's routes, every one under `/console`.
    pub fn router(self) -> Router {
        let access = access::Access::new(self.credential);
        let overview =
            overview::Overview::new(self.admin.clone(), self.store, self.stats, self.vitals);
        let state = State {
            admin: self.admin,
            access,
            overview,
            feeds: feed::Feeds::default(),
        };
        Router::new()
            .route("/console", get(assets::page))
            .route("/console/", get(assets::page))
            .route("/console/console.js", get(assets::script))
            .route("/console/console.css", get(assets::style))
            .route("/console/login", post(access::login))
            .route("/console/logout", post(access::logout))
            .route("/console/api/session", get(access::session))
            .route("/console/api/tasks", get(list::tasks))
            .route("/console/api/feed", get(feed::feed))
            .route("/console/api/overview", get(overview::overview))
            .route("/console/api/tasks/{id}/{action}", post(actions::act))
            .with_state(Arc::new(state))
            .layer(axum::middleware::map_response(assets::harden))
    }
}

/// What every handler shares.
pub(crate) struct State {
    pub(crate) admin: Admin,
    pub(crate) access: access::Access,
    pub(crate) overview: overview::Overview,
    pub(crate) feeds: feed::Feeds,
}

/// The shared state as handlers take it.
pub(crate) type Shared = axum::extract::State<Arc<State>>;
