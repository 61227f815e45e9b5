//! A declaring client's `tools/call`: forward it, race the threshold, and
//! park it if it runs long.
//!
//! | The call…                                  | The client gets                                  |
//! |--------------------------------------------|--------------------------------------------------|
//! | answers before the threshold               | the inner answer, unchanged (an SSE answer as it streams) |
//! | outlives it, and the runtime starts a task | the task handle (`CreateTaskResult`)             |
//! | outlives it, but is refused a task (draining, over a limit, the store failing) | the inner answer once it comes, as without the layer |
//! | has policy `Never`                         | the inner answer, the call never raced           |
//!
//! A refused call stays in the request's future, so a client that hangs up
//! still cancels it, and the layer never turns a flood of calls into a flood
//! of background work. Its response goes out at once from where it stands
//! (what was read, then the rest as it streams), so the layer holds nothing
//! more of it.
//!
//! An SSE answer is relayed live: the head and each event reach the client
//! as the inner server sends them (see `flight::live`). If the threshold
//! passes first, the layer ends that stream with the `CreateTaskResult` as
//! the response to the call, after the notifications already relayed. A
//! request of the inner server before the threshold is held back, as for a
//! JSON answer: relayed if the call answers in time, dropped if it is parked.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::value::RawValue;
use tokio::time::{Instant, timeout_at};
use tower_service::Service;

use crate::body::{BoxError, RequestBody, ResponseBody, reply_response};
use crate::classify::ToolCall;
use crate::flight::caller::{CallInner, Caller};
use crate::flight::driver::Plain;
use crate::flight::live::{Live, sse_event};
use crate::flight::{Answer, Event, Flight, InnerFuture, Opened};
use crate::mrtr::Template;
use crate::policy::ToolPolicy;
use crate::rewrite;
use crate::runtime::{First, NotStarted, Runtime, Start};
use crate::wire::jsonrpc::Reply;
use crate::wire::view::{TaskView, render};

/// The `params` object at `range` of a body classification has read.
fn raw_params(body: &[u8], range: std::ops::Range<usize>) -> Box<RawValue> {
    body.get(range)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| RawValue::from_string(text.to_owned()).ok())
        .unwrap_or_else(crate::wire::raw::empty_object)
}

/// Forwards, races and parks a declaring client's `tools/call`.
pub(crate) async fn tool_call<S, B, RB>(
    runtime: Arc<Runtime>,
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
    let parking = Parking {
        owner: runtime.owner(&parts).key,
        params: raw_params(&body, params),
        template: Template::from_parts(&parts),
        caller: Caller::<S, B>::boxed(inner.clone()),
        id: call.id.clone(),
        runtime,
    };
    let request = Request::from_parts(parts, RequestBody::buffered(body));
    let future: InnerFuture = Box::pin(inner.call(request).map(|result| match result {
        Ok(response) => Ok(response.map(|body| body.map_err(Into::into).boxed_unsync())),
        Err(error) => Err(error.into()),
    }));
    let limit = parking.runtime.config.max_result_bytes;
    let mut flight = Flight::new(call.id, future, limit);
    // `Always` and a zero threshold park before the first answer; otherwise
    // the call races the threshold and an answer in time goes back unchanged.
    let threshold = parking.runtime.config.threshold;
    if call.policy == ToolPolicy::Always || threshold.is_zero() {
        return Ok(parking.park(flight, None).await);
    }
    let deadline = Instant::now() + threshold;
    match timeout_at(deadline, flight.open()).await {
        Ok(Err(answer)) => Ok(answer.into_response()),
        Ok(Ok(Opened::Sse)) => Ok(live(flight, deadline, parking)),
        Ok(Ok(Opened::Json)) => {
            let mut progress = None;
            match timeout_at(deadline, until_answer(&mut flight, &mut progress)).await {
                Ok(answer) => Ok(answer.into_response()),
                Err(_) => Ok(parking.park(flight, progress).await),
            }
        }
        Err(_) => Ok(parking.park(flight, None).await),
    }
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

/// An SSE answer: the head and each event go to the client as they come,
/// and the race runs in the body (see [`Live`]).
fn live<RB>(mut flight: Flight, deadline: Instant, parking: Parking) -> Response<ResponseBody<RB>>
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let Some((head, relay)) = flight.go_live() else {
        // `open` said SSE; nothing else can be here.
        let reply = Reply::internal(Some(&parking.id), "The call was lost while relaying it");
        return reply_response(reply);
    };
    let racing = Box::pin(async move {
        let mut progress = None;
        match timeout_at(deadline, until_answer(&mut flight, &mut progress)).await {
            Ok(answer) => answer.into_response::<RB>().into_body(),
            // The stream ends with the task handle (or, refused, goes on).
            Err(_) => match parking.start(flight, progress).await {
                Parked::Task(reply) | Parked::Lost(reply) => {
                    ResponseBody::full(sse_event(&reply.body))
                }
                Parked::Refused(flight) => flight.into_response::<RB>().await.into_body(),
            },
        }
    });
    let body = BodyExt::boxed_unsync(Live::new(relay, racing));
    Response::from_parts(head, ResponseBody::boxed(body))
}

/// What parking a call takes besides the flight.
struct Parking {
    runtime: Arc<Runtime>,
    id: Box<RawValue>,
    /// The store's owner key.
    owner: Option<String>,
    params: Box<RawValue>,
    template: Template,
    caller: Box<dyn CallInner>,
}

/// How a park ended.
enum Parked {
    /// The `CreateTaskResult` reply: the task drives the call now.
    Task(Reply),
    /// Refused a task: the call stays with its client.
    Refused(Flight),
    /// The call was lost on the way (an error reply for it).
    Lost(Reply),
}

impl Parking {
    /// Asks the runtime for a task that drives `flight`; `progress` is the
    /// last progress line, the task's first status message.
    async fn start(self, flight: Flight, progress: Option<String>) -> Parked {
        let Self {
            runtime,
            id,
            owner,
            params,
            template,
            caller,
        } = self;
        let start = Start {
            owner,
            ttl: runtime.config.ttl,
            status_message: progress,
            caller,
            template,
            params,
            dialect: Box::new(Plain),
        };
        match runtime.start(start, First::Running(flight)).await {
            Ok(snapshot) => Parked::Task(Reply::result(&id, render(&snapshot, TaskView::Created))),
            Err(NotStarted { why, first }) => {
                let message = why.message(&runtime);
                if why.is_limit() {
                    tracing::info!(reason = message, "not parked: the call stays synchronous");
                } else {
                    tracing::warn!(reason = message, "not parked: the call stays synchronous");
                }
                match first.map(|first| *first) {
                    Some(First::Running(flight)) => Parked::Refused(flight),
                    _ => Parked::Lost(Reply::internal(
                        Some(&id),
                        "The call was lost while parking it",
                    )),
                }
            }
        }
    }

    /// [`start`](Self::start) answered as JSON: the task handle, or the call
    /// as without the layer.
    async fn park<RB>(
        self,
        flight: Flight,
        progress: Option<String>,
    ) -> Response<ResponseBody<RB>> {
        match self.start(flight, progress).await {
            Parked::Task(reply) | Parked::Lost(reply) => reply_response(reply),
            Parked::Refused(flight) => flight.into_response().await,
        }
    }
}
