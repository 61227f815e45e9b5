//! One call relayed to the child: its request forwarded under the bridge's
//! id, its answer (and progress, as SSE) waited for and given back; and
//! the retry of a call that asked its client for input (`input.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body::Frame;
use http_body_util::StreamBody;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::bridge::Bridge;
use super::calls::{NOTES, Pending, Waiter};
use super::input::Resumed;
use super::reply::json;
use crate::generation::message::{
    MISSING_CAPABILITY, Message, error_response, event, is_error, member, replaced,
};
use crate::generation::results::{is_cacheable, modernize};
use mcp_tasks::body::{BoxBody, BoxError};
use mcp_tasks::wire::raw::edit_object;

/// Forwards a request to the child and answers with what it says; the
/// retry of a call that asked its client for input continues that call.
pub(super) async fn call(
    bridge: Arc<Bridge>,
    body: &Bytes,
    message: &Message<'_>,
    session: Option<String>,
    declared: Vec<String>,
    stream: bool,
) -> Response<BoxBody> {
    let modern = session.is_none();
    let client_id = message.id.map_or("null", RawValue::get).to_owned();
    let wait = bridge.settings.place_timeout;
    let placed_by = Instant::now() + wait;
    // A child being started again is waited for, as a place is.
    if let Err(why) = bridge.life.wait_up(placed_by).await {
        return unreached(failed(&client_id, &why));
    }
    // The place first: a retry takes its round only once it can go on.
    let slot = match tokio::time::timeout_at(placed_by, bridge.slots.clone().acquire_owned()).await
    {
        Ok(Ok(slot)) => slot,
        Ok(Err(_)) => return failed(&client_id, "The stdio server is closed"),
        Err(_) => {
            let why = format!(
                "The stdio server has {} calls in flight and none ended within {wait:?}; try again later",
                bridge.settings.max_in_flight
            );
            return json(
                StatusCode::SERVICE_UNAVAILABLE,
                error_response(&client_id, -32603, &why),
            );
        }
    };
    let (notes, noted) = mpsc::channel(NOTES);
    let (answer, answered) = oneshot::channel();
    let waiter = Waiter {
        client_id: client_id.clone(),
        token: message.progress_token().map(|token| token.get().to_owned()),
        session,
        modern,
        cacheable: modern && message.method.as_deref().is_some_and(is_cacheable),
        declared,
        notes,
        answer,
    };
    let state = modern.then(|| request_state(message)).flatten();
    let (own, lines) = match state {
        Some(token) => {
            let responses = message
                .params
                .and_then(|params| member(params, "inputResponses"));
            let answer = |key: &str| {
                responses
                    .and_then(|responses| member(responses, key))
                    .map(|response| response.get().to_owned())
            };
            match bridge.rounds.resume(&token, waiter, &bridge.calls, answer) {
                Resumed::Waiting { call, lines } => (call, lines),
                Resumed::Ended(early) => {
                    // The call ended while its client was away.
                    let early = replaced(&early, &[(id_of(&early), &client_id)]);
                    return json(
                        StatusCode::OK,
                        early.map_or_else(Bytes::new, |early| modernize(early, false)),
                    );
                }
                Resumed::Missing(key) => {
                    let why = format!("inputResponses has no answer for {key:?}");
                    return json(StatusCode::OK, error_response(&client_id, -32602, &why));
                }
                Resumed::Unknown => {
                    let why = "Unknown or expired requestState: call the tool again without it";
                    return json(StatusCode::OK, error_response(&client_id, -32602, why));
                }
                Resumed::Gone => return failed(&client_id, &stopped(&bridge)),
            }
        }
        None => {
            let own = match filed(&bridge, waiter, placed_by).await {
                Ok(own) => own,
                Err(why) => return unreached(failed(&client_id, &why)),
            };
            match forwarded(body, message, own, modern, &bridge.token_prefix) {
                Some(line) => (own, vec![line]),
                None => {
                    bridge.calls.take(own);
                    let reply = error_response(&client_id, -32600, "Invalid Request");
                    return json(StatusCode::BAD_REQUEST, reply);
                }
            }
        }
    };
    let mut pending = Pending {
        calls: bridge.calls.clone(),
        to_child: bridge.sender(),
        id: own,
        answered: false,
        reason: "The client went away",
        _slot: slot,
    };
    for line in lines {
        if let Err(why) = bridge.send(line).await {
            return failed(&client_id, &why);
        }
    }
    let method = message.method.as_deref().unwrap_or_default();
    let limit = bridge.settings.timeout_for(method);
    let answered = bounded(answered, limit, Arc::downgrade(&bridge));
    if stream {
        let method = method.to_owned();
        let ending =
            move |ended: &Ended| error_response(&client_id, -32603, &ended.message(&method));
        return sse(pending, noted, answered, ending);
    }
    // Progress has no reader on the JSON path.
    drop(noted);
    match answered.await {
        Ok(answer) => {
            pending.answered = true;
            // A 2026-07-28 server answers a missing capability with 400.
            let status = if modern && is_error(&answer, MISSING_CAPABILITY) {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            json(status, answer)
        }
        Err(ended) => {
            pending.reason = ended.reason();
            json(
                ended.status(),
                error_response(&client_id, -32603, &ended.message(method)),
            )
        }
    }
}

/// Why a call ended without the child's answer.
enum Ended {
    /// The child stopped (why).
    Stopped(String),
    /// It did not answer within the bound.
    TimedOut(Duration),
}

impl Ended {
    fn status(&self) -> StatusCode {
        match self {
            Self::Stopped(_) => StatusCode::BAD_GATEWAY,
            Self::TimedOut(_) => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    fn message(&self, method: &str) -> String {
        match self {
            Self::Stopped(why) => why.clone(),
            Self::TimedOut(limit) => {
                format!(
                    "The stdio server did not answer {method} within {limit:?}; the call was cancelled"
                )
            }
        }
    }

    /// The reason the child is given with its `notifications/cancelled`.
    fn reason(&self) -> &'static str {
        match self {
            Self::Stopped(_) => "The stdio server stopped",
            Self::TimedOut(_) => "The gateway's time limit for the call passed",
        }
    }
}

/// The call's answer, or why it will not come.
type Answered = Pin<Box<dyn Future<Output = Result<Bytes, Ended>> + Send>>;

/// `answered`, waited for at most `limit`; when the child went away
/// before it, `bridge` says why.
fn bounded(
    answered: oneshot::Receiver<Bytes>,
    limit: Option<Duration>,
    bridge: Weak<Bridge>,
) -> Answered {
    Box::pin(async move {
        let answer = match limit {
            Some(limit) => match tokio::time::timeout(limit, answered).await {
                Ok(answer) => answer,
                Err(_) => return Err(Ended::TimedOut(limit)),
            },
            None => answered.await,
        };
        answer.map_err(|_| {
            let why = bridge.upgrade().as_deref().and_then(Bridge::gone);
            Ended::Stopped(why.unwrap_or_else(|| "The stdio server stopped".to_owned()))
        })
    })
}

/// Files `waiter` with the child's calls; while the child is being started
/// again, once it runs (up to `deadline`). Or why it could not be filed.
async fn filed(bridge: &Bridge, mut waiter: Waiter, deadline: Instant) -> Result<u64, String> {
    loop {
        match bridge.calls.add(waiter) {
            Ok(own) => return Ok(own),
            Err(back) => waiter = back,
        }
        bridge.life.wait_up(deadline).await?;
        if Instant::now() >= deadline {
            return Err(stopped(bridge));
        }
        // Up, but its calls not yet open: the restart is between the two.
        tokio::task::yield_now().await;
    }
}

/// `response`, marked as the answer to a call the child never got: a
/// task's call is sent again once a child runs.
fn unreached(mut response: Response<BoxBody>) -> Response<BoxBody> {
    response.extensions_mut().insert(mcp_tasks::Unreached);
    response
}

/// `502` with a JSON-RPC error saying `why`.
fn failed(client_id: &str, why: &str) -> Response<BoxBody> {
    json(
        StatusCode::BAD_GATEWAY,
        error_response(client_id, -32603, why),
    )
}

fn stopped(bridge: &Bridge) -> String {
    bridge
        .gone()
        .unwrap_or_else(|| "The stdio server stopped".into())
}

/// The `id` member of a message the child wrote.
fn id_of(message: &[u8]) -> &RawValue {
    Message::read(message)
        .and_then(|message| message.id)
        .unwrap_or(RawValue::NULL)
}

/// `params.requestState`, when it is a string.
fn request_state(message: &Message<'_>) -> Option<String> {
    let state = member(message.params?, "requestState")?;
    serde_json::from_str(state.get()).ok()
}

/// The request as the child gets it: under the bridge's id `own`, its
/// progress token `"<prefix>-<own>"` (the prefix a secret of the bridge's),
/// and, from a 2026-07-28 client, without the per-request `_meta` members
/// of that era (a handshake-era server may refuse them: the bridge speaks
/// the child's era for the client).
fn forwarded(
    body: &[u8],
    message: &Message<'_>,
    own: u64,
    modern: bool,
    prefix: &str,
) -> Option<Bytes> {
    let token = format!("\"{prefix}-{own}\"");
    let own = own.to_string();
    let mut places: Vec<(&RawValue, String)> = Vec::with_capacity(2);
    if let Some(id) = message.id {
        places.push((id, own.clone()));
    }
    let meta = message.params.and_then(|params| member(params, "_meta"));
    match (modern, meta) {
        (true, Some(meta)) => {
            let token = member(meta, "progressToken").map(|_| token.as_str());
            let mut edits: Vec<(&str, Option<&str>)> =
                ERA_META.iter().map(|key| (*key, None)).collect();
            edits.push(("progressToken", token));
            places.push((meta, edit_object(meta.get(), &edits)?));
        }
        _ => {
            if let Some(sent) = message.progress_token() {
                places.push((sent, token.clone()));
            }
        }
    }
    let places: Vec<(&RawValue, &str)> = places
        .iter()
        .map(|(at, with)| (*at, with.as_str()))
        .collect();
    replaced(body, &places)
}

/// The `_meta` members a 2026-07-28 request carries in place of the
/// handshake.
const ERA_META: [&str; 4] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
];

/// The call's progress, then its answer (or, when it ends without one,
/// the error `ending` writes), as SSE events; dropping the body before the
/// answer cancels the call.
fn sse(
    pending: Pending,
    noted: mpsc::Receiver<Bytes>,
    answered: Answered,
    ending: impl Fn(&Ended) -> Bytes + Send + Sync + 'static,
) -> Response<BoxBody> {
    enum Step {
        Notes,
        Answer,
        Done,
    }
    let ending = Arc::new(ending);
    // The answer, or the error, as the last event: the call is over then.
    let last = move |pending: &mut Pending, answer: Result<Bytes, Ended>| match answer {
        Ok(answer) => {
            pending.answered = true;
            answer
        }
        Err(ended) => {
            pending.reason = ended.reason();
            ending(&ended)
        }
    };
    let state = (pending, noted, answered, Step::Notes);
    let events = futures_util::stream::unfold(
        state,
        move |(mut pending, mut noted, mut answered, step)| {
            let last = last.clone();
            async move {
                match step {
                    Step::Notes => {
                        tokio::select! {
                            biased;
                            note = noted.recv() => match note {
                                Some(note) => Some((event(&note), (pending, noted, answered, Step::Notes))),
                                None => Some((Bytes::new(), (pending, noted, answered, Step::Answer))),
                            },
                            answer = &mut answered => {
                                // Progress sent before the answer goes first.
                                let mut out = Vec::new();
                                while let Ok(note) = noted.try_recv() {
                                    out.extend_from_slice(&event(&note));
                                }
                                out.extend_from_slice(&event(&last(&mut pending, answer)));
                                Some((Bytes::from(out), (pending, noted, answered, Step::Done)))
                            }
                        }
                    }
                    Step::Answer => {
                        let answer = (&mut answered).await;
                        let last = event(&last(&mut pending, answer));
                        Some((last, (pending, noted, answered, Step::Done)))
                    }
                    Step::Done => None,
                }
            }
        },
    );
    let frames = events
        .filter(|bytes| std::future::ready(!bytes.is_empty()))
        .map(|bytes| Ok::<_, BoxError>(Frame::data(bytes)));
    let mut response = Response::new(BoxBody::new(StreamBody::new(frames)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    response
}
