//! What a 2026-07-28 server checks of a request before it runs it, checked
//! by the bridge for an upstream that cannot: the same rules over HTTP and
//! over stdio.
//!
//! | The request | Answer |
//! |-------------|--------|
//! | `MCP-Protocol-Version` names no version the gateway speaks (outside a session) | `-32022` with the versions it speaks, 400 |
//! | a method 2026-07-28 removed (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`) or does not know | `-32601`, 404 |
//! | `Mcp-Method` other than the body's method | `-32020`, 400 |
//! | `_meta` without `io.modelcontextprotocol/protocolVersion` or `clientCapabilities` | `-32602`, 400 |
//! | `_meta`'s protocol version other than the header's | `-32020`, 400 |
//!
//! The task methods are the layer's (it checks them first) and pass.

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use mcp_tasks::MODERN_VERSION;
use mcp_tasks::wire::jsonrpc::Reply;
use serde_json::value::RawValue;

use super::declared::HANDSHAKE_VERSIONS;
use super::message::{Message, member};

/// The methods of protocol 2026-07-28 a server may be asked.
const METHODS: [&str; 13] = [
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "subscriptions/listen",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// The answer to a request that fails a check: its HTTP status and body.
#[derive(Debug)]
pub(crate) struct Refused {
    pub status: StatusCode,
    pub body: Bytes,
}

impl From<Reply> for Refused {
    fn from(reply: Reply) -> Self {
        Self {
            status: reply.status,
            body: reply.body,
        }
    }
}

/// A request outside any session whose `MCP-Protocol-Version` names a
/// version the gateway does not speak: its refusal (`id` the request's, if
/// it could be read).
pub(crate) fn unknown_version(headers: &HeaderMap, id: Option<&RawValue>) -> Option<Refused> {
    let version = headers.get("mcp-protocol-version")?;
    let known =
        version == MODERN_VERSION || HANDSHAKE_VERSIONS.iter().any(|known| version == *known);
    if known || headers.contains_key("mcp-session-id") {
        return None;
    }
    let requested = String::from_utf8_lossy(version.as_bytes());
    Some(Reply::unsupported_version(id, &requested).into())
}

/// Checks the 2026-07-28 request `message` (a request: it has an id and a
/// method; `meta`, its [`Message::meta`]) sent with `headers`.
pub(crate) fn request(
    headers: &HeaderMap,
    message: &Message<'_>,
    meta: Option<&RawValue>,
) -> Result<(), Refused> {
    let id = message.id;
    let method = message.method.as_deref().unwrap_or_default();
    if !METHODS.contains(&method) {
        return Err(Reply::method_not_found(id, method).into());
    }
    let mismatch = |what: String| Err(Reply::header_mismatch(id, what).into());
    let sent = headers
        .get("mcp-method")
        .and_then(|value| value.to_str().ok());
    if sent != Some(method) {
        let sent = sent.unwrap_or("(missing)");
        return mismatch(format!(
            "Mcp-Method header {sent:?} does not match method {method:?}"
        ));
    }
    let field = |name: &str| meta.and_then(|meta| member(meta, name));
    let version = field("io.modelcontextprotocol/protocolVersion");
    if version.is_none() || field("io.modelcontextprotocol/clientCapabilities").is_none() {
        return Err(Reply::bad_params(
            id,
            "Missing required _meta fields io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
        )
        .into());
    }
    let version: Option<String> =
        version.and_then(|version| serde_json::from_str(version.get()).ok());
    if version.as_deref() != Some(MODERN_VERSION) {
        return mismatch(format!(
            "_meta protocolVersion {version:?} does not match the MCP-Protocol-Version header {MODERN_VERSION:?}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (http::HeaderName::from_static(name), value.parse().unwrap()))
            .collect()
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn checked(method_header: &'static str, body: &str) -> Result<(), i64> {
        let message = Message::read(body.as_bytes()).expect("a message");
        let headers = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method_header),
        ]);
        request(&headers, &message, message.meta()).map_err(|refused| {
            let body: serde_json::Value = serde_json::from_slice(&refused.body).unwrap();
            body["error"]["code"].as_i64().unwrap()
        })
    }

    #[test]
    fn a_request_passes_only_when_its_method_headers_and_meta_agree() {
        let good =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
        assert_eq!(checked("tools/list", &good), Ok(()));
        assert_eq!(checked("prompts/list", &good), Err(-32020));
        assert_eq!(checked("TOOLS/LIST", &good), Err(-32020));
        let bare = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        assert_eq!(checked("tools/list", bare), Err(-32602));
        let ping = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{META}}}}}"#);
        assert_eq!(checked("ping", &ping), Err(-32601));
        let older = good.replace("\"2026-07-28\"", "\"2025-11-25\"");
        assert_eq!(checked("tools/list", &older), Err(-32020));
    }

    #[test]
    fn an_unknown_version_is_refused_outside_a_session_only() {
        let refused = unknown_version(&headers(&[("mcp-protocol-version", "v999.0.0")]), None)
            .expect("refused");
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        let body: serde_json::Value = serde_json::from_slice(&refused.body).unwrap();
        assert_eq!(body["error"]["code"], -32022);
        assert_eq!(body["error"]["data"]["requested"], "v999.0.0");
        let known = headers(&[("mcp-protocol-version", "2025-06-18")]);
        assert!(unknown_version(&known, None).is_none());
        let in_session = headers(&[("mcp-protocol-version", "v9"), ("mcp-session-id", "s")]);
        assert!(unknown_version(&in_session, None).is_none());
    }
}
