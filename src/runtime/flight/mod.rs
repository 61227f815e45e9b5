//! An inner `tools/call` in flight: reading it up to its answer, racing it
//! against the threshold, and driving it in the background once parked.
//!
//! A call whose response head arrives in time needs no flight unless it is
//! an SSE stream: `modern::tool_call` returns any other response as it is. An SSE answer
//! whose first event is plainly the response needs none either (`direct`
//! relays it by its bytes); any other is read by a live flight that releases
//! each event to the client as it goes (`live`). A call that outlives the
//! threshold before its head gets a flight at parking.
//!
//! A flight owns the inner response future and, once the head has arrived,
//! the body. [`Flight::next_event`] is cancel-safe: the race can give up on it
//! at the threshold and the background driver picks up exactly where it stopped.
//!
//! | The inner server answers…                      | Before the threshold       | After parking                         |
//! |------------------------------------------------|----------------------------|---------------------------------------|
//! | a result (also `isError: true`)                | relayed unchanged          | `completed`, result verbatim          |
//! | a JSON-RPC error                               | relayed unchanged          | `failed`, error verbatim              |
//! | `input_required` (MRTR)                        | relayed unchanged          | `input_required` (see `runtime::drive`)|
//! | `notifications/progress`                       | relayed as it comes¹       | `statusMessage`                       |
//! | an HTTP error status                           | relayed unchanged          | `failed`, `-32603`                    |
//! | nothing: the inner service returns `Err`       | HTTP 502, JSON-RPC `-32603` for the call | `failed`, `-32603`      |
//! | a body that is not MCP, or ends without answer | relayed unchanged          | `failed`, `-32603`                    |
//!
//! ¹ On an SSE stream, each event once the flight has read it whole; after a
//! request of the inner server, held back with it until the answer. Never
//! one for the layer's own progress token (`wire::progress`): the client
//! did not ask for it.
//!
//! While an SSE answer can still reach its client as it came, an event that
//! names no method and holds a result or an error is taken for the response
//! by its bytes (`wire::plainly_a_response`), not parsed; a parked call's
//! flight reads every event whole.
//!
//! With a call observer installed, an answer that goes back in time is
//! followed to its end by `watched`, which records how the call ended.

pub(crate) mod ask;
pub(crate) mod caller;
mod collect;
pub(crate) mod direct;
pub(crate) mod event;
pub(crate) mod live;
mod segment;
pub(crate) mod tap;
pub(crate) mod watched;

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::response::Parts;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use crate::body::{BodyError, BoxBody, BoxError, ResponseBody};
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR, Reply};
use crate::wire::progress::Token;
use crate::wire::{
    InnerMessage, Outcome, content_type, plainly_a_response, read_inner_message, read_outcome, sse,
};
use collect::{Collected, collect};
use tap::Tap;

/// The inner service's response future, boxed: flights are the owned path.
pub(crate) type InnerFuture =
    Pin<Box<dyn Future<Output = Result<Response<BoxBody>, BoxError>> + Send>>;

type Collecting = Pin<Box<dyn Future<Output = Collected> + Send>>;

enum Stage {
    Head(InnerFuture),
    // The response heads are boxed: a parked flight mostly waits in `Head`,
    // and every byte of this enum is held per parked task.
    Json(Box<Parts>, Collecting),
    Sse(Box<Parts>, Box<Tap>),
    Finished,
}

/// What a flight reports while it runs.
pub(crate) enum Event {
    /// A progress line from a `notifications/progress`.
    Progress(String),
    /// A request of the inner server to the client, verbatim.
    Request(Box<RawValue>),
    /// The call is over; how it ended.
    Done(Box<Answer>),
}

fn done(answer: Answer) -> Event {
    Event::Done(Box::new(answer))
}

/// How the inner server answered, with what is needed to relay it unchanged.
pub(crate) enum Answer {
    /// A JSON-RPC response in a JSON body (`bytes`).
    Json { head: Parts, bytes: Bytes },
    /// A JSON-RPC response on an SSE stream, `message` the data of its event.
    Sse {
        head: Parts,
        tap: Box<Tap>,
        message: String,
    },
    /// Anything that is not an MCP answer: an HTTP error, another content
    /// type, an unreadable message, a stream that ended without the response.
    Unusable {
        response: Response<BoxBody>,
        reason: String,
        /// The answer was cut off (the inner service failed, its body or
        /// stream broke or ended early): the call may not have run to its
        /// end, and a call that may run again can.
        cut: bool,
    },
}

impl Answer {
    /// The answer as the client would have received it from the inner server.
    pub(crate) fn into_response<B>(self) -> Response<ResponseBody<B>> {
        match self {
            Self::Json { head, bytes, .. } => Response::from_parts(head, ResponseBody::full(bytes)),
            Self::Sse { head, tap, .. } => {
                let body = BodyExt::boxed_unsync(tap.replay());
                Response::from_parts(head, ResponseBody::boxed(body))
            }
            Self::Unusable { response, .. } => response.map(ResponseBody::boxed),
        }
    }

    /// Whether the call never reached the inner server ([`Unreached`]):
    /// sending it again runs nothing twice.
    ///
    /// [`Unreached`]: crate::Unreached
    pub(crate) fn unreached(&self) -> bool {
        match self {
            Self::Unusable { response, .. } => response
                .extensions()
                .get::<crate::unreached::Unreached>()
                .is_some(),
            _ => false,
        }
    }

    /// Whether the answer broke off before the call's response (the inner
    /// service failed, its body or stream broke or ended early): the tool
    /// may not have run to its end.
    pub(crate) fn cut(&self) -> bool {
        matches!(self, Self::Unusable { cut: true, .. })
    }

    /// How the call ended, for a task to record; `Err` with the reason when
    /// the answer is unusable. Read only here: an answer relayed to its
    /// client never needs it.
    pub(crate) fn into_outcome(self) -> Result<Outcome, String> {
        match self {
            Self::Json { bytes, .. } => std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| read_outcome(text).map_err(|e| e.to_string()))
                .map_err(|error| format!("the JSON body is not JSON-RPC: {error}")),
            Self::Sse { message, .. } => read_outcome(&message)
                .map_err(|error| format!("an SSE event is not JSON-RPC: {error}")),
            Self::Unusable { reason, .. } => Err(reason),
        }
    }
}

/// An inner call the layer is reading.
pub(crate) struct Flight {
    id: Box<RawValue>,
    stage: Stage,
    /// Whether the bytes read may still be relayed to a client; a parked or
    /// re-issued call keeps none of them.
    relay: bool,
    /// The most bytes of one answer (a JSON body, an SSE event) read.
    limit: usize,
    /// The layer's progress token in the call (`wire::progress`), for the
    /// tap of its stream, which keeps those notifications from the client.
    progress: Option<Token>,
}

impl Flight {
    /// A flight for the request `id`, whose response is `future`; an answer
    /// may take `limit` bytes.
    pub(crate) fn new(id: Box<RawValue>, future: InnerFuture, limit: usize) -> Self {
        Self {
            id,
            stage: Stage::Head(future),
            relay: true,
            limit,
            progress: None,
        }
    }

    /// The same flight, for a call sent with the layer's progress `token`.
    pub(crate) fn with_progress(self, token: Option<Token>) -> Self {
        Self {
            progress: token,
            ..self
        }
    }

    /// A flight whose bytes no client will ever receive (a re-issued call).
    pub(crate) fn background(id: Box<RawValue>, future: InnerFuture, limit: usize) -> Self {
        Self {
            relay: false,
            ..Self::new(id, future, limit)
        }
    }

    /// The JSON-RPC id of the request the flight reads the answer to.
    pub(crate) fn id(&self) -> &RawValue {
        &self.id
    }

    /// Stops keeping bytes for a relay that will never happen, now and for
    /// any stream the call has yet to open.
    pub(crate) fn parked(&mut self) {
        self.relay = false;
        self.progress = None;
        if let Stage::Sse(_, tap) = &mut self.stage {
            tap.stop_recording();
        }
    }

    /// A flight over an SSE stream whose head went to the client already,
    /// `unsent` (bytes read from it and not yet relayed) and then `body`:
    /// the flight, and what it releases for the client as it reads. The
    /// call was sent with the layer's progress token `progress`, if any.
    pub(crate) fn live(
        id: Box<RawValue>,
        (unsent, body): (Bytes, BoxBody),
        limit: usize,
        progress: Option<Token>,
    ) -> (Self, tap::Relay) {
        let tap = Box::new(Tap::new(unsent, body, true, limit, progress));
        let relay = tap.relay();
        // A parked call never needs the head; the client has it.
        let head = Box::new(Response::new(()).into_parts().0);
        let flight = Self {
            id,
            stage: Stage::Sse(head, tap),
            relay: true,
            limit,
            progress: None,
        };
        (flight, relay)
    }

    /// Reads until the next progress line or the answer. Cancel-safe: every
    /// await is on state owned by `self`.
    pub(crate) async fn next_event(&mut self) -> Event {
        loop {
            match &mut self.stage {
                Stage::Head(future) => match future.await {
                    Ok(response) => match self.read_head(response) {
                        Ok(stage) => self.stage = stage,
                        Err(answer) => return self.finish(*answer),
                    },
                    Err(error) => {
                        tracing::warn!(%error, "the inner service failed");
                        let answer = self.failed("the inner service failed".to_owned(), true);
                        return self.finish(answer);
                    }
                },
                Stage::Json(_, collecting) => {
                    let collected = collecting.await;
                    let Stage::Json(head, _) = std::mem::replace(&mut self.stage, Stage::Finished)
                    else {
                        continue;
                    };
                    return done(self.read_json(*head, collected));
                }
                Stage::Sse(_, tap) => match tap.next().await {
                    Some(Ok(event)) => {
                        // Events without data (a priming event that only
                        // sets an id for resumption) carry no message.
                        let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                            continue;
                        };
                        // While the answer may still reach its client as it
                        // came, the response is known by its bytes, not
                        // parsed: a task reads it whole when it records it.
                        if self.relay && plainly_a_response(data.as_bytes()) {
                            return self.finish_sse(data);
                        }
                        match read_inner_message(&data, &self.id, tap.progress()) {
                            Ok(InnerMessage::Response) => return self.finish_sse(data),
                            Ok(InnerMessage::Progress { line, ours }) => {
                                if ours {
                                    // Asked for by the layer, not the client.
                                    tap.forget_event();
                                }
                                match line {
                                    Some(line) => return Event::Progress(line),
                                    None => continue,
                                }
                            }
                            Ok(InnerMessage::Request(message)) => {
                                // Relayed only with an answer in time.
                                tap.hold();
                                return Event::Request(message);
                            }
                            Ok(_) => continue,
                            Err(error) => {
                                let reason = format!("an SSE event is not JSON-RPC: {error}");
                                return self.finish_sse_unusable(reason, false);
                            }
                        }
                    }
                    Some(Err(error)) if self.relay && too_large(&error).is_some() => {
                        return self.finish_sse_too_large(&error);
                    }
                    Some(Err(error)) => {
                        let reason = stream_broke(&error);
                        let cut = too_large(&error).is_none();
                        return self.finish_sse_unusable(reason, cut);
                    }
                    None => {
                        let reason = "the SSE stream ended without a response".to_owned();
                        return self.finish_sse_unusable(reason, true);
                    }
                },
                Stage::Finished => {
                    return done(
                        self.failed("the flight was read past its answer".to_owned(), false),
                    );
                }
            }
        }
    }

    /// The call as its client would have had it without the layer, from
    /// where the flight stands, for a call that stays with its client after
    /// all: the rest of the response streams through and nothing more is
    /// read or held here.
    pub(crate) async fn into_response<B>(mut self) -> Response<ResponseBody<B>> {
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Head(future) => match future.await {
                Ok(response) => response.map(ResponseBody::boxed),
                Err(error) => {
                    tracing::warn!(%error, "the inner service failed");
                    let answer = self.failed("the inner service failed".to_owned(), true);
                    answer.into_response()
                }
            },
            Stage::Json(head, collecting) => {
                let collected = collecting.await;
                self.read_json(*head, collected).into_response()
            }
            Stage::Sse(head, tap) => {
                let body = BodyExt::boxed_unsync(tap.replay());
                Response::from_parts(*head, ResponseBody::boxed(body))
            }
            Stage::Finished => {
                let answer = self.failed("the flight was read past its answer".to_owned(), false);
                answer.into_response()
            }
        }
    }

    fn finish(&mut self, answer: Answer) -> Event {
        self.stage = Stage::Finished;
        done(answer)
    }

    fn read_head(&self, response: Response<BoxBody>) -> Result<Stage, Box<Answer>> {
        let kind = content_type(response.headers());
        // A proxy in the path that lost the upstream mid-call answers 502:
        // the answer broke off there.
        let cut = response.status() == StatusCode::BAD_GATEWAY;
        let reason = if !response.status().is_success() {
            format!("the inner server answered HTTP {}", response.status())
        } else if sse::is_sse(response.headers()) {
            let (head, body) = response.into_parts();
            let progress = self.progress.clone();
            let tap = Box::new(Tap::new(
                Bytes::new(),
                body,
                self.relay,
                self.limit,
                progress,
            ));
            return Ok(Stage::Sse(Box::new(head), tap));
        } else if kind.starts_with("application/json") {
            let (head, body) = response.into_parts();
            let collecting = Box::pin(collect(body, self.limit));
            return Ok(Stage::Json(Box::new(head), collecting));
        } else {
            format!("the inner server answered with content type {kind:?}, not an MCP response")
        };
        Err(Box::new(Answer::Unusable {
            response,
            reason,
            cut,
        }))
    }

    fn read_json(&self, head: Parts, collected: Collected) -> Answer {
        let bytes = match collected {
            Collected::Whole(bytes) => bytes,
            Collected::Failed(error) => {
                let mut head = head;
                head.headers.remove(http::header::CONTENT_LENGTH);
                // Transport details (addresses, say) go to the log only.
                tracing::warn!(%error, "the inner response body broke");
                return Answer::Unusable {
                    response: Response::from_parts(head, empty()),
                    reason: "the response body broke".to_owned(),
                    cut: true,
                };
            }
            // Relayed as it is, never buffered whole: only a parked call,
            // which must store it, fails for its size.
            Collected::Over(body) => {
                return Answer::Unusable {
                    response: Response::from_parts(head, body),
                    reason: format!(
                        "the result is larger than the layer's limit of {} bytes",
                        self.limit
                    ),
                    cut: false,
                };
            }
        };
        let read = std::str::from_utf8(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|text| read_inner_message(text, &self.id, None).map_err(|e| e.to_string()));
        match read {
            Ok(InnerMessage::Response) => Answer::Json { head, bytes },
            Ok(_) => Answer::Unusable {
                reason: "the JSON body is not the response to this call".to_owned(),
                response: Response::from_parts(head, full(bytes)),
                cut: false,
            },
            Err(error) => Answer::Unusable {
                reason: format!("the JSON body is not JSON-RPC: {error}"),
                response: Response::from_parts(head, full(bytes)),
                cut: false,
            },
        }
    }

    fn finish_sse(&mut self, message: String) -> Event {
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Sse(head, tap) => done(Answer::Sse {
                head: *head,
                tap,
                message,
            }),
            _ => done(self.failed("lost the SSE stream".to_owned(), false)),
        }
    }

    /// An event over the limit while the answer may still reach its
    /// client: the whole events read so far, then a JSON-RPC error for the
    /// call that names the limit; the inner stream is dropped, so nothing
    /// holds more than the limit of it.
    fn finish_sse_too_large(&mut self, error: &sse_stream::Error) -> Event {
        let reason = stream_broke(error);
        tracing::info!(reason, "an SSE answer was cut at the layer's event limit");
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Sse(head, tap) => {
                let message = format!("{reason} (max_result_bytes)");
                let reply = Reply::error(
                    StatusCode::OK,
                    Some(&self.id),
                    ErrorObject::new(INTERNAL_ERROR, message),
                );
                let body = tap.whole_then(sse::event(&reply.body));
                done(Answer::Unusable {
                    response: Response::from_parts(*head, body),
                    reason,
                    cut: false,
                })
            }
            _ => done(self.failed(reason, false)),
        }
    }

    /// An SSE answer that cannot be used (`cut`: it broke off).
    fn finish_sse_unusable(&mut self, reason: String, cut: bool) -> Event {
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Sse(head, tap) => {
                let body = BodyExt::boxed_unsync(tap.replay());
                done(Answer::Unusable {
                    response: Response::from_parts(*head, body),
                    reason,
                    cut,
                })
            }
            _ => done(self.failed(reason, cut)),
        }
    }
}

/// The layer's event limit, when that is what stopped an SSE stream.
fn too_large(error: &sse_stream::Error) -> Option<&tap::EventTooLarge> {
    let sse_stream::Error::Body(body) = error else {
        return None;
    };
    body.downcast_ref::<BodyError>()
        .and_then(|inner| inner.0.downcast_ref::<tap::EventTooLarge>())
}

/// Why an SSE stream stopped, as a parked task records it: the layer's own
/// limit by name, transport details only in the log.
fn stream_broke(error: &sse_stream::Error) -> String {
    if let Some(limit) = too_large(error) {
        return limit.to_string();
    }
    tracing::warn!(%error, "the inner SSE stream broke");
    "the SSE stream broke".to_owned()
}

fn empty() -> BoxBody {
    full(Bytes::new())
}

fn full(bytes: Bytes) -> BoxBody {
    BodyExt::boxed_unsync(http_body_util::Full::new(bytes).map_err(|never| match never {}))
}

/// The body of the answer the layer makes up when the inner service gave
/// nothing to relay: a JSON-RPC error for the call, never an empty 502.
pub(crate) const INNER_FAILED: &str = "The MCP server behind mcp-tasks failed to answer this call";

impl Flight {
    /// HTTP 502 with a JSON-RPC `-32603` error for this call; `reason` is
    /// what a parked task records, `cut` whether the answer broke off.
    fn failed(&self, reason: String, cut: bool) -> Answer {
        Answer::Unusable {
            response: Self::inner_failed(&self.id),
            reason,
            cut,
        }
    }

    /// What the client of call `id` gets when the inner service failed to
    /// answer: HTTP 502 with a JSON-RPC `-32603` error, never an empty body.
    pub(crate) fn inner_failed(id: &RawValue) -> Response<BoxBody> {
        let reply = Reply::error(
            StatusCode::BAD_GATEWAY,
            Some(id),
            ErrorObject::new(INTERNAL_ERROR, INNER_FAILED),
        );
        let mut response = Response::new(full(reply.body));
        *response.status_mut() = reply.status;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        response
    }
}
