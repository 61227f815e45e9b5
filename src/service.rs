//! [`TasksService`]: routing each request on its classification.
//!
//! ```text
//! request ─► (POST) buffer + classify ─┬─► Forward ──► inner ─► response, body untouched
//!                                       ├─► Discover ─► inner ─► response + tasks extension
//!                                       ├─► ToolCall ─► flight (race, park, drive)
//!                                       ├─► Task ─────► store (get / update / cancel)
//!                                       └─► Reply ────► an error the layer answers
//! request ─► (not POST) ─────────────────────► inner ─► response, untouched
//! ```
//!
//! The pass-through path (`Forward`, non-POST) runs inside the named
//! [`ResponseFuture`] without boxing; only the paths the layer owns box.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_util::FutureExt;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::request::Parts;
use http::{Method, Request, Response};
use http_body::Body;
use http_body_util::combinators::Collect;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use pin_project_lite::pin_project;
use tower_service::Service;

use crate::body::{BoxError, RequestBody, ResponseBody};
use crate::classify::{Route, TaskMethod, ToolCall, classify, header};
use crate::config::TasksConfig;
use crate::flight::caller::Caller;
use crate::flight::driver::{self, Parking, Work, park};
use crate::flight::{Event, Flight, InnerFuture};
use crate::legacy::route::{LegacyMethod, LegacyRoute};
use crate::legacy::sessions::Sessions;
use crate::legacy::{self, advertise};
use crate::methods;
use crate::mrtr::{self, Resume, Template};
use crate::owner::ResolveOwner;
use crate::policy::ToolPolicy;
use crate::rewrite;
use crate::store::InputProgress;
use crate::store::TaskStore;
use crate::wire::jsonrpc::Reply;
use crate::wire::view::{TaskView, render};

/// What every clone of a service shares.
pub(crate) struct Shared {
    pub config: TasksConfig,
    pub store: Arc<dyn TaskStore>,
    pub owner: Arc<dyn ResolveOwner>,
    /// The 2025-11-25 sessions the layer serves tasks in.
    pub sessions: Arc<Sessions>,
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
        &self.shared.config
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
            collect: Collect<Limited<B>>,
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

/// Whether a POST may carry a JSON-RPC message: JSON, or no content type
/// at all. Other bodies (forms, uploads) pass through without buffering.
fn is_json(headers: &http::HeaderMap) -> bool {
    const JSON: &[u8] = b"application/json";
    headers.get(CONTENT_TYPE).is_none_or(|value| {
        let value = value.as_bytes().trim_ascii_start();
        value.len() >= JSON.len() && value[..JSON.len()].eq_ignore_ascii_case(JSON)
    })
}

pub(crate) fn reply_response<B>(reply: Reply) -> Response<ResponseBody<B>> {
    let mut response = Response::new(ResponseBody::full(reply.body));
    *response.status_mut() = reply.status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
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
        // The clone is not ready; the service that was polled ready goes along.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let state = if request.method() == Method::POST && is_json(request.headers()) {
            let (parts, body) = request.into_parts();
            State::Collect {
                collect: Limited::new(body, self.shared.config.max_body_bytes).collect(),
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
            State::Inner {
                future: inner.call(request.map(RequestBody::streaming)),
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
                    parts,
                    inner,
                    shared,
                } => {
                    let collected = ready!(collect.poll(cx));
                    match (collected, parts.take(), inner.take()) {
                        (Ok(collected), Some(parts), Some(inner)) => {
                            route(shared.clone(), inner, parts, collected.to_bytes())
                        }
                        (Err(error), _, _) => {
                            let reply = unreadable_body(error, shared.config.max_body_bytes);
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

fn unreadable_body(error: BoxError, limit: usize) -> Reply {
    if error.is::<LengthLimitError>() {
        Reply::too_large(limit)
    } else {
        Reply::invalid_request(None, format!("The request body could not be read: {error}"))
    }
}

/// Picks the next state for a classified POST.
fn route<S, B, RB>(
    shared: Arc<Shared>,
    mut inner: S,
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
    match classify(&parts.headers, &bytes, &shared.config, &shared.sessions) {
        Route::Forward => State::Inner {
            future: inner.call(Request::from_parts(parts, RequestBody::buffered(bytes))),
        },
        Route::Reply(reply) => reply_state(reply),
        Route::Discover => {
            let future = inner.call(Request::from_parts(parts, RequestBody::buffered(bytes)));
            owned(Box::pin(async move {
                Ok(rewrite::advertise(future.await?).await)
            }))
        }
        Route::ToolCall(call) => owned(Box::pin(tool_call(shared, inner, parts, bytes, call))),
        Route::Task(call) if call.method == TaskMethod::Update => {
            let caller = Caller::<S, B>::boxed(inner);
            // Detached: once an answer completes a round, the re-issue must
            // happen even if this client hangs up.
            let detached = tokio::spawn(async move {
                let answered = methods::answer(&shared, &parts, call).await;
                if let Some((task, round)) = answered.resume {
                    resume(&shared, caller, &parts, task, round);
                }
                answered.reply
            });
            owned(Box::pin(async move {
                let reply = detached
                    .await
                    .unwrap_or_else(|_| Reply::internal(None, "tasks/update failed"));
                Ok(reply_response(reply))
            }))
        }
        Route::Task(call) => owned(Box::pin(async move {
            let answered = methods::answer(&shared, &parts, call).await;
            Ok(reply_response(answered.reply))
        })),
        Route::Legacy(route) => owned(Box::pin(legacy_route(shared, inner, parts, bytes, route))),
    }
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
    match route {
        LegacyRoute::Initialize => {
            let list = shared.owner.resolve(&parts).is_some();
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
            let edit = advertise::tools_list(shared.config.clone());
            Ok(rewrite::edit_response(response, edit).await)
        }
        LegacyRoute::Call(call) => {
            let caller = Caller::<S, B>::boxed(inner);
            let reply = legacy::call::call(shared, caller, parts, bytes, call).await;
            Ok(reply_response(reply))
        }
        LegacyRoute::Task(call) if call.method == LegacyMethod::Result => {
            Ok(legacy::result::answer(shared, parts, call).await)
        }
        LegacyRoute::Task(call) => Ok(reply_response(
            legacy::methods::answer(&shared, &parts, &call).await,
        )),
        LegacyRoute::Answer { task, key } => {
            match legacy::answer::take(&shared, &parts, &bytes, task, key).await {
                Ok(delivery) => {
                    let caller = Caller::<S, B>::boxed(inner);
                    legacy::answer::deliver(&shared, caller, &parts, delivery);
                    Ok(accepted())
                }
                Err(reply) => Ok(reply_response(reply)),
            }
        }
        LegacyRoute::Swallow => Ok(accepted()),
    }
}

/// Re-issues a call whose input round the client completed, with the
/// credentials and extensions of the `tasks/update` that completed it.
fn resume(
    shared: &Shared,
    caller: Box<dyn crate::flight::caller::CallInner>,
    parts: &Parts,
    task: crate::task::TaskId,
    round: InputProgress,
) {
    let InputProgress::RoundComplete {
        answers,
        resume,
        stop,
    } = round
    else {
        return;
    };
    let resume: Resume = match serde_json::from_str(resume.get()) {
        Ok(resume) => resume,
        Err(error) => {
            let message = format!("The stored resume context is unreadable: {error}");
            driver::fail_detached(shared.store.clone(), task, message, None);
            return;
        }
    };
    let answers = mrtr::inner_answers(&resume, answers);
    let mut work = Work {
        store: shared.store.clone(),
        id: task,
        stop,
        caller,
        template: Box::new({
            let mut template = Template::from_parts(parts);
            template.set_param_headers(&resume.param_headers);
            template
        }),
        params: resume.params,
        round: resume.round,
        attempts: 0,
        shed: 0,
        expires: resume.expires.map(crate::task::Timestamp::from_millis),
        legacy: None,
    };
    if let Some(flight) = driver::reissue(&mut work, Some(answers), resume.request_state) {
        driver::spawn(work, flight);
    }
}

/// The `params` object at `range` of a body classification has read.
fn raw_params(body: &[u8], range: std::ops::Range<usize>) -> Box<serde_json::value::RawValue> {
    body.get(range)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| serde_json::value::RawValue::from_string(text.to_owned()).ok())
        .unwrap_or_else(crate::wire::raw::empty_object)
}

/// A declaring client's `tools/call`: forward, race, and park if it runs long.
async fn tool_call<S, B, RB>(
    shared: Arc<Shared>,
    mut inner: S,
    mut parts: Parts,
    bytes: Bytes,
    call: ToolCall,
) -> Result<Response<ResponseBody<RB>>, S::Error>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    B: Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    // The forwarded body loses the tasks extension, byte-exact otherwise; the
    // params kept for re-issuing are those of the forwarded body.
    let (body, params) = match rewrite::strip_tasks_extension(&bytes, call.extensions.clone()) {
        Some((body, shorter)) => (body, call.params.start..call.params.end - shorter),
        None => (bytes, call.params.clone()),
    };
    parts.headers.remove(CONTENT_LENGTH);
    if call.policy == ToolPolicy::Never {
        let request = Request::from_parts(parts, RequestBody::buffered(body));
        return Ok(inner.call(request).await?.map(ResponseBody::inner));
    }
    // What a parked call needs later: its owner, and what re-issuing takes.
    let owner = shared.owner.resolve(&parts);
    let params = raw_params(&body, params);
    let template = Template::from_parts(&parts);
    let caller = Caller::<S, B>::boxed(inner.clone());
    let request = Request::from_parts(parts, RequestBody::buffered(body));
    let future: InnerFuture = Box::pin(inner.call(request).map(|result| match result {
        Ok(response) => Ok(response.map(|body| body.map_err(Into::into).boxed_unsync())),
        Err(error) => Err(error.into()),
    }));
    let mut flight = Flight::new(call.id.clone(), future);
    let mut progress = None;
    // `Always` and a zero threshold park before the first answer; otherwise
    // the call races the threshold and an answer in time goes back unchanged.
    let race = call.policy != ToolPolicy::Always && !shared.config.threshold.is_zero();
    if race {
        let raced = tokio::time::timeout(shared.config.threshold, async {
            loop {
                match flight.next_event().await {
                    Event::Progress(line) => progress = Some(line),
                    // Relayed with the rest of the stream if the call
                    // answers in time; a parked call cannot be asked.
                    Event::Request(_) => {}
                    Event::Done(answer) => return answer,
                }
            }
        })
        .await;
        if let Ok(answer) = raced {
            return Ok(answer.into_response());
        }
    }
    let parking = Parking {
        store: shared.store.clone(),
        owner,
        ttl: shared.config.ttl,
        poll_interval: shared.config.poll_interval,
        caller,
        template,
        params,
    };
    let reply = match park(parking, flight, progress).await {
        Ok(snapshot) => Reply::result(&call.id, render(&snapshot, TaskView::Created)),
        Err(error) => {
            tracing::warn!(%error, "could not park a tool call");
            Reply::internal(
                Some(&call.id),
                format!("Could not create the task: {error}"),
            )
        }
    };
    Ok(reply_response(reply))
}
