//! The Streamable-HTTP face of the bridge: what a POST, GET or DELETE gets.
//!
//! | Request | Answer |
//! |---------|--------|
//! | 2026-07-28 `server/discover` | the child's capabilities and instructions, as a 2026-07-28 server |
//! | `initialize` (2025-11-25 and older) | the child's answer to the bridge, under a new `Mcp-Session-Id` |
//! | `ping`, `notifications/initialized` | answered here |
//! | any other request | forwarded to the child under a fresh id; the answer as JSON, or as SSE with the call's progress when the client asked for progress and takes SSE |
//! | `notifications/cancelled` in a session | forwarded, its `requestId` the bridge's own (a 2026-07-28 client cancels by closing its stream) |
//! | `notifications/roots/list_changed` | forwarded |
//! | other notifications, responses | not for the child (`202`): the bridge relays none of the child's requests as requests |
//! | `initialize` in 2026-07-28 | refused (`400`): that protocol has no handshake |
//! | a session's request with an unknown `Mcp-Session-Id` | `404` |
//! | GET | `405`: the child's own notifications are not streamed (yet) |
//! | DELETE | the session ends |

use std::sync::Arc;

use bytes::Bytes;
use http::header::ALLOW;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use serde_json::value::RawValue;

use super::bridge::Bridge;
use super::message::{Kind, Message, error_response, member, replaced, result_response};
use super::relay;
use super::reply::{json, status};
use super::sessions::Sessions;
use crate::body::{BoxBody, BoxError};
use crate::wire::MODERN_VERSION;

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
        (Kind::Request, "initialize") if !modern => {
            let asked = message
                .params
                .and_then(|params| member(params, "protocolVersion"))
                .and_then(|version| serde_json::from_str::<String>(version.get()).ok());
            initialize(&bridge, &sessions, id, asked.as_deref())
        }
        // A 2026-07-28 client has no handshake; the child's is the bridge's.
        (Kind::Request, "initialize") => json(
            StatusCode::BAD_REQUEST,
            error_response(id, -32600, "initialize is not part of protocol 2026-07-28"),
        ),
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
            relay::call(
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
            let _ = bridge.send(body.clone()).await;
            status(StatusCode::ACCEPTED)
        }
        // The bridge relays no request of the child to a client as such, so
        // no client response answers one; other notifications are the
        // bridge's own business with the child.
        (Kind::Notification | Kind::Response, _) => {
            tracing::debug!(method, "a client message the stdio server does not get");
            status(StatusCode::ACCEPTED)
        }
        (Kind::Invalid, _) => json(
            StatusCode::BAD_REQUEST,
            error_response(id, -32600, "Invalid Request"),
        ),
    }
}

/// The versions a client may get from `initialize`: each no newer than the
/// child's is served as the child serves it.
const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The answer to a client's `initialize` asking `asked`: what the child
/// declared, in a new session, under the client's version when the bridge
/// knows it and it is no newer than the child's, else the child's.
fn initialize(
    bridge: &Bridge,
    sessions: &Sessions,
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
