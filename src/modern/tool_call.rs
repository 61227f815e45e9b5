//! A declaring client's `tools/call`: forward it, race the threshold, and
//! park it if it runs long. A call of a client without tasks that falls
//! back (`fallback`) races its own, longer, time the same way, and parked
//! it answers a tool result that names its task instead of the handle.
//!
//! | The call…                                  | The client gets                                  |
//! |--------------------------------------------|--------------------------------------------------|
//! | answers before the threshold               | the inner answer, unchanged (an SSE answer as it streams) |
//! | outlives it, and the runtime starts a task | the task handle (`CreateTaskResult`)             |
//! | outlives it, but is refused a task (draining, over a limit, the store failing) | the inner answer once it comes, as without the layer |
//! | has policy `Never`                         | the inner answer, the call never raced           |
//!
//! With a call observer (`observe::calls`), every exit records the call: an
//! answer in time as it passes (`runtime::flight::watched`), a parked one
//! through its task, which takes the watch when it is created.
//!
//! A refused call stays in the request's future, so a client that hangs up
//! still cancels it, and the layer never turns a flood of calls into a flood
//! of background work. Its response goes out at once from where it stands
//! (what was read, then the rest as it streams), so the layer holds nothing
//! more of it.
//!
//! An SSE answer is relayed live: the head and each event reach the client
//! as the inner server sends them: untouched when the first frame there
//! starts with the response, else through `flight::direct`, then
//! `flight::live`. If the threshold
//! passes first, the layer ends that stream with the `CreateTaskResult` as
//! the response to the call, after the notifications already relayed. A
//! request of the inner server before the threshold is held back, as for a
//! JSON answer: relayed if the call answers in time, dropped if it is parked.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::Either;
use http::header::CONTENT_LENGTH;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::value::RawValue;
use tokio::time::{Instant, timeout_at};

use tracing::Instrument;

use super::in_time::in_time;
use super::route::ToolCall;
use crate::body::{BoxBody, BoxError, RequestBody, ResponseBody, passed, reply_response};
use crate::bound::{Inner, Payload};
use crate::modern::fallback;
use crate::modern::fallback::Handle;
use crate::observe::calls::Watch;
use crate::policy::ToolPolicy;
use crate::rewrite::{self, Strip};
use crate::runtime::Plain;
use crate::runtime::flight::caller::{CallInner, Caller};
use crate::runtime::flight::direct::{Direct, failing};
use crate::runtime::flight::event::starts_with_the_response;
use crate::runtime::flight::live::Live;
use crate::runtime::flight::watched::{Watching, answered, failed, sse_body};
use crate::runtime::flight::{Answer, Event, Flight, InnerFuture};
use crate::runtime::mrtr::Template;
use crate::runtime::quiet::Tool;
use crate::runtime::{First, NotStarted, RequestContext, Runtime, Start};
use crate::wire::jsonrpc::Reply;
use crate::wire::progress::Token;
use crate::wire::sse;
use crate::wire::view::{TaskView, render};

/// Forwards, races and parks a declaring client's `tools/call`.
///
/// A call answers in time when its response head arrives before the
/// threshold: that response goes back as the inner service made it, never
/// buffered (a JSON body streams through, however long it then takes; an
/// SSE one is relayed live, and can still be parked until its answer).
/// What the request alone holds (the owner, the credentials for
/// re-issuing) is taken, and the call sent, before this returns; the
/// future then only races, so it stays small (every wrapper moves it).
/// Call it inside the request's span (`cx`'s, its owner resolved there):
/// the call is sent from here.
/// The flight, the params kept for re-issuing and the boxed caller that
/// re-issues are built only at parking.
pub(crate) fn tool_call<S, B, RB>(
    cx: RequestContext,
    mut inner: S,
    call: ToolCall,
) -> impl Future<Output = Result<Response<ResponseBody<RB>>, S::Error>> + Send + 'static
where
    S: Inner<B, RB>,
    B: Send + 'static,
    RB: Payload,
{
    let RequestContext {
        runtime,
        mut parts,
        body: bytes,
        owner,
        ..
    } = cx;
    let owner = owner.key;
    // The forwarded body loses the tasks extension, byte-exact otherwise. A
    // parked call cuts its params for re-issuing from the body as sent,
    // along the same spans: the forwarded body goes to the inner server
    // whole, never shared (sharing a fresh buffer costs an allocation).
    // A call that may be parked asks the inner server for progress, for
    // the task's status message, unless its client asked (`wire::progress`)
    // or its tool is known to answer at once and report none
    // (`runtime::quiet`).
    let raced = call.policy != ToolPolicy::Never;
    let tool = raced
        .then(|| call.name.clone().and_then(|name| bytes.get(name)))
        .flatten()
        .map(|name| runtime.quiet.tool(name));
    let token = call
        .strip
        .progress
        .filter(|_| raced && !tool.is_some_and(|tool| runtime.quiet.is_quiet(tool)))
        .map(|_| Token::next());
    let forwarded = rewrite::forwarded_call(&bytes, &call.strip, token.as_ref())
        .unwrap_or_else(|| bytes.clone());
    parts.headers.remove(CONTENT_LENGTH);
    // For the call observer, if there is one: recorded as the call ends.
    let watch = Watch::start(runtime.calls.as_ref(), &bytes, call.name.clone()).map(Watching::Own);
    if !raced {
        // Not raced: only the id is kept, for a gateway's error answer.
        let id = call_id(&bytes, &call.id);
        let future = inner.call(Request::from_parts(parts, RequestBody::buffered(forwarded)));
        let future = Box::pin(future);
        let keep_alive = runtime.config.keep_alive;
        return Either::Left(async move {
            let response = match future.await {
                Ok(response) => response,
                Err(error) => return Err(failed(watch, error)),
            };
            if response.status().is_server_error() {
                let response = Box::pin(rewrite::with_call_id(response, id)).await;
                return Ok(answered(response, watch));
            }
            Ok(answered(passed(response, keep_alive), watch))
        });
    }
    // What a parked call needs later and only the request has: its owner,
    // and the credentials and extensions for re-issuing (only the listed
    // extensions: `carry`).
    let kept = runtime.config.carried.take(&parts.extensions);
    let template = Template::with_extensions(&parts, kept);
    let request = Request::from_parts(parts, RequestBody::buffered(forwarded));
    let mut future = Box::pin(inner.call(request));
    let parking = Parking {
        watch,
        arrived: Instant::now(),
        // The request's span, entered by the caller (or, when no subscriber
        // takes it, the span around the request; none when no subscriber is
        // set up at all).
        span: crate::observe::current_span(),
        id: call.id,
        owner,
        body: bytes,
        strip: call.strip,
        params: call.params,
        name: call.name,
        template,
        handle: call.handle,
        progress: token,
        tool,
        runtime,
    };
    // Boxed as the caller of a parked call only when the call is parked: a
    // call answered in time just drops it.
    let caller = move || Caller::<S, B>::boxed(inner);
    // `Always` and a zero threshold park before the first answer;
    // otherwise the call races the threshold and an answer in time goes
    // back unchanged. A threshold too large to reach (`Duration::MAX`)
    // never parks.
    let threshold = match &parking.handle {
        Handle::Task => parking.runtime.config.threshold,
        Handle::Fallback(fallback) => fallback.after,
    };
    let park_now = call.policy == ToolPolicy::Always || threshold.is_zero();
    let deadline = parking.arrived.checked_add(threshold);
    // The captures are used in place, not re-bound: each binding of a
    // capture would take room of its own in the future.
    Either::Right(async move {
        if park_now {
            parking.quiet(false);
            return Ok(park(parking, caller(), future).await);
        }
        let Some(deadline) = deadline else {
            let response = match future.await {
                Ok(response) => passed(response, parking.runtime.config.keep_alive),
                Err(error) => return Err(failed(parking.watch, error)),
            };
            return Ok(answered(response, parking.watch));
        };
        match in_time(future.as_mut(), deadline).await {
            // Nothing of the race lives across an await from here: each
            // binding that did would take room of its own in the future,
            // which is boxed for every call (a small one comes from the
            // allocator's per-thread cache; glibc's takes up to 1,032 bytes).
            Ok(Ok(response)) if is_sse(&response) => Ok(live(response, deadline, parking, caller)),
            // A gateway's own error answer gets the call's id. Boxed: rare,
            // and its state would otherwise be reserved in every call's.
            Ok(Ok(response)) if response.status().is_server_error() => {
                let id = call_id(&parking.body, &parking.id);
                let response = Box::pin(rewrite::with_call_id(response, id)).await;
                Ok(answered(response, parking.watch))
            }
            Ok(Ok(response)) => {
                parking.quiet(true);
                Ok(answered(response.map(ResponseBody::inner), parking.watch))
            }
            Ok(Err(error)) => Ok(answered(
                inner_failed(error.into(), &parking),
                parking.watch,
            )),
            Err(_) => {
                parking.quiet(false);
                Ok(park(parking, caller(), future).await)
            }
        }
    })
}

/// The call's id (its JSON text) at `at` in `body`; `null` if not there.
fn call_id(body: &Bytes, at: &Range<usize>) -> Bytes {
    let null = || Bytes::from_static(b"null");
    body.get(at.clone())
        .map_or_else(null, |_| body.slice(at.clone()))
}

/// The parking of a call, from the request's future. Out of line, and
/// its future boxed: parking is rare, its code and its future large, and
/// neither belongs in the path of a call that answers in time.
#[cold]
#[inline(never)]
fn park<F, RB, E>(
    parking: Parking,
    caller: Box<dyn CallInner>,
    future: Pin<Box<F>>,
) -> ParkFuture<RB>
where
    F: Future<Output = Result<Response<RB>, E>> + Send + 'static,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
    E: Into<BoxError>,
{
    let flight = parking.flight(erase(future));
    Box::pin(parking.park(caller, flight, None))
}

/// The boxed future of [`park`].
type ParkFuture<RB> = Pin<Box<dyn Future<Output = Response<ResponseBody<RB>>> + Send>>;

/// The answer to a call whose inner service failed. Out of line: rare.
#[cold]
#[inline(never)]
fn inner_failed<RB>(error: BoxError, parking: &Parking) -> Response<ResponseBody<RB>> {
    tracing::warn!(%error, "the inner service failed");
    Flight::inner_failed(&parking.id()).map(ResponseBody::boxed)
}

/// A successful `text/event-stream` response: relayed live.
fn is_sse<RB>(response: &Response<RB>) -> bool {
    response.status().is_success() && sse::is_sse(response.headers())
}

/// The inner response future with its types erased, for a flight.
fn erase<F, RB, E>(future: Pin<Box<F>>) -> InnerFuture
where
    F: Future<Output = Result<Response<RB>, E>> + Send + 'static,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
    E: Into<BoxError>,
{
    Box::pin(future.map(|result| match result {
        Ok(response) => Ok(response.map(|body| body.map_err(Into::into).boxed_unsync())),
        Err(error) => Err(error.into()),
    }))
}

/// Reads `flight` up to its answer, keeping the last progress line.
/// Cancel-safe, as [`Flight::next_event`].
async fn until_answer(flight: &mut Flight, progress: &mut Option<String>) -> Box<Answer> {
    loop {
        match flight.next_event().await {
            Event::Progress(line) => *progress = Some(line),
            // Relayed with the rest of the stream if the call answers in
            // time (the tap holds it back); a parked call cannot be asked.
            Event::Request(_) => {}
            Event::Done(answer) => return answer,
        }
    }
}

/// An SSE answer: the head and each event go to the client as they come.
///
/// The first frame is read at once, without waiting: when it starts with an
/// event that is plainly the response (a fast call, as most inner servers
/// send it), the call answered in time and the stream goes to the client
/// untouched, its head included (nothing of parking is built). Anything
/// else hands the stream, with what was read, to [`Direct`], which relays
/// it event by event and, for an event that is not plainly the response or
/// at the threshold, to the race that reads every event
/// ([`racing_body`]). Out of line: a JSON answer never comes here.
#[inline(never)]
fn live<RB, C>(
    response: Response<RB>,
    deadline: Instant,
    mut parking: Parking,
    caller: C,
) -> Response<ResponseBody<RB>>
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
    C: FnOnce() -> Box<dyn CallInner> + Send + 'static,
{
    let watch = parking.watch.take();
    // Quiet unless the stream needs the full machinery (`slow` below).
    parking.quiet(true);
    let (mut head, body) = response.into_parts();
    let mut body = Box::pin(body);
    // Polled with no waker: a body not ready yet goes to `Direct`, which
    // polls it again, with the waker of whoever reads the response, before
    // it waits on it.
    let read = match body
        .as_mut()
        .poll_frame(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
            Ok(data) if starts_with_the_response(&data) => {
                let response = Response::from_parts(head, ResponseBody::resumed(data, body));
                return answered(response, watch);
            }
            Ok(data) => data,
            // Trailers first: dropped, as `Direct` drops them while racing.
            Err(_) => Bytes::new(),
        },
        Poll::Ready(Some(Err(error))) => {
            head.headers.remove(CONTENT_LENGTH);
            let body = ResponseBody::boxed(failing(error.into()));
            return answered(Response::from_parts(head, body), watch);
        }
        Poll::Ready(None) => {
            head.headers.remove(CONTENT_LENGTH);
            let body = ResponseBody::full(Bytes::new());
            return answered(Response::from_parts(head, body), watch);
        }
        Poll::Pending => Bytes::new(),
    };
    // The stream may end with the layer's own event instead of the rest.
    head.headers.remove(CONTENT_LENGTH);
    let limit = parking.limit();
    // Parking may take the watch from inside the body: both hold it.
    let (watch, parks) = watch.map(Watching::share).unzip();
    parking.watch = parks;
    let slow = move |unsent, body: Pin<Box<RB>>| {
        parking.quiet(false);
        let body = BodyExt::boxed_unsync(body.map_err(Into::into));
        racing_body::<RB>(unsent, body, deadline, (parking, caller()))
    };
    let body = sse_body(Direct::new(body, read, deadline, limit, slow), watch);
    Response::from_parts(head, ResponseBody::boxed(body))
}

/// The rest of a live SSE answer, `unsent` and then `body`, read event by
/// event while the call races the threshold; the race runs in the body (see
/// [`Live`]).
fn racing_body<RB>(
    unsent: Bytes,
    body: BoxBody,
    deadline: Instant,
    (parking, caller): (Parking, Box<dyn CallInner>),
) -> ResponseBody<RB>
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let token = parking.progress.clone();
    let (mut flight, relay) = Flight::live(parking.id(), (unsent, body), parking.limit(), token);
    let racing = Box::pin(async move {
        let mut progress = None;
        match timeout_at(deadline, until_answer(&mut flight, &mut progress)).await {
            Ok(answer) => answer.into_response::<RB>().into_body(),
            // The stream ends with the task handle (or, refused, goes on).
            // Boxed, as parking is rare: the racing future stays small.
            Err(_) => match Box::pin(parking.start(caller, flight, progress)).await {
                Parked::Task(reply) | Parked::Lost(reply) => {
                    ResponseBody::full(sse::event(&reply.body))
                }
                // Relayed on: the watch around the body records it.
                Parked::Refused(flight, _) => {
                    Box::pin(flight.into_response::<RB>()).await.into_body()
                }
            },
        }
    });
    ResponseBody::boxed(BodyExt::boxed_unsync(Live::new(relay, racing)))
}

/// What parking a call takes besides the flight and the caller.
struct Parking {
    /// The call observer's watch, if any: a task started takes it.
    watch: Option<Watching>,
    /// When the call was sent on.
    arrived: Instant,
    /// The request's span: parking may happen while the client reads the
    /// live body, outside the request's future.
    span: tracing::Span,
    runtime: Arc<Runtime>,
    /// Where the request's id is in `body`.
    id: Range<usize>,
    /// The store's owner key.
    owner: Option<String>,
    /// The body as the client sent it.
    body: Bytes,
    /// Where its `extensions` object and the tasks member's value are.
    strip: Strip,
    /// Where `params` is in `body`.
    params: Option<Range<usize>>,
    /// Where `params.name`, the tool's name, is in `body`.
    name: Option<Range<usize>>,
    template: Template,
    /// What the call answers when parked.
    handle: Handle,
    /// The layer's progress token in the call, if it wrote one.
    progress: Option<Token>,
    /// The called tool, as `runtime::quiet` knows it.
    tool: Option<Tool>,
}

/// How a park ended.
enum Parked {
    /// The `CreateTaskResult` reply: the task drives the call now.
    Task(Reply),
    /// Refused a task: the call stays with its client, watched as before.
    Refused(Flight, Option<Watching>),
    /// The call was lost on the way (an error reply for it).
    Lost(Reply),
}

impl Parking {
    /// Tells `runtime::quiet` how the call went: answered in time, plainly
    /// (`true`), or parked or stirring (`false`).
    fn quiet(&self, plainly: bool) {
        let Some(tool) = self.tool else { return };
        if plainly {
            self.runtime.quiet.answered(tool);
        } else {
            self.runtime.quiet.stirred(tool);
        }
    }

    /// The request's id, copied from the body.
    fn id(&self) -> Box<RawValue> {
        std::str::from_utf8(&self.body[self.id.clone()])
            .ok()
            .and_then(|id| RawValue::from_string(id.to_owned()).ok())
            // Never: classify found a JSON value there.
            .unwrap_or_else(|| RawValue::NULL.to_owned())
    }

    /// The most bytes of one answer a flight reads.
    fn limit(&self) -> usize {
        self.runtime.config.max_result_bytes
    }

    /// A flight over the call's response `future`.
    fn flight(&self, future: InnerFuture) -> Flight {
        Flight::new(self.id(), future, self.limit()).with_progress(self.progress.clone())
    }

    /// Asks the runtime for a task that drives `flight`; `progress` is the
    /// last progress line, the task's first status message.
    /// `caller` sends the call again when the task needs it.
    async fn start(
        self,
        caller: Box<dyn CallInner>,
        flight: Flight,
        progress: Option<String>,
    ) -> Parked {
        let span = self.span.clone();
        self.start_in_span(caller, flight, progress)
            .instrument(span)
            .await
    }

    async fn start_in_span(
        self,
        caller: Box<dyn CallInner>,
        flight: Flight,
        progress: Option<String>,
    ) -> Parked {
        let id = self.id();
        let Self {
            watch,
            arrived,
            span,
            runtime,
            id: _,
            owner,
            body,
            strip,
            params: params_at,
            name,
            template,
            handle,
            progress: token,
            tool: _,
        } = self;
        // The params as forwarded, cut from the body as sent along the
        // spans the one parse found. A session-based client's call is never
        // sent again (no params): its session would not outlive a restart.
        let resendable = match &handle {
            Handle::Task => true,
            Handle::Fallback(fallback) => fallback.modern(),
        };
        let params = params_at
            .filter(|_| resendable)
            .and_then(|at| rewrite::forwarded_params(&body, at, &strip, token.as_ref()))
            .and_then(|params| String::from_utf8(Vec::from(params)).ok())
            .and_then(|params| RawValue::from_string(params).ok())
            .unwrap_or_else(crate::wire::raw::empty_object);
        let start = Start {
            owner,
            tool: crate::wire::raw::string_at(&body, name),
            ttl: runtime.config.ttl,
            status_message: progress,
            caller,
            template,
            params,
            dialect: Box::<Plain>::default(),
            waited: arrived.elapsed(),
            call: watch.as_ref().and_then(Watching::parked_call),
        };
        match runtime.start(start, First::Running(flight)).await {
            Ok(snapshot) => {
                // Taken from the request's path: the task records the call.
                let _taken = watch.and_then(Watching::take);
                span.record("mcp.task.id", tracing::field::display(&snapshot.id));
                Parked::Task(match handle {
                    Handle::Task => Reply::result(&id, render(&snapshot, TaskView::Created)),
                    Handle::Fallback(fallback) => {
                        let names = &runtime.config.fallback.names;
                        let modern = fallback.modern();
                        Reply::result(&id, fallback::answer::parked(&snapshot, names, modern))
                    }
                })
            }
            Err(NotStarted { why, first }) => {
                let message = why.message(&runtime);
                if why.is_limit() {
                    // The refusal itself is logged once, at INFO, by the
                    // lifecycle event of the limit.
                    tracing::debug!(reason = message, "not parked: the call stays synchronous");
                } else {
                    tracing::warn!(reason = message, "not parked: the call stays synchronous");
                }
                match first.map(|first| *first) {
                    Some(First::Running(flight)) => Parked::Refused(flight, watch),
                    _ => {
                        let lost = "The call was lost while parking it";
                        Parked::Lost(failed(watch, Reply::internal(Some(&id), lost)))
                    }
                }
            }
        }
    }

    /// [`start`](Self::start) answered as JSON: the task handle, or the call
    /// as without the layer.
    async fn park<RB>(
        self,
        caller: Box<dyn CallInner>,
        flight: Flight,
        progress: Option<String>,
    ) -> Response<ResponseBody<RB>>
    where
        RB: Body<Data = Bytes> + Send + 'static,
        RB::Error: Into<BoxError>,
    {
        let id = call_id(&self.body, &self.id);
        match self.start(caller, flight, progress).await {
            Parked::Task(reply) | Parked::Lost(reply) => reply_response(reply),
            // Refused (a full quota): a gateway's error answer gets the id.
            Parked::Refused(flight, watch) => {
                let response = flight.into_response().await;
                answered(rewrite::with_call_id_in(response, id).await, watch)
            }
        }
    }
}
