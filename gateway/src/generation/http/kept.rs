//! Sessions the bridge keeps itself, for 2025-11-25 (and older) clients in
//! front of an upstream that opens none: a stateless server (the
//! TypeScript SDK v2's default), or one that speaks only 2026-07-28.
//!
//! | Request of a 2025-11-25 client | Upstream that opens sessions | Upstream that opens none |
//! |--------------------------------|------------------------------|--------------------------|
//! | `initialize` | passed; its session is the upstream's | passed, and the answer given a session of the bridge's (`Mcp-Session-Id`), so the layer serves the client tasks in it; refused by a 2026-07-28-only upstream: answered from its `server/discover` |
//! | a request in a kept session | — | without the session header; to a 2026-07-28 upstream as a 2026-07-28 request: `_meta` with the version and the session's client capabilities, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` |
//! | `ping` in a kept session | — | answered here (2026-07-28 has none) |
//! | a 2026-07-28 upstream's `input_required` answer | — | asked of the client on the call's stream, and the call sent again with its answers (`asked.rs`) |
//! | a response in a kept session | — | the answer to such a question (`202`) |
//! | a notification in a kept session | — | `202`: nothing of the session is upstream |
//! | DELETE, GET of a kept session | — | the session ends (`200`); `405` |
//!
//! At most [`MAX_KEPT`] sessions: a full table forgets the one used least
//! recently, whose client then gets `404` and initializes again, as the
//! protocol has it for a lost session (the bridge's session ids carry
//! [`KEPT_PREFIX`], so one it forgot is told apart from the upstream's).
//! A client's capabilities are kept up to [`MAX_CAPABILITIES`] bytes; an
//! `initialize` declaring more gets `400`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http::header::{ALLOW, AUTHORIZATION, CONTENT_LENGTH};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use serde_json::value::RawValue;

use super::asked::{self, Questions, may_ask};
use super::exchange::{discover_request, error_reply, first_response, read_request};
use super::probe::Found;
use super::{Plain, Shared, Upstream, full, lock};
use crate::generation::checked;
use crate::generation::declared::HANDSHAKE_VERSIONS;
use crate::generation::message::{Kind, Message, error_response, member, result_response};
use mcp_tasks::MODERN_VERSION;
use mcp_tasks::wire::raw::edit_object;
use tower::ServiceExt;

/// The most sessions kept at once.
pub(crate) const MAX_KEPT: usize = 10_000;

/// What begins the id of every session the bridge keeps.
pub(crate) const KEPT_PREFIX: &str = "mcp-tasks-kept-";

/// The most bytes of client capabilities kept for one session.
pub(crate) const MAX_CAPABILITIES: usize = 16 * 1024;

/// One kept session.
struct Kept {
    /// The client capabilities its `initialize` declared (JSON text).
    capabilities: String,
    used: Instant,
}

/// The kept sessions.
#[derive(Default)]
pub(crate) struct KeptSessions {
    table: Mutex<HashMap<String, Kept>>,
    /// The upstream's questions asked in them (`asked.rs`).
    questions: Arc<Questions>,
}

impl KeptSessions {
    /// Whether `id` is a session the bridge keeps.
    #[cfg(test)]
    fn holds(&self, id: &str) -> bool {
        lock(&self.table).contains_key(id)
    }

    /// A new session for a client that declared `capabilities`, the one
    /// used least recently forgotten when the table is full; `None` when
    /// no random id could be had.
    fn open(&self, capabilities: String) -> Option<String> {
        let id = format!("{KEPT_PREFIX}{}", mcp_tasks::TaskId::generate().ok()?);
        let mut table = lock(&self.table);
        if table.len() >= MAX_KEPT {
            let oldest = table
                .iter()
                .min_by_key(|(_, kept)| kept.used)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                table.remove(&oldest);
            }
        }
        let used = Instant::now();
        table.insert(id.clone(), Kept { capabilities, used });
        Some(id)
    }

    /// The client capabilities of session `id`, marking it used.
    fn capabilities(&self, id: &str) -> Option<String> {
        let mut table = lock(&self.table);
        let kept = table.get_mut(id)?;
        kept.used = Instant::now();
        Some(kept.capabilities.clone())
    }

    fn end(&self, id: &str) -> bool {
        lock(&self.table).remove(id).is_some()
    }
}

/// A session-less 2025-11-25 POST: an `initialize` gets a kept session
/// when the upstream opens none; anything else passes as it is. The
/// upstream's generation is asked only when it refuses `initialize`: a
/// silent upstream holds up no other request here.
pub(crate) async fn unsessioned(
    inner: Upstream,
    shared: &Shared,
    max: usize,
    request: Request<Plain>,
) -> Response<Plain> {
    let (parts, body) = request.into_parts();
    let body = match read_request(body, max).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let authorization = parts.headers.get(AUTHORIZATION).cloned();
    let authorization = authorization.as_ref();
    let message = Message::read(&body);
    let initialize = message
        .as_ref()
        .filter(|m| m.method.as_deref() == Some("initialize"));
    let Some(initialize) = initialize else {
        // A version no generation has, outside a session: refused as a
        // 2026-07-28 server refuses it, for an upstream that cannot.
        let id = message.as_ref().and_then(|message| message.id);
        if let Some(refused) = checked::unknown_version(&parts.headers, id)
            && shared.generation(&inner, max, authorization).await == Some(Found::Legacy)
        {
            return error_reply(refused.status, refused.body);
        }
        let Ok(response) = inner.oneshot(Request::from_parts(parts, full(body))).await;
        return response;
    };
    let id = initialize.id.map_or("null", RawValue::get).to_owned();
    let params = initialize.params;
    let asked = params
        .and_then(|params| member(params, "protocolVersion"))
        .and_then(|version| serde_json::from_str::<String>(version.get()).ok());
    let capabilities = params
        .and_then(|params| member(params, "capabilities"))
        .map_or_else(|| "{}".to_owned(), |caps| caps.get().to_owned());
    if capabilities.len() > MAX_CAPABILITIES {
        let why = format!("capabilities over {MAX_CAPABILITIES} bytes");
        return error_reply(StatusCode::BAD_REQUEST, error_response(&id, -32602, &why));
    }
    let request = Request::from_parts(parts, full(body.clone()));
    let Ok(response) = inner.clone().oneshot(request).await;
    if response.headers().contains_key("mcp-session-id") {
        return response;
    }
    let response = if response.status().is_success() {
        response
    } else if shared.generation(&inner, max, authorization).await == Some(Found::Modern) {
        // A 2026-07-28-only upstream has no handshake: its discover is one.
        match from_discover(inner, &id, asked.as_deref(), max, authorization).await {
            Some(answer) => error_reply(StatusCode::OK, answer),
            None => return response,
        }
    } else {
        return response;
    };
    let Some(session) = shared.kept.open(capabilities) else {
        let why = "No session id could be made";
        return error_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            error_response(&id, -32603, why),
        );
    };
    tracing::debug!(%session, "a 2025-11-25 session kept by the gateway (the upstream opens none)");
    let mut response = response;
    if let Ok(value) = HeaderValue::from_str(&session) {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// An `initialize` answer with id `id` made from a 2026-07-28 upstream's
/// `server/discover`, under the version the client `asked` for when it is
/// one of the handshake's.
async fn from_discover(
    inner: Upstream,
    id: &str,
    asked: Option<&str>,
    max: usize,
    authorization: Option<&HeaderValue>,
) -> Option<Bytes> {
    let Ok(response) = inner.oneshot(discover_request(authorization)).await;
    let answer = first_response(response, max).await.ok()?;
    let result = Message::read(&answer)?.result?;
    let version = asked
        .filter(|asked| HANDSHAKE_VERSIONS.contains(asked))
        .unwrap_or("2025-11-25");
    let info = member(result, "_meta")
        .and_then(|meta| member(meta, "io.modelcontextprotocol/serverInfo"))
        .map_or("{}", RawValue::get);
    let capabilities = member(result, "capabilities").map_or("{}", RawValue::get);
    let mut built = format!(
        r#"{{"protocolVersion":"{version}","capabilities":{capabilities},"serverInfo":{info}"#
    );
    if let Some(instructions) = member(result, "instructions") {
        built.push_str(&format!(r#","instructions":{}"#, instructions.get()));
    }
    built.push('}');
    Some(result_response(id, &built))
}

/// A request in the kept session `session`.
pub(crate) async fn in_session(
    inner: Upstream,
    kept: &KeptSessions,
    session: &str,
    modern_upstream: bool,
    max: usize,
    request: Request<Plain>,
) -> Response<Plain> {
    let (mut parts, body) = request.into_parts();
    match parts.method {
        Method::POST => {}
        Method::DELETE => {
            let status = if kept.end(session) {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            };
            return error_reply(status, Bytes::new());
        }
        _ => {
            let mut refused = error_reply(StatusCode::METHOD_NOT_ALLOWED, Bytes::new());
            refused
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            return refused;
        }
    }
    let Some(capabilities) = kept.capabilities(session) else {
        return error_reply(
            StatusCode::NOT_FOUND,
            error_response("null", -32001, "Session not found"),
        );
    };
    let body = match read_request(body, max).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let Some(message) = Message::read(&body) else {
        return error_reply(
            StatusCode::BAD_REQUEST,
            error_response("null", -32700, "Parse error"),
        );
    };
    let id = message.id.map_or("null", RawValue::get).to_owned();
    let method = message.method.as_deref().unwrap_or_default().to_owned();
    match message.kind() {
        Kind::Request => {}
        Kind::Response => {
            // An answer to a question of the upstream's, if it is one.
            kept.questions.answer(session, &message);
            return error_reply(StatusCode::ACCEPTED, Bytes::new());
        }
        _ => return error_reply(StatusCode::ACCEPTED, Bytes::new()),
    }
    if method == "ping" {
        return error_reply(StatusCode::OK, result_response(&id, "{}"));
    }
    parts.headers.remove("mcp-session-id");
    let body = if modern_upstream {
        let Some(modern) = as_modern(&body, &capabilities) else {
            return error_reply(
                StatusCode::BAD_REQUEST,
                error_response(&id, -32600, "Invalid Request"),
            );
        };
        let headers = &mut parts.headers;
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static(MODERN_VERSION),
        );
        if let Ok(value) = HeaderValue::from_str(&method) {
            headers.insert("mcp-method", value);
        }
        if let Some(name) = name_of(&message).and_then(|name| HeaderValue::from_str(&name).ok()) {
            headers.insert("mcp-name", name);
        }
        modern
    } else {
        body
    };
    parts
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    if !(modern_upstream && may_ask(&method)) {
        let Ok(response) = inner.oneshot(Request::from_parts(parts, full(body))).await;
        return response;
    }
    let request = Request::from_parts(parts.clone(), full(body.clone()));
    let Ok(response) = inner.clone().oneshot(request).await;
    let call = asked::Call {
        inner,
        parts,
        body,
        id,
        session: session.to_owned(),
        questions: kept.questions.clone(),
        max,
    };
    asked::answered(response, call).await
}

/// What `Mcp-Name` carries for a request: the tool or prompt name, or the
/// resource URI.
fn name_of(message: &Message<'_>) -> Option<String> {
    let key = match message.method.as_deref()? {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    serde_json::from_str(member(message.params?, key)?.get()).ok()
}

/// `body` (a 2025-11-25 request) as a 2026-07-28 one: `params._meta` gains
/// the protocol version and the session's client capabilities; every
/// other byte of every other member kept.
fn as_modern(body: &[u8], capabilities: &str) -> Option<Bytes> {
    let text = std::str::from_utf8(body).ok()?;
    let message = Message::read(body)?;
    let params = message.params.map_or("{}", RawValue::get);
    let meta = message
        .params
        .and_then(|params| member(params, "_meta"))
        .map_or("{}", RawValue::get);
    let version = format!("\"{MODERN_VERSION}\"");
    let meta = edit_object(
        meta,
        &[
            ("io.modelcontextprotocol/protocolVersion", Some(&version)),
            (
                "io.modelcontextprotocol/clientCapabilities",
                Some(capabilities),
            ),
        ],
    )?;
    let params = edit_object(params, &[("_meta", Some(&meta))])?;
    Some(Bytes::from(edit_object(
        text,
        &[("params", Some(&params))],
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2025_request_gains_the_2026_envelope_and_keeps_its_own_meta() {
        let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"n":1.50},"_meta":{"progressToken":"p"}}}"#;
        let out = as_modern(body, r#"{"elicitation":{}}"#).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.contains(r#""arguments":{"n":1.50}"#), "{text}");
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let meta = &value["params"]["_meta"];
        assert_eq!(meta["progressToken"], "p");
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            MODERN_VERSION
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"].is_object());
        let bare = as_modern(br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#, "{}").unwrap();
        let value: serde_json::Value = serde_json::from_slice(&bare).unwrap();
        assert_eq!(
            value["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            MODERN_VERSION
        );
        let read =
            Message::read(br#"{"id":1,"method":"tools/call","params":{"name":"slow"}}"#).unwrap();
        assert_eq!(name_of(&read).as_deref(), Some("slow"));
    }

    #[test]
    fn a_full_table_forgets_the_session_used_least_recently() {
        let kept = KeptSessions::default();
        let first = kept.open("{}".into()).unwrap();
        assert!(first.starts_with(KEPT_PREFIX));
        let second = kept.open("{}".into()).unwrap();
        for _ in 2..MAX_KEPT {
            kept.open("{}".into()).unwrap();
        }
        // The first is used again: the second is now the oldest.
        assert!(kept.capabilities(&first).is_some());
        let next = kept.open("{}".into()).unwrap();
        assert_eq!(lock(&kept.table).len(), MAX_KEPT);
        assert!(kept.holds(&first) && kept.holds(&next));
        assert!(!kept.holds(&second), "the least recently used went");
        assert!(kept.end(&next) && !kept.end(&next));
    }
}
