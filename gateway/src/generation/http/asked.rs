//! A 2026-07-28 upstream's `input_required` answers, asked of a 2025-11-25
//! client in a session the bridge keeps (`kept.rs`): the other way round
//! of `rounds.rs`.
//!
//! A 2026-07-28 server asks for input in its result (`input_required`,
//! requests under keys of its own, perhaps a `requestState`) and keeps
//! nothing of the call meanwhile; a 2025-11-25 client expects the server
//! to send it requests on the call's stream and to answer the call itself
//! in the end. So the bridge asks, and calls again:
//!
//! | Step | What happens |
//! |------|--------------|
//! | the upstream answers a `tools/call`, `prompts/get` or `resources/read` with `input_required` (as JSON, or as an event of its stream) | the client's answer becomes a stream; each of `inputRequests` is sent on it as a request of the bridge's (id `mcp-tasks-ask-N`), as a 2025-11-25 server asks |
//! | the client POSTs its response in the session | matched to the question by id (a response in another session matches nothing); `202` |
//! | every question answered | the call is sent again under an id of the bridge's, with the client's results under the upstream's keys (`inputResponses`) and its `requestState`; that answer goes on the same stream: another round, or the outcome under the client's id |
//! | `input_required` with no `inputRequests` | the call is sent again at once with its `requestState` |
//! | the client answers a question with an error | the call ends with that error |
//! | no answer within `ROUND_WAIT`, the client gone, more than [`MAX_QUESTIONS`] questions waiting in all, or more than [`MAX_ROUNDS`] rounds in one call | the call ends with `-32603` (or its stream just ends, the client being gone); nothing runs upstream meanwhile |
//! | any other answer | passed as it came |
//!
//! Once the call is a task of a 2025-11-25 client, `TasksLayer` reads the
//! same requests on the stream and relays them through `tasks/result`, as
//! for any 2025-11-25 server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, Limited};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tower::ServiceExt;

use super::answer::sse_events;
use super::exchange::{error_reply, is_sse};
use super::rounds::{Events, Framed, body_of};
use super::{Plain, Upstream, full, lock};
use crate::generation::input::ROUND_WAIT;
use crate::generation::message::{
    Kind, Message, error_response, event as sse_event, member, replaced,
};
use mcp_tasks::wire::raw::{Members, edit_object};

/// The most questions waiting for their clients at once, in all.
pub(crate) const MAX_QUESTIONS: usize = 10_000;

/// The most rounds of input one call may take.
pub(crate) const MAX_ROUNDS: usize = 32;

/// A client's response to a question (JSON text).
enum Answered {
    Result(String),
    Error(String),
}

/// A question waiting for its client.
struct Waiting {
    /// The kept session it was asked in.
    session: String,
    answer: oneshot::Sender<Answered>,
}

/// The questions waiting for their clients, by the id they were asked
/// under.
#[derive(Default)]
pub(crate) struct Questions {
    waiting: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

impl Questions {
    /// A fresh id for a question in `session`, and where its answer comes;
    /// `None` past [`MAX_QUESTIONS`].
    fn ask(&self, session: &str) -> Option<(String, oneshot::Receiver<Answered>)> {
        let mut waiting = lock(&self.waiting);
        if waiting.len() >= MAX_QUESTIONS {
            return None;
        }
        let id = format!(
            "mcp-tasks-ask-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let (answer, answered) = oneshot::channel();
        let session = session.to_owned();
        waiting.insert(id.clone(), Waiting { session, answer });
        Some((id, answered))
    }

    fn forget(&self, ids: &[String]) {
        let mut waiting = lock(&self.waiting);
        for id in ids {
            waiting.remove(id);
        }
    }

    /// Takes the client's response `message` in `session`: whether it
    /// answered a question asked there.
    pub(crate) fn answer(&self, session: &str, message: &Message<'_>) -> bool {
        let Some(id) = message
            .id
            .and_then(|id| serde_json::from_str::<String>(id.get()).ok())
        else {
            return false;
        };
        let answered = match (message.result, message.error) {
            (Some(result), _) => Answered::Result(result.get().to_owned()),
            (None, Some(error)) => Answered::Error(error.get().to_owned()),
            (None, None) => return false,
        };
        let mut waiting = lock(&self.waiting);
        if waiting
            .get(&id)
            .is_none_or(|asked| asked.session != session)
        {
            return false;
        }
        let Some(asked) = waiting.remove(&id) else {
            return false;
        };
        drop(waiting);
        asked.answer.send(answered).is_ok()
    }

    /// The id of the next retry of a call.
    fn retry_id(&self) -> String {
        format!(
            "\"mcp-tasks-retry-{}\"",
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// Whether a 2026-07-28 server may answer `method` with `input_required`.
pub(crate) fn may_ask(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// A call in a kept session, as the bridge sent it to a 2026-07-28
/// upstream, and what asking its client needs.
pub(crate) struct Call {
    pub inner: Upstream,
    /// The request's head, for its retries.
    pub parts: http::request::Parts,
    /// The 2026-07-28 request as first sent.
    pub body: Bytes,
    /// The client's id (JSON text).
    pub id: String,
    /// The kept session.
    pub session: String,
    pub questions: std::sync::Arc<Questions>,
    /// The message limit.
    pub max: usize,
}

/// One round of input the upstream asked for.
struct Round {
    /// `(key, method, params)`, JSON text but the key.
    requests: Vec<(String, String, String)>,
    /// Its `requestState` (JSON text).
    state: Option<String>,
}

impl Round {
    /// The round `message` asks for, when it is an `input_required`
    /// result.
    fn of(message: &Message<'_>) -> Option<Self> {
        let result = message.result?;
        let kind = member(result, "resultType")?;
        if kind.get() != r#""input_required""# {
            return None;
        }
        let requests = member(result, "inputRequests")
            .and_then(|requests| Members::parse(requests.get()).ok())
            .map(|members| {
                members
                    .0
                    .iter()
                    .map(|(key, request)| {
                        let field = |name| member(request, name).map(|v| v.get().to_owned());
                        let method = field("method").unwrap_or_else(|| "null".to_owned());
                        let params = field("params").unwrap_or_else(|| "{}".to_owned());
                        (key.to_string(), method, params)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let state = member(result, "requestState").map(|state| state.get().to_owned());
        Some(Self { requests, state })
    }
}

/// The upstream's `response` to `call`: passed as it came, unless it asks
/// for input, which the client is then asked on a stream (module docs).
pub(crate) async fn answered(response: Response<Plain>, call: Call) -> Response<Plain> {
    if !response.status().is_success() {
        return response;
    }
    let sse = is_sse(&response);
    let (mut parts, body) = response.into_parts();
    if sse {
        parts.headers.remove(CONTENT_LENGTH);
        let (out, frames) = mpsc::channel(16);
        tokio::spawn(relay(Next::Stream(sse_events(body, call.max)), call, out));
        return Response::from_parts(parts, body_of(frames));
    }
    let json = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if !json {
        return Response::from_parts(parts, body);
    }
    let bytes = match Limited::new(body, call.max).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return too_large(&call),
    };
    let Some(round) = Message::read(&bytes).as_ref().and_then(Round::of) else {
        return Response::from_parts(parts, full(bytes));
    };
    let (out, frames) = mpsc::channel(16);
    tokio::spawn(relay(Next::Round(round), call, out));
    let mut stream = Response::new(body_of(frames));
    stream
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    stream
}

/// The `502` of an answer over the message limit.
fn too_large(call: &Call) -> Response<Plain> {
    let why = format!(
        "The upstream's answer could not be read (limit {} bytes)",
        call.max
    );
    error_reply(
        StatusCode::BAD_GATEWAY,
        error_response(&call.id, -32603, &why),
    )
}

/// What the relay goes on with.
enum Next {
    /// An answer stream of the upstream, to pass on.
    Stream(Events),
    /// A round to ask.
    Round(Round),
}

/// Passes the upstream's answers to `out`, asking the client each round
/// and calling again, until the outcome, an error, or the client leaves.
async fn relay(mut next: Next, call: Call, out: mpsc::Sender<Framed>) {
    for _ in 0..=MAX_ROUNDS {
        let round = match next {
            Next::Round(round) => round,
            Next::Stream(events) => match pass(events, &call, &out).await {
                Some(round) => round,
                None => return,
            },
        };
        let responses = match ask(&round, &call, &out).await {
            Ok(responses) => responses,
            Err(Some(error)) => return send(&out, &error).await,
            Err(None) => return,
        };
        next = match again(&round, &responses, &call).await {
            Ok(next) => next,
            Err(error) => return send(&out, &error).await,
        };
    }
    let why = format!("The server asked for input more than {MAX_ROUNDS} times in one call");
    send(&out, &error_response(&call.id, -32603, &why)).await;
}

/// Sends `message` to the client as an event.
async fn send(out: &mpsc::Sender<Framed>, message: &[u8]) {
    let _ = out.send(Ok(Frame::data(sse_event(message)))).await;
}

/// Passes `events` to `out`, a response under the client's id; the round
/// an `input_required` among them asks, if one does.
async fn pass(mut events: Events, call: &Call, out: &mpsc::Sender<Framed>) -> Option<Round> {
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                let _ = out.send(Err(error)).await;
                return None;
            }
        };
        let Some(data) = event.data.filter(|data| !data.is_empty()) else {
            continue;
        };
        let read = Message::read(data.as_bytes());
        let response = read.as_ref().filter(|read| read.kind() == Kind::Response);
        if let Some(round) = response.and_then(Round::of) {
            return Some(round);
        }
        let restored = response
            .and_then(|read| read.id)
            .and_then(|id| replaced(data.as_bytes(), &[(id, &call.id)]));
        let message = restored.unwrap_or_else(|| Bytes::from(data));
        if out
            .send(Ok(Frame::data(sse_event(&message))))
            .await
            .is_err()
        {
            return None;
        }
    }
    None
}

/// Asks the client every request of `round` on `out`: the
/// `inputResponses` object of its answers; else the error that ends the
/// call (`None`: the client is gone).
async fn ask(
    round: &Round,
    call: &Call,
    out: &mpsc::Sender<Framed>,
) -> Result<String, Option<Bytes>> {
    let mut asked = Vec::with_capacity(round.requests.len());
    let mut ids = Vec::with_capacity(round.requests.len());
    for (key, method, params) in &round.requests {
        let Some((id, answer)) = call.questions.ask(&call.session) else {
            call.questions.forget(&ids);
            tracing::warn!("too many questions wait for their clients: a bridged call ends");
            let why = "The gateway has too many questions waiting for their clients";
            return Err(Some(error_response(&call.id, -32603, why)));
        };
        let request =
            format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":{method},"params":{params}}}"#);
        ids.push(id);
        asked.push((key, answer));
        if out
            .send(Ok(Frame::data(sse_event(request.as_bytes()))))
            .await
            .is_err()
        {
            call.questions.forget(&ids);
            return Err(None);
        }
    }
    let answers = async {
        let mut responses = Vec::with_capacity(asked.len());
        for (key, answer) in asked {
            match answer.await {
                Ok(Answered::Result(result)) => responses.push((key, result)),
                Ok(Answered::Error(error)) => {
                    let id = &call.id;
                    let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#);
                    return Err(Some(Bytes::from(reply)));
                }
                Err(_) => return Err(None),
            }
        }
        Ok(responses)
    };
    let answered = tokio::select! {
        answered = tokio::time::timeout(ROUND_WAIT, answers) => answered,
        () = out.closed() => Ok(Err(None)),
    };
    call.questions.forget(&ids);
    let responses = match answered {
        Ok(answered) => answered?,
        Err(_) => {
            let why = "The client did not answer the server's request in time";
            return Err(Some(error_response(&call.id, -32603, why)));
        }
    };
    let members: Vec<String> = responses
        .iter()
        .map(|(key, result)| {
            format!(
                "{}:{result}",
                serde_json::to_string(key).unwrap_or_default()
            )
        })
        .collect();
    Ok(format!("{{{}}}", members.join(",")))
}

/// Sends the call again with `responses` and the round's state: what its
/// answer goes on with, or the error that ends the call.
async fn again(round: &Round, responses: &str, call: &Call) -> Result<Next, Bytes> {
    let failed = |why: &str| error_response(&call.id, -32603, why);
    let retry = retried(
        &call.body,
        responses,
        round.state.as_deref(),
        &call.questions,
    )
    .ok_or_else(|| failed("The call could not be sent again"))?;
    let mut parts = call.parts.clone();
    parts
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(retry.len()));
    let request = Request::from_parts(parts, full(retry));
    let Ok(response) = call.inner.clone().oneshot(request).await;
    let status = response.status();
    if is_sse(&response) && status.is_success() {
        return Ok(Next::Stream(sse_events(response.into_body(), call.max)));
    }
    let body = Limited::new(response.into_body(), call.max).collect().await;
    let Ok(body) = body.map(http_body_util::Collected::to_bytes) else {
        return Err(failed("The upstream's answer could not be read"));
    };
    let read = Message::read(&body).filter(|read| read.kind() == Kind::Response);
    let Some(read) = read else {
        let why = format!("The upstream answered the call's retry with HTTP {status}");
        return Err(failed(&why));
    };
    if let Some(round) = Round::of(&read) {
        return Ok(Next::Round(round));
    }
    let restored = read.id.and_then(|id| replaced(&body, &[(id, &call.id)]));
    Err(restored.unwrap_or(body))
}

/// `body`, the call as first sent, as its retry: an id of the bridge's,
/// `params.inputResponses` and `params.requestState` (when the round had
/// one).
fn retried(body: &[u8], responses: &str, state: Option<&str>, ids: &Questions) -> Option<Bytes> {
    let text = std::str::from_utf8(body).ok()?;
    let message = Message::read(body)?;
    let params = message.params.map_or("{}", RawValue::get);
    let params = edit_object(
        params,
        &[("inputResponses", Some(responses)), ("requestState", state)],
    )?;
    let id = ids.retry_id();
    let edited = edit_object(text, &[("id", Some(&id)), ("params", Some(&params))])?;
    Some(Bytes::from(edited))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_required_result_is_read_as_its_round() {
        let text = br#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","inputRequests":{"name":{"method":"elicitation/create","params":{"message":"Who?"}}},"requestState":"s1"}}"#;
        let round = Round::of(&Message::read(text).unwrap()).unwrap();
        assert_eq!(round.requests.len(), 1);
        let (key, method, params) = &round.requests[0];
        assert_eq!(
            (key.as_str(), method.as_str()),
            ("name", r#""elicitation/create""#)
        );
        assert_eq!(params, r#"{"message":"Who?"}"#);
        assert_eq!(round.state.as_deref(), Some(r#""s1""#));
        let done = br#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"complete","content":[]}}"#;
        assert!(Round::of(&Message::read(done).unwrap()).is_none());
    }

    #[test]
    fn a_retry_carries_the_answers_the_state_and_an_id_of_the_bridges() {
        let questions = Questions::default();
        let body = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{"n":1.50}}}"#;
        let out = retried(
            body,
            r#"{"name":{"action":"accept"}}"#,
            Some(r#""s1""#),
            &questions,
        )
        .unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.contains(r#""arguments":{"n":1.50}"#), "{text}");
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["id"], "mcp-tasks-retry-0");
        assert_eq!(
            value["params"]["inputResponses"]["name"]["action"],
            "accept"
        );
        assert_eq!(value["params"]["requestState"], "s1");
        let bare = retried(body, "{}", None, &questions).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&bare).unwrap();
        assert!(value["params"].get("requestState").is_none());
        assert_ne!(
            value["id"], "mcp-tasks-retry-0",
            "each retry has an id of its own"
        );
    }

    #[test]
    fn an_answer_counts_only_in_the_session_it_was_asked_in() {
        let questions = Questions::default();
        let (id, mut answer) = questions.ask("s-1").unwrap();
        let response =
            format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"action":"decline"}}}}"#);
        let message = Message::read(response.as_bytes()).unwrap();
        assert!(!questions.answer("s-2", &message), "another session's");
        assert!(answer.try_recv().is_err());
        assert!(questions.answer("s-1", &message));
        assert!(matches!(answer.try_recv(), Ok(Answered::Result(r)) if r.contains("decline")));
        assert!(!questions.answer("s-1", &message), "answered once");
    }

    #[test]
    fn questions_past_the_cap_are_not_asked() {
        let questions = Questions::default();
        let held: Vec<_> = (0..MAX_QUESTIONS)
            .map(|_| questions.ask("s").unwrap())
            .collect();
        assert!(questions.ask("s").is_none());
        questions.forget(&[held[0].0.clone()]);
        assert!(questions.ask("s").is_some());
    }
}
