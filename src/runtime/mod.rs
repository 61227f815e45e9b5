//! The one place that starts, tracks and stops every task.
//!
//! Every path that makes a task, or makes one run again, goes through
//! [`Runtime`], so that each limit, the drain and the store's quota are
//! applied once:
//!
//! | Path                                   | Entry             | Over a limit, or the store failing                |
//! |----------------------------------------|-------------------|---------------------------------------------------|
//! | a 2026-07-28 call still running at the threshold | [`Runtime::start`] with a running flight | not parked: the call stays synchronous, as without the layer |
//! | a 2025-11-25 `tools/call` with `params.task` | [`Runtime::start`] with a request | a JSON-RPC error (`-32000` for a limit, `-32603` for the store) |
//! | an MRTR round completed by `tasks/update` | [`Runtime::resume`] | waits for a place among the background calls |
//!
//! Each started task is created in the store under the layer's quota, then
//! driven on a tracked tokio task holding one place among the background
//! inner calls, under its deadline ([`crate::runtime::deadline`]).
//!
//! | Room | Holds |
//! |------|-------|
//! | `start.rs`, `drive.rs`, `settle.rs`, `resume.rs`, `rerun.rs`, `hints.rs`, `follow.rs`, `work.rs`, `dialect.rs` | a task's life, from its start to its settled outcome, its re-issue and its re-run |
//! | `flight/` | an inner `tools/call` in flight: read, raced, relayed, driven once parked |
//! | `mrtr.rs`, `deadline.rs` | input rounds and the re-issued call; a task's deadline |
//! | `context.rs` | [`RequestContext`]: one request as a wing's handler gets it, its owner resolved once |
//! | `background.rs`, `drain.rs` | every tokio task the layer starts, and the [`Drain`](crate::Drain) that stops them |
//! | `feed/` | the hub over the store's change feed, and what every task-status stream is made of |

pub(crate) mod background;
mod context;
pub(crate) mod deadline;
mod dialect;
pub(crate) mod drain;
mod drive;
pub(crate) mod feed;
pub(crate) mod flight;
mod follow;
mod hints;
pub(crate) mod mrtr;
pub(crate) mod queued;
pub(crate) mod quiet;
mod rerun;
mod resume;
mod settle;
mod start;
mod work;

use std::sync::Arc;

use http::request::Parts;
use serde_json::value::RawValue;

use crate::config::TasksConfig;
use crate::owner::ResolveOwner;
use crate::runtime::background::Background;
use crate::store::{StoreError, TaskStore};
use crate::wire::jsonrpc::Reply;

pub(crate) use context::RequestContext;
pub(crate) use dialect::{Dialect, Plain, Step};
pub(crate) use follow::Followed;
pub(crate) use hints::Hints;
pub(crate) use start::{First, NotStarted, Start};
pub(crate) use work::Work;

/// The engine behind one [`TasksService`](crate::TasksService) and its
/// clones: what a task's life needs, and nothing of any protocol
/// generation (those hold their own state and call in here).
pub(crate) struct Runtime {
    pub config: TasksConfig,
    pub store: Arc<dyn TaskStore>,
    pub resolver: Arc<dyn ResolveOwner>,
    /// The name of the inner server this layer wraps, if given.
    pub scope: Option<Arc<str>>,
    /// Every tokio task the layer starts, and the drain's signals.
    pub background: Arc<Background>,
    /// The traces of tasks waiting for input, for their resume.
    pub waiting: Arc<crate::observe::Waiting>,
    /// The tools the inner server marks idempotent, for re-runs.
    pub hints: Arc<Hints>,
    /// Makes each request's span.
    pub make_span: Arc<dyn crate::observe::MakeSpan>,
    /// Told of each `tools/call` as it ends, when set.
    pub calls: Option<Arc<dyn crate::observe::calls::CallObserver>>,
    /// The tools whose calls go without the layer's progress token.
    pub quiet: quiet::Quiet,
    /// The re-runs taken from the store that wait for a running slot.
    pub queued: Arc<queued::Queued>,
}

/// Who sent a request, as the layer keys its tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The principal the resolver found.
    pub principal: Option<String>,
    /// The store's owner key: the principal, qualified by the layer's scope.
    pub key: Option<String>,
}

impl Owner {
    /// The store's owner key.
    pub(crate) fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

/// The store key of `principal` under `scope`: unchanged without a scope;
/// with one, unambiguous for every scope, and distinct for anonymous callers,
/// so that a task made under one scope is unknown under every other.
fn scoped(scope: Option<&str>, principal: Option<&str>) -> Option<String> {
    let Some(scope) = scope else {
        return principal.map(str::to_owned);
    };
    Some(match principal {
        Some(principal) => format!("scope:{}:{scope}+{principal}", scope.len()),
        None => format!("scope:{}:{scope}-", scope.len()),
    })
}

impl Runtime {
    /// The span of a request of `method` with the head `parts`.
    pub(crate) fn span(&self, method: &'static str, parts: &Parts) -> tracing::Span {
        self.make_span.make_span(method, parts)
    }

    /// The owner of a request, resolved once.
    pub(crate) fn owner(&self, parts: &Parts) -> Owner {
        let principal = self.resolver.resolve(parts);
        let key = scoped(self.scope.as_deref(), principal.as_deref());
        Owner { principal, key }
    }
}

/// What a peer is told when the task store failed: the one text, which
/// reveals nothing of the backend (the details go to the log).
pub(crate) const STORE_UNAVAILABLE: &str = "The task store is unavailable; try again later";

/// The one error boundary for store failures: details go to the log, the
/// client gets a fixed `-32603` that reveals nothing of the backend.
pub(crate) fn store_failed(id: Option<&RawValue>, error: &StoreError) -> Reply {
    tracing::warn!(%error, "task store failed");
    Reply::internal(id, STORE_UNAVAILABLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_keep_owners_apart_and_anonymous_callers_distinct() {
        assert_eq!(scoped(None, Some("alice")).as_deref(), Some("alice"));
        assert_eq!(scoped(None, None), None);
        let a = scoped(Some("a"), Some("alice"));
        let b = scoped(Some("b"), Some("alice"));
        assert_ne!(a, b);
        assert_ne!(scoped(Some("a"), None), scoped(Some("b"), None));
        assert_ne!(scoped(Some("a"), None), scoped(Some("a"), Some("")));
        // A scope cannot be forged from another scope and a principal.
        assert_ne!(scoped(Some("a+x"), None), scoped(Some("a"), Some("x-")));
        assert_ne!(
            scoped(Some("a"), Some("b+c")),
            scoped(Some("a+b"), Some("c"))
        );
    }
}
