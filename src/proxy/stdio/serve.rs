//! The Streamable-HTTP face of the bridge: what a POST, GET or DELETE gets.
//!
//! | Request | Answer |
//! |---------|--------|
//! | 2026-07-28 `server/discover` | the child's capabilities and instructions, as a 2026-07-28 server |
//! | `initialize` (2025-11-25 and older) | the child's answer to the bridge, under a new `Mcp-Session-Id` |
//! | `ping`, `notifications/initialized` | answered here |
//! | any other request | forwarded to the child under a fresh id; the answer as JSON, or as SSE with the call's progress when the client asked for progress and takes SSE |
//! | `notifications/cancelled` | forwarded, its `requestId` the bridge's own |
//! | other notifications, responses | forwarded (`202`) |
//! | a session's request with an unknown `Mcp-Session-Id` | `404` |
//! | GET | `405`: the child's own notifications are not streamed (yet) |
//! | DELETE | the session ends |

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use super::bridge::Bridge;
use super::calls::{NOTES, Pending, Waiter};
use super::message::{Kind, Message, error_response, member, replaced, result_response};
use super::sessions::Sessions;
use crate::body::{BoxBody, BoxError};
use crate::wire::MODERN_VERSION;
use crate::wire::raw::edit_object;

/// Answers one HTTP request.
pub(super) async fn serve<B>(
    bridge: Arc<Bridge>,
    sessions: Arc<Sessions>,
    request: Request<B>,
) -> Response<BoxBody>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match *request.method() {
        Method::POST => {}
        Method::DELETE => {
            return match session {
                Some(session) if sessions.end(&session) => status(StatusCode::OK),
                _ => status(StatusCode::NOT_FOUND),
            };
        }
        _ => {
            let mut response = status(StatusCode::METHOD_NOT_ALLOWED);
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            return response;
        }
    }
    let modern = request
        .headers()
        .get("mcp-protocol-version")
        .is_some_and(|version| version == MODERN_VERSION);
    let takes_sse = request
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    let limit = bridge.settings.max_line_bytes;
    let body = match Limited::new(request.into_body(), limit).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            let reply = error_response("null", -32600, "The request body is too large or broken");
            return json(StatusCode::PAYLOAD_TOO_LARGE, reply);
        }
    };
    let Some(message) = Message::read(&body) else {
        return json(
            StatusCode::BAD_REQUEST,
            error_response("null", -32700, "Parse error"),
        );
    };
    let method = message.method.as_deref().unwrap_or_default();
    let id = message.id.map_or("null", RawValue::get);
    if !modern && method != "initialize" {
        match &session {
            Some(known) if sessions.touch(known) => {}
            Some(_) => {
                return json(
                    StatusCode::NOT_FOUND,
                    error_response(id, -32001, "Session not found"),
                );
            }
            None => {
                let reply = error_response(id, -32600, "Bad Request: no Mcp-Session-Id header");
                return json(StatusCode::BAD_REQUEST, reply);
            }
        }
    }
    match (message.kind(), method) {
        (Kind::Request, "initialize") if !modern => initialize(&bridge, &sessions, id),
        (Kind::Request, "server/discover") if modern => json(StatusCode::OK, discover(&bridge, id)),
        (Kind::Request, "ping") => {
            let result = if modern {
                r#"{"resultType":"complete"}"#
            } else {
                "{}"
            };
            json(StatusCode::OK, result_response(id, result))
        }
        (Kind::Request, _) => {
            let progress = message.progress_token().is_some();
            call(
                bridge,
                &body,
                &message,
                session,
                modern,
                progress && takes_sse,
            )
            .await
        }
        (Kind::Notification, "notifications/initialized") => status(StatusCode::ACCEPTED),
        (Kind::Notification, "notifications/cancelled") => {
            let client_id = message.request_id().map(RawValue::get).unwrap_or_default();
            if let Some(own) = bridge.calls.find(session.as_deref(), client_id)
                && let Some(request_id) = message.request_id()
                && let Some(line) = replaced(&body, &[(request_id, &own.to_string())])
            {
                let _ = bridge.to_child.send(line).await;
            }
            status(StatusCode::ACCEPTED)
        }
        (Kind::Notification | Kind::Response, _) => {
            let _ = bridge.to_child.send(body.clone()).await;
            status(StatusCode::ACCEPTED)
        }
        (Kind::Invalid, _) => json(
            StatusCode::BAD_REQUEST,
            error_response(id, -32600, "Invalid Request"),
        ),
    }
}

/// Forwards a request to the child and answers with what it says.
async fn call(
    bridge: Arc<Bridge>,
    body: &Bytes,
    message: &Message<'_>,
    session: Option<String>,
    modern: bool,
    stream: bool,
) -> Response<BoxBody> {
    let client_id = message.id.map_or("null", RawValue::get).to_owned();
    if let Some(why) = bridge.gone() {
        return json(
            StatusCode::BAD_GATEWAY,
            error_response(&client_id, -32603, &why),
        );
    }
    let Ok(slot) = bridge.slots.clone().acquire_owned().await else {
        return json(
            StatusCode::SERVICE_UNAVAILABLE,
            error_response(&client_id, -32603, "closed"),
        );
    };
    let token = message.progress_token();
    let (notes, noted) = mpsc::channel(NOTES);
    let (answer, answered) = oneshot::channel();
    let own = bridge.calls.add(Waiter {
        client_id: client_id.clone(),
        token: token.map(|token| token.get().to_owned()),
        session,
        modern,
        notes,
        answer,
    });
    let pending = Pending {
        calls: bridge.calls.clone(),
        to_child: bridge.to_child.clone(),
        id: own,
        answered: false,
        _slot: slot,
    };
    let Some(line) = forwarded(body, message, own, modern) else {
        return json(
            StatusCode::BAD_REQUEST,
            error_response(&client_id, -32600, "Invalid Request"),
        );
    };
    if bridge.to_child.send(line).await.is_err() {
        let why = bridge
            .gone()
            .unwrap_or_else(|| "The stdio server stopped".into());
        return json(
            StatusCode::BAD_GATEWAY,
            error_response(&client_id, -32603, &why),
        );
    }
    if stream {
        return sse(pending, noted, answered);
    }
    let mut pending = pending;
    match answered.await {
        Ok(answer) => {
            pending.answered = true;
            json(StatusCode::OK, answer)
        }
        Err(_) => {
            let why = bridge
                .gone()
                .unwrap_or_else(|| "The stdio server stopped".into());
            json(
                StatusCode::BAD_GATEWAY,
                error_response(&client_id, -32603, &why),
            )
        }
    }
}

/// The request as the child gets it: under the bridge's id `own`, its
/// progress token `own` too, and, from a 2026-07-28 client, without the
/// per-request `_meta` members of that era (a handshake-era server may
/// refuse them: the bridge speaks the child's era for the client).
fn forwarded(body: &[u8], message: &Message<'_>, own: u64, modern: bool) -> Option<Bytes> {
    let own = own.to_string();
    let mut places: Vec<(&RawValue, String)> = Vec::with_capacity(2);
    if let Some(id) = message.id {
        places.push((id, own.clone()));
    }
    let meta = message.params.and_then(|params| member(params, "_meta"));
    match (modern, meta) {
        (true, Some(meta)) => {
            let token = member(meta, "progressToken").map(|_| own.as_str());
            let mut edits: Vec<(&str, Option<&str>)> =
                ERA_META.iter().map(|key| (*key, None)).collect();
            edits.push(("progressToken", token));
            places.push((meta, edit_object(meta.get(), &edits)?));
        }
        _ => {
            if let Some(token) = message.progress_token() {
                places.push((token, own.clone()));
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

/// The call's progress, then its answer, as SSE events; dropping the body
/// before the answer cancels the call.
fn sse(
    pending: Pending,
    noted: mpsc::Receiver<Bytes>,
    answered: oneshot::Receiver<Bytes>,
) -> Response<BoxBody> {
    enum Step {
        Notes,
        Answer,
        Done,
    }
    let state = (pending, noted, answered, Step::Notes);
    let events = futures_util::stream::unfold(
        state,
        |(mut pending, mut noted, mut answered, step)| async move {
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
                            pending.answered = answer.is_ok();
                            let last = answer.unwrap_or_else(|_| error_response("null", -32603, "The stdio server stopped"));
                            out.extend_from_slice(&event(&last));
                            Some((Bytes::from(out), (pending, noted, answered, Step::Done)))
                        }
                    }
                }
                Step::Answer => {
                    let answer = (&mut answered).await;
                    pending.answered = answer.is_ok();
                    let last = answer.unwrap_or_else(|_| {
                        error_response("null", -32603, "The stdio server stopped")
                    });
                    Some((event(&last), (pending, noted, answered, Step::Done)))
                }
                Step::Done => None,
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

/// One SSE event carrying `message`.
fn event(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The answer to a client's `initialize`: what the child declared, in a new
/// session.
fn initialize(bridge: &Bridge, sessions: &Sessions, id: &str) -> Response<BoxBody> {
    let declared = &bridge.declared;
    let mut result = format!(
        r#"{{"protocolVersion":{},"capabilities":{},"serverInfo":{}"#,
        serde_json::to_string(&declared.version).unwrap_or_default(),
        declared.capabilities.get(),
        declared.server_info.get()
    );
    if let Some(instructions) = &declared.instructions {
        result.push_str(&format!(r#","instructions":{}"#, instructions.get()));
    }
    result.push('}');
    let mut response = json(StatusCode::OK, result_response(id, &result));
    match sessions
        .open()
        .and_then(|session| HeaderValue::from_str(&session).ok())
    {
        Some(session) => {
            response.headers_mut().insert("mcp-session-id", session);
            response
        }
        None => json(
            StatusCode::SERVICE_UNAVAILABLE,
            error_response(id, -32603, "No session could be opened"),
        ),
    }
}

/// The answer to `server/discover`: the child's capabilities, as a
/// 2026-07-28 server.
fn discover(bridge: &Bridge, id: &str) -> Bytes {
    let declared = &bridge.declared;
    let instructions = declared
        .instructions
        .as_ref()
        .map(|instructions| format!(r#","instructions":{}"#, instructions.get()))
        .unwrap_or_default();
    let result = format!(
        r#"{{"resultType":"complete","supportedVersions":["{MODERN_VERSION}"],"capabilities":{},"_meta":{{"io.modelcontextprotocol/serverInfo":{}}}{instructions},"ttlMs":0,"cacheScope":"public"}}"#,
        declared.capabilities.get(),
        declared.server_info.get()
    );
    result_response(id, &result)
}

fn json(status: StatusCode, body: Bytes) -> Response<BoxBody> {
    let mut response = Response::new(BoxBody::new(
        Full::new(body).map_err(|never| match never {}),
    ));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn status(status: StatusCode) -> Response<BoxBody> {
    let mut response = Response::new(BoxBody::new(
        Full::new(Bytes::new()).map_err(|never| match never {}),
    ));
    *response.status_mut() = status;
    response
}
