//! [`TasksService`]: the middleware [`TasksLayer`](crate::TasksLayer) makes.
//!
//! ```text
//! request ─► (POST) read + classify ─┬─► Forward ──► inner ─► response, body untouched
//!                                     ├─► Discover ─► inner ─► response + tasks extension
//!                                     ├─► ToolCall ─► tool_call (threshold, park: runtime)
//!                                     ├─► Task ─────► store (get / update / cancel)
//!                                     ├─► Listen ───► status push (and the inner stream)
//!                                     ├─► Legacy ───► a 2025-11-25 session's task part
//!                                     └─► Reply ────► an error the layer answers
//! request ─► (not a JSON POST) ─► inner ─► response, untouched
//! ```
//!
//! Every JSON POST is read and classified, a 2026-07-28 one whatever its
//! `Mcp-Method` says, which must match its body (see
//! `classify::needs_body`); other requests pass unread. `call` only
//! decides whether to read the body; dispatch (`dispatch.rs`) picks the
//! rest.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body::Body;
use tower_service::Service;

use super::classify::needs_body;
use super::dispatch;
use super::future::ResponseFuture;
use super::shared::Shared;
use super::state::State;
use crate::body::{BoxError, RequestBody, ResponseBody};
use crate::bound::{Inner, Payload};
use crate::config::TasksConfig;
use crate::runtime::flight::caller::Caller;

/// The middleware built by [`TasksLayer`](crate::TasksLayer).
pub struct TasksService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: Clone> Clone for TasksService<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for TasksService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TasksService")
            .field("inner", &self.inner)
            .field("config", self.config())
            .finish_non_exhaustive()
    }
}

impl<S> TasksService<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>) -> Self {
        Self { inner, shared }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, out of the middleware. Tasks already parked
    /// keep running in the background of the layer that made them.
    ///
    /// ```
    /// use mcp_tasks::{MemoryTaskStore, TasksLayer};
    /// use tower::Layer;
    ///
    /// let layer = TasksLayer::new(MemoryTaskStore::new());
    /// let mut service = layer.layer(1_u8);
    /// *service.get_mut() += 1;
    /// assert_eq!(*service.get_ref(), 2);
    /// assert!(format!("{service:?}").starts_with("TasksService { inner: 2, config: "));
    /// assert!(format!("{layer:?}").contains("built: true"));
    /// assert_eq!(service.into_inner(), 2);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The settings in force.
    pub fn config(&self) -> &TasksConfig {
        &self.shared.runtime.config
    }

    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Once per service and its clones: the store's calls to run again go
    /// to this inner service, under the `Host` that `request` names.
    fn recover_once<B, RB>(&self, request: &Request<B>)
    where
        S: Inner<B, RB>,
        B: Send + 'static,
        RB: Payload,
    {
        let recovering = &self.shared.recovering;
        if recovering.load(Ordering::Relaxed) || recovering.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shared.deliver_once();
        let inner = self.inner.clone();
        let host = request.headers().get(http::header::HOST).cloned();
        let caller = move || Caller::<S, B>::boxed(inner.clone());
        self.shared
            .runtime
            .clone()
            .recover_in_background(caller, host);
    }
}

impl<S, B, RB> Service<Request<B>> for TasksService<S>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody<RB>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, B, RB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.recover_once(&request);
        let seen = (request.method() == Method::POST)
            .then(|| needs_body(request.headers()))
            .flatten();
        let state = match seen {
            Some(seen) => {
                // The body is read before the inner service is called: the
                // service that was polled ready goes along, its clone (not
                // ready) stays.
                let clone = self.inner.clone();
                let inner = std::mem::replace(&mut self.inner, clone);
                let (parts, body) = request.into_parts();
                State::collect(self.shared.clone(), inner, seen, parts, body)
            }
            // Passed on at once, to the ready service itself.
            None => dispatch::unread(&self.shared, &mut self.inner, request),
        };
        ResponseFuture::new(state)
    }
}
