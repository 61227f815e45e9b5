//! Dispatch: the handler of each request, picked from its classification,
//! with the request's owner resolved once, in the request's span, and
//! handed to the handler that needs it.
//!
//! Requests the layer does not take part in never reach a resolver: the
//! pass-through routes (`Forward`, `Discover`, a request not read) take
//! no owner.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{Method, Request, Response};
use tracing::Instrument;

use super::classify::{Route, Seen, classify};
use super::shared::Shared;
use super::state::{OwnedFuture, State};
use crate::body::{RequestBody, ResponseBody, reply_response};
use crate::bound::{Inner, Payload};
use crate::legacy::route::{LegacyMethod, LegacyRoute};
use crate::legacy::sessions::{Known, Sessions};
use crate::legacy::{self, advertise};
use crate::modern::early;
use crate::modern::events;
use crate::modern::fallback;
use crate::modern::methods;
use crate::modern::own_tasks::OwnTasks;
use crate::modern::route::{Route as Modern, TaskCall, TaskMethod};
use crate::modern::tool_call;
use crate::observe;
use crate::rewrite;
use crate::runtime::flight::caller::{CallInner, Caller};
use crate::runtime::{RequestContext, Runtime};
use crate::wire::envelope::header;
use crate::wire::jsonrpc::{ErrorObject, LIMIT_REACHED, Reply};

/// The state of the service's own future: a request the layer does not
/// read (not a POST, or routed by its headers alone).
pub(super) fn unread<S, B, RB>(
    shared: &Arc<Shared>,
    inner: &mut S,
    request: Request<B>,
) -> State<S, S::Future, B, RB, S::Error>
where
    S: Inner<B, RB>,
    B: Payload,
    RB: Payload,
{
    if request.method() == Method::DELETE
        && let Some(session) = request.headers().get("mcp-session-id")
        && let Ok(session) = session.to_str()
    {
        // The client ends its 2025-11-25 session (the inner server may
        // refuse; then later requests get its 404 all the same).
        shared.sessions.end(session);
    }
    // An MCP message (a JSON POST) that announces more than the limit is
    // refused before any of it is read, whatever its method: the inner
    // server need not take it. Other requests (an upload to another route
    // of a wrapped router) keep their own limits.
    let limit = shared.runtime.config.max_body_bytes;
    let json_post = request.method() == Method::POST
        && crate::wire::is_content_type(request.headers(), "application/json");
    if json_post && request.body().size_hint().lower() > limit as u64 {
        crate::observe::events::refused("body_size", "request body over max_body_bytes");
        return State::reply(Reply::too_large(limit));
    }
    let Some(session) = live_get_stream(&shared.sessions, &request) else {
        return State::Inner {
            future: inner.call(request.map(RequestBody::streaming)),
            keep_alive: shared.runtime.config.keep_alive,
        };
    };
    // The owner resolver reads the parts.
    let (parts, body) = request.into_parts();
    let owner = shared.runtime.owner(&parts).key;
    let future = inner.call(Request::from_parts(parts, RequestBody::streaming(body)));
    let with = (
        shared.runtime.clone(),
        shared.sessions.clone(),
        shared.hub.clone(),
    );
    State::Owned {
        future: Box::pin(async move {
            let response = future.await?;
            Ok(crate::legacy::push::session_stream(
                with, owner, session, response,
            ))
        }),
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

/// Whether `route` runs a tool upstream.
fn starts_a_call(route: &Route) -> bool {
    matches!(
        route,
        Route::Modern(Modern::ForwardCall(_) | Modern::ToolCall(_))
            | Route::Legacy(LegacyRoute::Call(_))
    )
}

/// The answer to a `tools/call` (`request`) during a drain: `503`, with
/// `Retry-After`, and a `-32000` error naming the call's id.
fn draining<B>(request: &[u8]) -> Response<ResponseBody<B>> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<Box<serde_json::value::RawValue>>,
    }
    let id = serde_json::from_slice::<Id>(request)
        .ok()
        .and_then(|id| id.id);
    let why = "The server is shutting down and starts no new call: call again (another instance may serve it)";
    let error = ErrorObject::new(LIMIT_REACHED, why);
    let reply = Reply::error(http::StatusCode::SERVICE_UNAVAILABLE, id.as_deref(), error);
    let mut response = reply_response(reply);
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    response
}

/// The next state for a POST read into `bytes`, as classified.
pub(super) fn buffered<S, B, RB>(
    shared: &Arc<Shared>,
    mut inner: S,
    seen: Seen,
    parts: Parts,
    bytes: Bytes,
) -> State<S, S::Future, B, RB, S::Error>
where
    S: Inner<B, RB>,
    B: Payload,
    RB: Payload,
{
    let owned = |future: OwnedFuture<RB, S::Error>| State::Owned { future };
    let runtime = &shared.runtime;
    let route = classify(
        &parts.headers,
        seen,
        &bytes,
        &runtime.config,
        &shared.sessions,
    );
    // A drain starts no new call: the server is going away, and a call it
    // could not finish would leave its client a stream that just ends.
    if runtime.background.is_closing() && starts_a_call(&route) {
        return owned(Box::pin(std::future::ready(Ok(draining(&bytes)))));
    }
    match route {
        Route::Forward => State::Inner {
            future: inner.call(Request::from_parts(parts, RequestBody::buffered(bytes))),
            keep_alive: runtime.config.keep_alive,
        },
        Route::Modern(Modern::ForwardCall(related)) => {
            let mut parts = parts;
            let body = match related {
                Some(related) => {
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                    rewrite::without_related(&bytes, related)
                }
                None => bytes,
            };
            let keep_alive = runtime.config.keep_alive;
            if !crate::wire::sse::accepts_sse(&parts.headers) {
                return State::Inner {
                    future: inner.call(Request::from_parts(parts, RequestBody::buffered(body))),
                    keep_alive,
                };
            }
            // A long call of a client without tasks: an SSE head of the
            // layer's if the inner server sends none in time.
            let max = runtime.config.max_result_bytes;
            let request = Request::from_parts(parts, RequestBody::buffered(body.clone()));
            let future = inner.call(request);
            owned(Box::pin(early::answer(future, keep_alive, body, max)))
        }
        Route::Reply(reply) => State::reply(reply),
        Route::Modern(Modern::Added(call)) => {
            let span = runtime.span("tools/call", &parts);
            if !span.is_disabled() {
                let names = &runtime.config.fallback.names;
                let name = match call.tool {
                    fallback::Added::Result => &names.result,
                    fallback::Added::Cancel => &names.cancel,
                };
                span.record("gen_ai.tool.name", name.as_str());
            }
            let cx = RequestContext::new(runtime.clone(), parts, bytes, &span);
            owned(traced(span, async move {
                Ok(reply_response(fallback::answer::answer(&cx, call).await))
            }))
        }
        Route::Modern(Modern::ToolsList { first_page }) => {
            let span = runtime.span("tools/list", &parts);
            let future = inner.call(Request::from_parts(parts, RequestBody::buffered(bytes)));
            let edit = fallback::tools::listing(runtime.config.clone(), first_page);
            owned(traced(span, async move {
                Ok(rewrite::edit_response(future.await?, edit).await)
            }))
        }
        Route::Modern(Modern::Discover) => {
            let span = runtime.span("server/discover", &parts);
            let future = inner.call(Request::from_parts(parts, RequestBody::buffered(bytes)));
            let own = shared.own.clone();
            let events = shared.events.is_some();
            let edit = move |message: &str| {
                own.saw(message);
                let tasks = rewrite::with_extension(message);
                if !events {
                    return tasks;
                }
                let base = tasks.as_deref().unwrap_or(message);
                events::catalog::advertised(base).or(tasks)
            };
            owned(traced(span, async move {
                Ok(rewrite::edit_response(future.await?, edit).await)
            }))
        }
        Route::Modern(Modern::ToolCall(mut call)) => {
            let span = runtime.span("tools/call", &parts);
            observe::record_tool(&span, call.name.clone().and_then(|name| bytes.get(name)));
            let declaring = matches!(call.handle, fallback::Handle::Task);
            match shared.own.known() {
                Some(true) if declaring => call.strip.keep_extension(),
                None if declaring => {
                    // Whether the inner server has tasks of its own, asked
                    // once, before the first such call goes out.
                    let (own, runtime) = (shared.own.clone(), runtime.clone());
                    let current = span.clone();
                    return owned(traced(span, async move {
                        if own_tasks(
                            &own,
                            || Caller::<S, B>::boxed(inner.clone()),
                            &parts,
                            &runtime,
                        )
                        .await
                        {
                            call.strip.keep_extension();
                        }
                        let cx = RequestContext::new(runtime, parts, bytes, &current);
                        tool_call::tool_call(cx, inner, call).await
                    }));
                }
                _ => {}
            }
            // The owner is resolved and the call sent now, inside the
            // request's span, as the owned future would: the inner
            // service's own spans and the resolver's events belong to this
            // request.
            let cx = RequestContext::new(runtime.clone(), parts, bytes, &span);
            let call = in_span(&span, || tool_call::tool_call(cx, inner, call));
            owned(traced(span, call))
        }
        Route::Modern(Modern::Task(call))
            if shared.own.known() == Some(true)
                || (call.task.is_none() && shared.own.known().is_none()) =>
        {
            // The inner server may have tasks of its own (`own_tasks`), whose
            // ids may even look like the layer's: a task the layer does not
            // hold goes to it.
            let span = task_method_span(runtime, &parts, &call);
            let (own, runtime) = (shared.own.clone(), runtime.clone());
            let current = span.clone();
            owned(traced(span, async move {
                let has = own_tasks(
                    &own,
                    || Caller::<S, B>::boxed(inner.clone()),
                    &parts,
                    &runtime,
                )
                .await;
                let cx = RequestContext::new(runtime, parts, bytes, &current);
                let ours = match (has, call.task) {
                    (false, _) => true,
                    (true, None) => false,
                    (true, Some(id)) => {
                        !matches!(cx.runtime.store.get(id, cx.owner.key()).await, Ok(None))
                    }
                };
                if !ours {
                    let request = Request::from_parts(cx.parts, RequestBody::buffered(cx.body));
                    return Ok(inner.call(request).await?.map(ResponseBody::inner));
                }
                Ok(reply_response(task_answer(cx, inner, call).await))
            }))
        }
        Route::Modern(Modern::Task(call)) => {
            let span = task_method_span(runtime, &parts, &call);
            let cx = RequestContext::new(runtime.clone(), parts, bytes, &span);
            owned(traced(span, async move {
                Ok(reply_response(task_answer(cx, inner, call).await))
            }))
        }
        Route::Modern(Modern::Listen(mut call)) => {
            let span = runtime.span("subscriptions/listen", &parts);
            let owner = in_span(&span, || runtime.owner(&parts).key);
            let (runtime, hub) = (runtime.clone(), shared.hub.clone());
            match call.forward.take() {
                None => owned(traced(span, async move {
                    Ok(crate::modern::push::listen(runtime, &hub, owner, call).await)
                })),
                Some(body) => {
                    let mut parts = parts;
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                    let request = Request::from_parts(parts, RequestBody::buffered(body));
                    let future = inner.call(request);
                    owned(traced(span, async move {
                        let response = future.await?;
                        Ok(crate::modern::push::merged(runtime, &hub, owner, call, response).await)
                    }))
                }
            }
        }
        Route::Modern(Modern::EventsList { first_page, id }) => {
            let span = runtime.span("events/list", &parts);
            let future = inner.call(Request::from_parts(parts, RequestBody::buffered(bytes)));
            let config = runtime.config.events.clone();
            let limit = runtime.config.max_result_bytes;
            owned(traced(span, async move {
                let response = future.await?;
                Ok(events::catalog::list_response(response, config, first_page, id, limit).await)
            }))
        }
        Route::Modern(Modern::Events(call)) => {
            let span = runtime.span(call.method.name(), &parts);
            let cx = RequestContext::new(runtime.clone(), parts, bytes, &span);
            let Some(events) = shared.events.clone() else {
                return State::reply(Reply::method_not_found(Some(&call.id), call.method.name()));
            };
            owned(traced(span, async move {
                Ok(events::answer(cx, events, call).await)
            }))
        }
        Route::Legacy(route) => {
            let span = runtime.span(route.method_name(), &parts);
            if let LegacyRoute::Call(call) = &route {
                observe::record_tool(&span, call.name.clone().and_then(|name| bytes.get(name)));
            }
            let current = span.clone();
            let shared = shared.clone();
            owned(traced(span, async move {
                let cx = RequestContext::new(shared.runtime.clone(), parts, bytes, &current);
                legacy_route(shared, inner, cx, route).await
            }))
        }
    }
}

/// Whether the inner server has tasks of its own: as known, or asked now
/// (once) with the request's credentials, through the caller `caller`
/// makes (only when it must ask).
fn own_tasks<F: FnOnce() -> Box<dyn CallInner>>(
    own: &Arc<OwnTasks>,
    caller: F,
    parts: &Parts,
    runtime: &Runtime,
) -> impl Future<Output = bool> + Send + use<F> {
    let known = own.known();
    let ask = known.is_none().then(|| {
        let template = crate::runtime::mrtr::Template::from_parts(parts);
        (
            own.clone(),
            caller(),
            template,
            runtime.config.max_result_bytes,
        )
    });
    async move {
        match (known, ask) {
            (Some(has), _) => has,
            (None, Some((own, mut caller, template, limit))) => {
                own.learn(&mut *caller, &template, limit).await
            }
            (None, None) => false,
        }
    }
}

/// The layer's answer to a task method. A `tasks/update` is answered
/// detached: once an answer completes a round, the re-issue must happen
/// even if this client hangs up.
async fn task_answer<S, B, RB>(cx: RequestContext, inner: S, call: TaskCall) -> Reply
where
    S: Inner<B, RB>,
    B: Payload,
    RB: Payload,
{
    if call.method != TaskMethod::Update {
        return methods::answer(&cx, call).await.reply;
    }
    let caller = Caller::<S, B>::boxed(inner);
    let background = cx.runtime.background.clone();
    let detached = background.spawn_in(tracing::Span::current(), async move {
        let answered = methods::answer(&cx, call).await;
        if let Some((task, round)) = answered.resume {
            cx.runtime.resume(caller, &cx.parts, task, round);
        }
        answered.reply
    });
    detached
        .await
        .unwrap_or_else(|_| Reply::internal(None, "tasks/update failed"))
}

/// Runs `run` in `span`. A span no subscriber takes is not entered (as
/// `traced` leaves it out): entering it still costs, and changes no parent.
fn in_span<T>(span: &tracing::Span, run: impl FnOnce() -> T) -> T {
    let _entered = (!span.is_disabled()).then(|| span.enter());
    run()
}

/// The span of a task method request.
fn task_method_span(runtime: &Runtime, parts: &Parts, call: &TaskCall) -> tracing::Span {
    let span = runtime.span(call.method.name(), parts);
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

/// Serves a message of a 2025-11-25 session the layer takes part in, in
/// the request's span (the owner is resolved there).
async fn legacy_route<S, B, RB>(
    shared: Arc<Shared>,
    mut inner: S,
    cx: RequestContext,
    route: LegacyRoute,
) -> Result<Response<ResponseBody<RB>>, S::Error>
where
    S: Inner<B, RB>,
    B: Payload,
    RB: Payload,
{
    match route {
        LegacyRoute::Initialize => {
            let list = cx.owner.principal.is_some();
            let request = Request::from_parts(cx.parts, RequestBody::buffered(cx.body));
            let response = inner.call(request).await?;
            let session = header(response.headers(), "mcp-session-id").map(Into::into);
            let edit = advertise::initialize(session, shared.sessions.clone(), list);
            Ok(rewrite::edit_response(response, edit).await)
        }
        LegacyRoute::ToolsList {
            session,
            first_page,
        } => {
            let request = Request::from_parts(cx.parts, RequestBody::buffered(cx.body));
            let response = inner.call(request).await?;
            if response.status() == http::StatusCode::NOT_FOUND {
                shared.sessions.end(&session);
            }
            let config = &cx.runtime.config;
            let edit = advertise::tools_list(config.clone());
            if config.fallback.on() {
                let listing = fallback::tools::listing(config.clone(), first_page);
                let edit = fallback::tools::both(listing, edit);
                return Ok(rewrite::edit_response(response, edit).await);
            }
            Ok(rewrite::edit_response(response, edit).await)
        }
        LegacyRoute::Call(call) => {
            let caller = Caller::<S, B>::boxed(inner);
            let reply = legacy::call::call(cx, &shared.sessions, caller, call).await;
            Ok(reply_response(reply))
        }
        LegacyRoute::Task(call) if call.method == LegacyMethod::Result => {
            Ok(legacy::result::answer(cx, &shared.waiters, call).await)
        }
        LegacyRoute::Task(call) => Ok(reply_response(legacy::methods::answer(&cx, &call).await)),
        LegacyRoute::Answer { task, key } => match legacy::answer::take(&cx, task, key).await {
            Ok(delivery) => {
                let caller = Caller::<S, B>::boxed(inner);
                legacy::answer::deliver(&cx, caller, delivery);
                Ok(accepted())
            }
            Err(reply) => Ok(reply_response(reply)),
        },
        LegacyRoute::Swallow => Ok(accepted()),
    }
}
