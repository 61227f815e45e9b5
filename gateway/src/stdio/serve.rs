//! The Streamable-HTTP face of the bridge: what a POST, GET or DELETE gets.
//!
//! | Request | Answer |
//! |---------|--------|
//! | 2026-07-28 `server/discover` | the child's capabilities and instructions, as a 2026-07-28 server |
//! | 2026-07-28 `subscriptions/listen` | a stream of the child's list changes it asked for (`generation/listen.rs`) |
//! | `initialize` (2025-11-25 and older) | the child's answer to the bridge, under a new `Mcp-Session-Id` |
//! | `ping`, `notifications/initialized` | answered here |
//! | any other request | forwarded to the child under a fresh id; the answer as JSON, or as SSE with the call's progress when the client asked for progress and takes SSE |
//! | `notifications/cancelled` in a session | forwarded, its `requestId` the bridge's own (a 2026-07-28 client cancels by closing its stream) |
//! | `notifications/roots/list_changed` | forwarded |
//! | a response in a session | the answer to the child's request the bridge relayed on that session's call stream (`relayed.rs`); otherwise dropped (`202`) |
//! | other notifications | not for the child (`202`) |
//! | a 2026-07-28 request that fails what such a server checks (`checked.rs`: its method, `Mcp-Method`, `_meta`), or a version no generation has | refused as that server refuses it (`initialize` and `ping` are no methods of 2026-07-28: `404`) |
//! | a session's request with an unknown `Mcp-Session-Id` | `404` |
//! | GET | `405`: the child's own notifications are not streamed (yet) |
//! | DELETE | the session ends |
//!
//! With several children (`--instances`), a session stays on the child
//! that served its `initialize`, the retry of an MRTR round goes to the
//! child that asked, and any other request to the child with the most
//! free places.

use std::sync::Arc;

use bytes::Bytes;
use http::header::ALLOW;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use serde_json::value::RawValue;

use super::bridge::Bridge;
use super::relay;
use super::reply::{json, status};
use super::sessions::{Session, Sessions};
use crate::generation::declared::HANDSHAKE_VERSIONS;
use crate::generation::message::{
    Kind, Message, error_response, member, replaced, result_response,
};
use crate::generation::{checked, listen};
use mcp_tasks::MODERN_VERSION;
use mcp_tasks::body::{BoxBody, BoxError};
use mcp_tasks::wire::raw::Members;

/// Answers one HTTP request.
pub(super) async fn serve<B>(
    children: Arc<[Arc<Bridge>]>,
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
    let takes_sse = mcp_tasks::wire::accepts_sse(request.headers());
    let limit = children[0].settings.max_line_bytes;
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, limit).collect().await {
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
    // What a 2026-07-28 server checks, the bridge checks for the child.
    if let Some(refused) = checked::unknown_version(&parts.headers, message.id) {
        return json(refused.status, refused.body);
    }
    let meta = message.meta();
    if modern
        && message.kind() == Kind::Request
        && let Err(refused) = checked::request(&parts.headers, &message, meta)
            .and_then(|()| children[0].params.check(&parts.headers, &message))
    {
        return json(refused.status, refused.body);
    }
    let known = match &session {
        Some(session) if !modern => sessions.get(session),
        _ => None,
    };
    if !modern && method != "initialize" && known.is_none() {
        return match session {
            Some(_) => json(
                StatusCode::NOT_FOUND,
                error_response(id, -32001, "Session not found"),
            ),
            None => {
                let reply = error_response(id, -32600, "Bad Request: no Mcp-Session-Id header");
                json(StatusCode::BAD_REQUEST, reply)
            }
        };
    }
    // A header outside a session the bridge opened names nothing.
    let session = known.as_ref().and(session);
    let child = match &known {
        Some(known) => known.child,
        None => pick(&children, modern.then_some(&message)),
    };
    let bridge = children.get(child).unwrap_or(&children[0]).clone();
    match (message.kind(), method) {
        (Kind::Request, "initialize") if !modern => {
            let asked = message
                .params
                .and_then(|params| member(params, "protocolVersion"))
                .and_then(|version| serde_json::from_str::<String>(version.get()).ok());
            let declared = message
                .params
                .and_then(|params| member(params, "capabilities"))
                .map(names)
                .unwrap_or_default();
            let session = Session { child, declared };
            initialize(&bridge, &sessions, session, id, asked.as_deref())
        }
        (Kind::Request, "server/discover") if modern => {
            json(StatusCode::OK, bridge.declared.discover(id))
        }
        (Kind::Request, "subscriptions/listen") if modern => {
            let agreed = listen::Agreed::read(message.params, &bridge.declared.capabilities);
            listen::stream(id.to_owned(), agreed, bridge.heard.subscribe())
        }
        // Only in a session: 2026-07-28 has no ping (refused above).
        (Kind::Request, "ping") => json(StatusCode::OK, result_response(id, "{}")),
        (Kind::Request, _) => {
            let declared = match &known {
                Some(known) => known.declared.clone(),
                None => declared(meta),
            };
            // A session's client that can answer the child's questions
            // gets a stream to be asked on (a 2026-07-28 client is asked
            // in the result); others get one for progress.
            let asked_on_stream = known.is_some() && !declared.is_empty();
            let stream = takes_sse && (message.progress_token().is_some() || asked_on_stream);
            relay::call(bridge, &body, &message, session, declared, stream).await
        }
        (Kind::Notification, "notifications/initialized") => status(StatusCode::ACCEPTED),
        // In a session only: a 2026-07-28 client cancels by closing its
        // stream, and two such clients may share a request id.
        (Kind::Notification, "notifications/cancelled") if session.is_some() => {
            let client_id = message.request_id().map(RawValue::get).unwrap_or_default();
            if let Some(own) = bridge.calls.find(session.as_deref(), client_id)
                && let Some(request_id) = message.request_id()
                && let Some(line) = replaced(&body, &[(request_id, &own.to_string())])
            {
                let _ = bridge.send(line).await;
            }
            status(StatusCode::ACCEPTED)
        }
        (Kind::Notification, "notifications/roots/list_changed") => {
            for child in children.iter() {
                let _ = child.send(body.clone()).await;
            }
            status(StatusCode::ACCEPTED)
        }
        (Kind::Response, _) => {
            let asked = message.id.and_then(|id| id.get().parse::<u64>().ok());
            let request = asked
                .zip(session.as_deref())
                .and_then(|(asked, session)| bridge.relayed.answer(asked, session));
            match (request, message.id) {
                (Some(request), Some(id)) => match replaced(&body, &[(id, &request)]) {
                    Some(line) => {
                        let _ = bridge.send(line).await;
                    }
                    None => tracing::debug!("a client's answer that could not be edited"),
                },
                _ => tracing::debug!(id, "a client's answer to nothing the bridge asked"),
            }
            status(StatusCode::ACCEPTED)
        }
        // Other notifications are the bridge's own business with the child.
        (Kind::Notification, _) => {
            tracing::debug!(method, "a client message the stdio server does not get");
            status(StatusCode::ACCEPTED)
        }
        (Kind::Invalid, _) => json(
            StatusCode::BAD_REQUEST,
            error_response(id, -32600, "Invalid Request"),
        ),
    }
}

/// The answer to a client's `initialize` asking `asked`: what the child
/// declared, in a new session, under the client's version when the bridge
/// knows it and it is no newer than the child's, else the child's.
fn initialize(
    bridge: &Bridge,
    sessions: &Sessions,
    session: Session,
    id: &str,
    asked: Option<&str>,
) -> Response<BoxBody> {
    let declared = &bridge.declared;
    let version = asked
        .filter(|asked| HANDSHAKE_VERSIONS.contains(asked) && *asked <= declared.version.as_str())
        .unwrap_or(&declared.version);
    let mut result = format!(
        r#"{{"protocolVersion":{},"capabilities":{},"serverInfo":{}"#,
        serde_json::to_string(version).unwrap_or_default(),
        declared.capabilities.get(),
        declared.server_info.get()
    );
    if let Some(instructions) = &declared.instructions {
        result.push_str(&format!(r#","instructions":{}"#, instructions.get()));
    }
    result.push('}');
    let mut response = json(StatusCode::OK, result_response(id, &result));
    match sessions
        .open(session)
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

/// The child for a request without a session: the one that asked the
/// round a 2026-07-28 retry answers, else the one with the most free
/// places (the first among equals).
fn pick(children: &[Arc<Bridge>], modern: Option<&Message<'_>>) -> usize {
    if children.len() == 1 {
        return 0;
    }
    let state = modern
        .and_then(|message| member(message.params?, "requestState"))
        .and_then(|state| serde_json::from_str::<String>(state.get()).ok());
    if let Some(state) = state
        && let Some(asked) = children.iter().position(|child| child.rounds.holds(&state))
    {
        return asked;
    }
    let free = children.iter().map(|child| child.slots.available_permits());
    free.enumerate()
        .fold(
            (0, 0),
            |best, (at, free)| if free > best.1 { (at, free) } else { best },
        )
        .0
}

/// The names of the members of `object`.
fn names(object: &RawValue) -> Vec<String> {
    Members::parse(object.get())
        .map(|members| members.0.iter().map(|(name, _)| name.to_string()).collect())
        .unwrap_or_default()
}

/// The names of the client capabilities a 2026-07-28 request declares in
/// its `_meta`.
fn declared(meta: Option<&RawValue>) -> Vec<String> {
    meta.and_then(|meta| member(meta, "io.modelcontextprotocol/clientCapabilities"))
        .map(names)
        .unwrap_or_default()
}
