//! [`TasksService`]: routing each request on its classification.
//!
//! ```text
//! request ─► (POST) buffer + classify ─┬─► Forward ──► inner ─► response, body untouched
//!                                       ├─► Discover ─► inner ─► response + tasks extension
//!                                       ├─► ToolCall ─► race (threshold, park: runtime)
//!                                       ├─► Task ─────► store (get / update / cancel)
//!                                       ├─► Legacy ───► a 2025-11-25 session's task part
//!                                       └─► Reply ────► an error the layer answers
//! request ─► (not POST, or routed by its headers) ─► inner ─► response, untouched
//! ```
//!
//! A 2026-07-28 POST whose `Mcp-Method` the layer does not handle is
//! routed on that header alone (see `classify::needs_body`): never
//! buffered, never parsed.
//!
//! The pass-through path (`Forward`, non-POST) runs inside the named
//! [`ResponseFuture`] without boxing; only the paths the layer owns box.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::request::Parts;
use http::{Method, Request, Response};
use http_body::Body;
use pin_project_lite::pin_project;
use tower_service::Service;
use tracing::Instrument;

use crate::body::{BoxError, RequestBody, ResponseBody, reply_response};
use crate::classify::{Route, Seen, TaskCall, TaskMethod, classify, needs_body};
use crate::config::TasksConfig;
use crate::flight::caller::Caller;
use crate::gather::{Gather, Unread};
use crate::legacy::route::{LegacyMethod, LegacyRoute};
use crate::legacy::sessions::{Known, Sessions};
use crate::legacy::waiters::Waiters;
use crate::legacy::{self, advertise};
use crate::methods;
use crate::observe;
use crate::push::Hub;
use crate::race;
use crate::rewrite;
use crate::runtime::Runtime;
use crate::wire::envelope::header;
use crate::wire::jsonrpc::Reply;

/// What every service made by one layer (and its clones) shares: the
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
    /// Set once the store's tasks to run again were asked for (with the
    /// first request, which brings the inner service to run them on).
    pub recovering: AtomicBool,
}

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

impl<S> TasksService<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>) -> Self {
        Self { inner, shared }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The settings in force.
    pub fn config(&self) -> &TasksConfig {
        &self.shared.runtime.config
    }
}

type OwnedFuture<B, E> = Pin<Box<dyn Future<Output = Result<Response<ResponseBody<B>>, E>> + Send>>;

pin_project! {
    #[project = StateProj]
    enum State<S, F, B, RB, E>
    where
        B: Body,
        B::Error: Into<BoxError>,
    {
        Collect {
            #[pin]
            collect: Gather<B>,
            seen: Seen,
            parts: Option<Parts>,
            inner: Option<S>,
            shared: Arc<Shared>,
        },
        Inner { #[pin] future: F },
        Owned { future: OwnedFuture<RB, E> },
    }
}

pin_project! {
    /// The response future of [`TasksService`].
    pub struct ResponseFuture<S, B, RB>
    where
        S: Service<Request<RequestBody<B>>>,
        B: Body,
        B::Error: Into<BoxError>,
    {
        #[pin]
        state: State<S, S::Future, B, RB, S::Error>,
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
        // Once per service and its clones: the store's calls to run again
        // go to this inner service, under the `Host` this request names.
        if !self.shared.recovering.load(Ordering::Relaxed)
            && !self.shared.recovering.swap(true, Ordering::AcqRel)
        {
            let inner = self.inner.clone();
            let host = request.headers().get(http::header::HOST).cloned();
            let caller = move || Caller::<S, B>::boxed(inner.clone());
            self.shared
                .runtime
                .clone()
                .recover_in_background(caller, host);
        }
        let seen = (request.method() == Method::POST)
            .then(|| needs_body(request.headers()))
            .flatten();
        let state = if let Some(seen) = seen {
            // The body is read before the inner service is called: the
            // service that was polled ready goes along, its clone (not
            // ready) stays. A request passed on at once is sent to the
            // ready service itself, with no clone to make and drop.
            let clone = self.inner.clone();
            let inner = std::mem::replace(&mut self.inner, clone);
            let (parts, body) = request.into_parts();
            State::Collect {
                collect: Gather::new(body, self.shared.runtime.config.max_body_bytes),
                seen,
                parts: Some(parts),
                inner: Some(inner),
                shared: self.shared.clone(),
            }
        } else {
            if request.method() == Method::DELETE
                && let Some(session) = request.headers().get("mcp-session-id")
                && let Ok(session) = session.to_str()
            {
                // The client ends its 2025-11-25 session (the inner server
                // may refuse; then later requests get its 404 all the same).
                self.shared.sessions.end(session);
            }
            match live_get_stream(&self.shared.sessions, &request) {
                Some(session) => {
                    // The owner resolver reads the parts.
                    let (parts, body) = request.into_parts();
                    let owner = self.shared.runtime.owner(&parts).key;
                    let request = Request::from_parts(parts, body);
                    let future = self.inner.call(request.map(RequestBody::streaming));
                    let Shared {
                        runtime,
                        sessions,
                        hub,
                        ..
                    } = &*self.shared;
                    let with = (runtime.clone(), sessions.clone(), hub.clone());
                    State::Owned {
                        future: Box::pin(async move {
                            let response = future.await?;
                            Ok(crate::push::session_stream(with, owner, session, response))
                        }),
                    }
                }
                None => State::Inner {
                    future: self.inner.call(request.map(RequestBody::streaming)),
                },
            }
        };
        ResponseFuture { state }
    }
}

impl<S, B, RB> Future for ResponseFuture<S, B, RB>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    type Output = Result<Response<ResponseBody<RB>>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let next = match state.as_mut().project() {
                StateProj::Collect {
                    collect,
                    seen,
                    parts,
                    inner,
                    shared,
                } => {
                    let collected = ready!(collect.poll(cx));
                    match (collected, parts.take(), inner.take()) {
                        (Ok(bytes), Some(parts), Some(inner)) => {
                            route(shared, inner, *seen, parts, bytes)
                        }
                        (Err(error), _, _) => {
                            let limit = shared.runtime.config.max_body_bytes;
                            let reply = unreadable_body(error, limit);
                            reply_state(reply)
                        }
                        _ => reply_state(Reply::internal(None, "request state lost")),
                    }
                }
                StateProj::Inner { future } => {
                    let response = ready!(future.poll(cx))?;
                    return Poll::Ready(Ok(response.map(ResponseBody::inner)));
                }
                StateProj::Owned { future } => return future.as_mut().poll(cx),
            };
            state.set(next);
        }
    }
}

fn reply_state<S, F, B, RB, E>(reply: Reply) -> State<S, F, B, RB, E>
where
    B: Body,
    B::Error: Into<BoxError>,
    RB: Send + 'static,
    E: Send + 'static,
{
    State::Owned {
        future: Box::pin(async move { Ok(reply_response(reply)) }),
    }
}

fn unreadable_body(error: Unread, limit: usize) -> Reply {
    match error {
        Unread::TooLarge => {
            observe::events::refused("body_size", "request body over max_body_bytes");
            Reply::too_large(limit)
        }
        Unread::Failed(error) => {
            Reply::invalid_request(None, format!("The request body could not be read: {error}"))
        }
    }
}

/// The session id of a GET that opens the SSE stream of a live
/// 2025-11-25 session, for its status notifications. A GET in the session
/// restarts its idle clock, like any request in it.
fn live_get_stream<B>(sessions: &Sessions, request: &Request<B>) -> Option<String> {
    if request.method() != Method::GET {
        return None;
    }
    let session = request.headers().get("mcp-session-id")?.to_str().ok()?;
    (sessions.touch(session) == Known::Live).then(|| session.to_owned())
}

/// Picks the next state for a classified POST.
fn route<S, B, RB>(
    shared: &Arc<Shared>,
    mut inner: S,
    seen: Seen,
    parts: Parts,
    bytes: Bytes,
) -> State<S, S::Future, B, RB, S::Error>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let owned = |future: OwnedFuture<RB, S::Error>| State::Owned { future };
    let runtime = &shared.runtime;
    match classify(
        &parts.headers,
        seen,
        &bytes,
        &runtime.config,
        &shared.sessions,
    ) {
        Route::Forward => State::Inner {
            future: inner.call(Request::from_parts(parts, RequestBody::buffered(bytes))),
        },
        Route::ForwardWithout(related) => {
            let body = rewrite::without_related(&bytes, related);
            let mut parts = parts;
            parts.headers.remove(http::header::CONTENT_LENGTH);
            State::Inner {
                future: inner.call(Request::from_parts(parts, RequestBody::buffered(body))),
            }
        }
        Route::Reply(reply) => reply_state(reply),
        Route::Discover => {
            let span = observe::request_span("server/discover");
            let future = inner.call(Request::from_parts(parts, RequestBody::buffered(bytes)));
            owned(traced(span, async move {
                Ok(rewrite::advertise(future.await?).await)
            }))
        }
        Route::ToolCall(call) => {
            let span = observe::request_span("tools/call");
            observe::record_tool(&span, call.name.clone().and_then(|name| bytes.get(name)));
            // The call is sent now, inside the request's span, as the owned
            // future would send it: the inner service's own spans and the
            // owner resolver's events belong to this request. A span no
            // subscriber takes is not entered (as `traced` leaves it out):
            // entering it still costs, and changes no parent.
            let call = {
                let _entered = (!span.is_disabled()).then(|| span.enter());
                race::tool_call(runtime.clone(), inner, parts, bytes, call)
            };
            owned(traced(span, call))
        }
        Route::Task(call) if call.method == TaskMethod::Update => {
            let span = task_method_span(&call);
            let caller = Caller::<S, B>::boxed(inner);
            // Detached: once an answer completes a round, the re-issue must
            // happen even if this client hangs up.
            let runtime = runtime.clone();
            let background = runtime.background.clone();
            let detached = background.spawn_in(span.clone(), async move {
                let answered = methods::answer(&runtime, &parts, call).await;
                if let Some((task, round)) = answered.resume {
                    runtime.resume(caller, &parts, task, round);
                }
                answered.reply
            });
            owned(traced(span, async move {
                let reply = detached
                    .await
                    .unwrap_or_else(|_| Reply::internal(None, "tasks/update failed"));
                Ok(reply_response(reply))
            }))
        }
        Route::Task(call) => owned(traced(task_method_span(&call), {
            let runtime = runtime.clone();
            async move {
                let answered = methods::answer(&runtime, &parts, call).await;
                Ok(reply_response(answered.reply))
            }
        })),
        Route::Listen(mut call) => {
            let span = observe::request_span("subscriptions/listen");
            let owner = runtime.owner(&parts).key;
            let (runtime, hub) = (runtime.clone(), shared.hub.clone());
            match call.forward.take() {
                None => owned(traced(span, async move {
                    Ok(crate::push::listen(runtime, &hub, owner, call).await)
                })),
                Some(body) => {
                    let mut parts = parts;
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                    let request = Request::from_parts(parts, RequestBody::buffered(body));
                    let future = inner.call(request);
                    owned(traced(span, async move {
                        let response = future.await?;
                        Ok(crate::push::merged(runtime, &hub, owner, call, response).await)
                    }))
                }
            }
        }
        Route::Legacy(route) => {
            let span = observe::request_span(route.method_name());
            if let LegacyRoute::Call(call) = &route {
                observe::record_tool(&span, call.name.clone().and_then(|name| bytes.get(name)));
            }
            owned(traced(
                span,
                legacy_route(shared.clone(), inner, parts, bytes, route),
            ))
        }
    }
}

/// The span of a task method request.
fn task_method_span(call: &TaskCall) -> tracing::Span {
    let span = observe::request_span(match call.method {
        TaskMethod::Get => "tasks/get",
        TaskMethod::Update => "tasks/update",
        TaskMethod::Cancel => "tasks/cancel",
    });
    if let Some(task) = call.task {
        span.record("mcp.task.id", tracing::field::display(task));
    }
    span
}

/// `future` in `span`, with `error.type` recorded: the JSON-RPC error code
/// of an error the layer answered itself, else an HTTP error status, or an
/// inner service failure. A span no subscriber takes (no telemetry set up)
/// is left out: nothing to enter on every poll, nothing to record.
fn traced<RB, E>(
    span: tracing::Span,
    future: impl Future<Output = Result<Response<ResponseBody<RB>>, E>> + Send + 'static,
) -> OwnedFuture<RB, E> {
    if span.is_disabled() {
        return Box::pin(future);
    }
    let outer = span.clone();
    Box::pin(
        async move {
            let result = future.await;
            match &result {
                Ok(response) => {
                    if let Some(observe::ErrorCode(code)) = response.extensions().get() {
                        span.record("error.type", code.to_string());
                    } else if response.status().as_u16() >= 400 {
                        span.record("error.type", response.status().as_str());
                    }
                }
                Err(_) => {
                    span.record("error.type", "inner_service");
                }
            }
            result
        }
        .instrument(outer),
    )
}

/// `202 Accepted` with no body, the answer to a notification or a response.
fn accepted<B>() -> Response<ResponseBody<B>> {
    let mut response = Response::new(ResponseBody::full(Bytes::new()));
    *response.status_mut() = http::StatusCode::ACCEPTED;
    response
}

/// Serves a message of a 2025-11-25 session the layer takes part in.
async fn legacy_route<S, B, RB>(
    shared: Arc<Shared>,
    mut inner: S,
    parts: Parts,
    bytes: Bytes,
    route: LegacyRoute,
) -> Result<Response<ResponseBody<RB>>, S::Error>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let runtime = &shared.runtime;
    match route {
        LegacyRoute::Initialize => {
            let list = runtime.owner(&parts).principal.is_some();
            let request = Request::from_parts(parts, RequestBody::buffered(bytes));
            let response = inner.call(request).await?;
            let session = header(response.headers(), "mcp-session-id").map(Into::into);
            let edit = advertise::initialize(session, shared.sessions.clone(), list);
            Ok(rewrite::edit_response(response, edit).await)
        }
        LegacyRoute::ToolsList { session } => {
            let request = Request::from_parts(parts, RequestBody::buffered(bytes));
            let response = inner.call(request).await?;
            if response.status() == http::StatusCode::NOT_FOUND {
                shared.sessions.end(&session);
            }
            let edit = advertise::tools_list(runtime.config.clone());
            Ok(rewrite::edit_response(response, edit).await)
        }
        LegacyRoute::Call(call) => {
            let caller = Caller::<S, B>::boxed(inner);
            let runtime = runtime.clone();
            let reply =
                legacy::call::call(runtime, &shared.sessions, caller, parts, bytes, call).await;
            Ok(reply_response(reply))
        }
        LegacyRoute::Task(call) if call.method == LegacyMethod::Result => {
            Ok(legacy::result::answer(runtime.clone(), &shared.waiters, parts, call).await)
        }
        LegacyRoute::Task(call) => Ok(reply_response(
            legacy::methods::answer(runtime, &parts, &call).await,
        )),
        LegacyRoute::Answer { task, key } => {
            match legacy::answer::take(runtime, &parts, &bytes, task, key).await {
                Ok(delivery) => {
                    let caller = Caller::<S, B>::boxed(inner);
                    legacy::answer::deliver(runtime, caller, &parts, delivery);
                    Ok(accepted())
                }
                Err(reply) => Ok(reply_response(reply)),
            }
        }
        LegacyRoute::Swallow => Ok(accepted()),
    }
}
