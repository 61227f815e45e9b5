//! The upstream's questions during a bridged call, asked of its 2026-07-28
//! client as MRTR rounds (the wire: `generation/input.rs`).
//!
//! | Step | What happens |
//! |------|--------------|
//! | the client declares elicitation, sampling or roots | its call goes in an upstream session that declared the same (`sessions.rs`), and its answer stream is read by a relay of its own |
//! | the upstream sends a request on the call's stream (`elicitation/create`, id R) | the relay gathers what comes with it, answers the client `input_required` (keys of the bridge's, a `requestState` token) and ends that response; the upstream's stream stays open, parked under the token |
//! | the client calls again with `inputResponses` and the token | R is answered in the session with the client's answer, and the retry's response goes on with the rest of the parked stream (the outcome, or another round) |
//! | a retry without an answer for a key, or with a token no round has | `-32602`; the round stays open, or there is none |
//! | no retry within `ROUND_WAIT`, or more rounds than [`MAX_ROUNDS`] | the call is cancelled upstream; past the cap the upstream's request is refused instead of asked |
//! | the upstream asks what the client did not declare, or something else | refused in the session (`-32601`); `ping` is answered |
//!
//! Once the call is a task, `TasksLayer` shows the round as the task's
//! `inputRequests` and sends the retry itself after `tasks/update`.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::value::RawValue;
use sse_stream::Sse;
use tokio::sync::{mpsc, oneshot};
use tower::ServiceExt;

use super::events::{Call, modern_read};
use super::exchange::{error_reply, own_request};
use super::sessions::Session;
use super::{Plain, Upstream, lock};
use crate::generation::input::{
    Asked, GATHER, ROUND_WAIT, capability, declared, input_required, key,
};
use crate::generation::message::{
    Kind, Message, error_response, event as sse_event, member, result_response,
};

/// The most rounds open at once.
pub(crate) const MAX_ROUNDS: usize = 10_000;

/// How long answering the upstream's request in its session may take.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// A frame of a relayed answer.
pub(crate) type Framed = Result<Frame<Bytes>, std::io::Error>;

/// The upstream's events on a call's stream.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<Sse, std::io::Error>> + Send>>;

/// What the relay of a call needs to ask its client.
pub(crate) struct Asking {
    pub rounds: Arc<Rounds>,
    pub inner: Upstream,
    pub session: Arc<Session>,
    /// The capabilities the client declared (an `ASKABLE` mask).
    pub mask: usize,
}

/// A call whose client was asked, its stream parked.
struct Parked {
    asked: Vec<Asked>,
    session: Arc<Session>,
    resume: oneshot::Sender<Resume>,
}

/// The retry that takes a parked stream on.
struct Resume {
    out: mpsc::Sender<Framed>,
    /// The retry's id (JSON text), which the answer carries.
    id: String,
    log_level: Option<usize>,
}

/// The open rounds, by `requestState` token.
#[derive(Default)]
pub(crate) struct Rounds {
    open: Mutex<HashMap<String, Parked>>,
}

impl Rounds {
    /// Parks a round under a fresh token; `None` past [`MAX_ROUNDS`] (or
    /// with no random bytes).
    fn open(&self, parked: Parked) -> Option<String> {
        let mut open = lock(&self.open);
        if open.len() >= MAX_ROUNDS {
            return None;
        }
        let token = mcp_tasks::TaskId::generate().ok()?.to_string();
        open.insert(token.clone(), parked);
        Some(token)
    }

    fn forget(&self, token: &str) {
        lock(&self.open).remove(token);
    }
}

/// The relayed answer of a call whose client may be asked: the upstream's
/// `events`, each as the client gets it, until a round parks them.
pub(crate) fn relayed(events: Events, call: Call, asking: Asking) -> Plain {
    let (out, answers) = mpsc::channel(16);
    tokio::spawn(relay(events, call, asking, out));
    body_of(answers)
}

/// A body of the frames `answers` gets.
pub(crate) fn body_of(answers: mpsc::Receiver<Framed>) -> Plain {
    let frames = futures_util::stream::unfold(answers, |mut answers| async move {
        answers.recv().await.map(|frame| (frame, answers))
    });
    StreamBody::new(frames).boxed_unsync()
}

/// Passes `events` to `out` as the client gets them; asks the client the
/// upstream's requests, and goes on with the retry that answers them. The
/// call is dropped, which cancels it upstream unless it was answered, when
/// its client goes away or never comes back.
async fn relay(mut events: Events, mut call: Call, asking: Asking, mut out: mpsc::Sender<Framed>) {
    loop {
        let mut asked = Vec::new();
        match take(events.next().await, &asking, &mut asked, &mut call, &out).await {
            Took::Ended => return,
            Took::Passed => continue,
            Took::Asked => {}
        }
        // Requests sent together are asked together.
        while let Ok(next) = tokio::time::timeout(GATHER, events.next()).await {
            if let Took::Ended = take(next, &asking, &mut asked, &mut call, &out).await {
                return;
            }
        }
        if asked.is_empty() {
            continue;
        }
        let (resume, resumed) = oneshot::channel();
        let parked = Parked {
            asked: asked.clone(),
            session: asking.session.clone(),
            resume,
        };
        let Some(token) = asking.rounds.open(parked) else {
            tracing::warn!(
                "too many bridged calls wait for their client: the upstream's request is refused"
            );
            for asked in &asked {
                asking
                    .refuse(
                        &asked.request,
                        "The gateway has too many calls waiting for input",
                    )
                    .await;
            }
            continue;
        };
        let result = result_response(&call.id, &input_required(&asked, &token));
        let _ = out.send(Ok(Frame::data(sse_event(&result)))).await;
        drop(out);
        match tokio::time::timeout(ROUND_WAIT, resumed).await {
            Ok(Ok(resume)) => {
                out = resume.out;
                call.id = resume.id;
                call.log_level = resume.log_level;
            }
            _ => {
                asking.rounds.forget(&token);
                tracing::debug!("a bridged call's client did not come back: the call is cancelled");
                return;
            }
        }
    }
}

/// What became of one event of the upstream's stream.
enum Took {
    /// A request of the upstream, filed for the round (or answered here).
    Asked,
    /// Passed to the client (or left out, as a log it did not ask for).
    Passed,
    /// The stream ended, or the client went away.
    Ended,
}

/// One `next` of the upstream's events, read once: a request filed in
/// `asked`, anything else passed to `out` as the client gets it.
async fn take(
    next: Option<Result<Sse, std::io::Error>>,
    asking: &Asking,
    asked: &mut Vec<Asked>,
    call: &mut Call,
    out: &mpsc::Sender<Framed>,
) -> Took {
    let event = match next {
        None => return Took::Ended,
        Some(Err(error)) => {
            let _ = out.send(Err(error)).await;
            return Took::Ended;
        }
        Some(Ok(event)) => event,
    };
    let data = event.data.as_deref().unwrap_or_default();
    let read = Message::read(data.as_bytes());
    if let Some(request) = read.as_ref().filter(|read| read.kind() == Kind::Request) {
        asking.file(request, asked).await;
        return Took::Asked;
    }
    if data.is_empty() {
        return Took::Passed;
    }
    let bytes = modern_read(event.event.as_deref(), data, read.as_ref(), call);
    if !bytes.is_empty() && out.send(Ok(Frame::data(bytes))).await.is_err() {
        return Took::Ended;
    }
    Took::Passed
}

impl Asking {
    /// Files the upstream's `message`, a request, in `asked`; answers here
    /// what the client is not asked (`ping`, a capability it did not
    /// declare).
    async fn file(&self, message: &Message<'_>, asked: &mut Vec<Asked>) {
        let request = message.id.map_or("null", RawValue::get);
        let method = message.method.as_deref().unwrap_or_default();
        let needed = capability(method).filter(|needed| declared([*needed]) & self.mask != 0);
        match (method, needed) {
            ("ping", _) => self.answer(result_response(request, "{}")).await,
            (_, Some(needed)) => {
                let nth = asked.iter().filter(|asked| asked.method == method).count() + 1;
                asked.push(Asked {
                    request: request.to_owned(),
                    key: key(needed, nth),
                    method: method.to_owned(),
                    params: message.params.map_or("{}", RawValue::get).to_owned(),
                });
            }
            _ => {
                let why = format!("The client of this call cannot answer {method}");
                self.refuse(request, &why).await;
            }
        }
    }

    /// Refuses the upstream's request `request` (JSON text of its id).
    async fn refuse(&self, request: &str, why: &str) {
        self.answer(error_response(request, -32601, why)).await;
    }

    /// Sends `message`, an answer to the upstream's request, in the session.
    async fn answer(&self, message: Bytes) {
        answer_upstream(&self.inner, &self.session, message).await;
    }
}

/// Sends `message`, an answer to one of the upstream's requests, in
/// `session`.
async fn answer_upstream(inner: &Upstream, session: &Session, message: Bytes) {
    let text = String::from_utf8_lossy(&message).into_owned();
    let sent = inner.clone().oneshot(own_request(text, &session.headers()));
    match tokio::time::timeout(ANSWER_WAIT, sent).await {
        Ok(Ok(response)) if response.status().is_success() => {}
        Ok(Ok(response)) => {
            tracing::warn!(status = %response.status(), "the upstream refused an answer to its request");
        }
        Err(_) => tracing::warn!("the upstream took an answer to its request too long"),
    }
}

/// The retry of a round: `message` (with `id`, JSON text) carries the
/// client's answers under the round's keys and its `token`. The answers
/// go upstream, and the response goes on with the call's parked stream.
pub(crate) async fn resume(
    rounds: &Rounds,
    inner: &Upstream,
    token: &str,
    message: &Message<'_>,
    id: String,
    log_level: Option<usize>,
) -> Response<Plain> {
    let responses = message
        .params
        .and_then(|params| member(params, "inputResponses"));
    let answer = |key: &str| responses.and_then(|responses| member(responses, key));
    let unknown = || {
        let why = "Unknown or expired requestState: call the tool again without it";
        error_reply(StatusCode::OK, error_response(&id, -32602, why))
    };
    let parked = {
        let mut open = lock(&rounds.open);
        let Some(parked) = open.get(token) else {
            return unknown();
        };
        // The round stays open for a retry that answers every key.
        if let Some(missing) = parked
            .asked
            .iter()
            .find(|asked| answer(&asked.key).is_none())
        {
            let why = format!("inputResponses has no answer for {:?}", missing.key);
            return error_reply(StatusCode::OK, error_response(&id, -32602, &why));
        }
        let Some(parked) = open.remove(token) else {
            return unknown();
        };
        parked
    };
    for asked in &parked.asked {
        let Some(response) = answer(&asked.key) else {
            continue;
        };
        let answered = result_response(&asked.request, response.get());
        answer_upstream(inner, &parked.session, answered).await;
    }
    let (out, answers) = mpsc::channel(16);
    let resume = Resume {
        out,
        id: id.clone(),
        log_level,
    };
    if parked.resume.send(resume).is_err() {
        let why = "The call ended while its client was away";
        return error_reply(StatusCode::OK, error_response(&id, -32603, why));
    }
    let mut response = Response::new(body_of(answers));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    response
}
