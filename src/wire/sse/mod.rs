//! Server-sent events, the one home of every SSE fact the layer writes or
//! tests: what an event the layer writes looks like, the head of an SSE
//! response the layer makes, whether a response is SSE, whether a client
//! takes SSE.
//!
//! | Fact                                  | Here                   | Why one place                                                        |
//! |---------------------------------------|------------------------|----------------------------------------------------------------------|
//! | an event carrying one JSON-RPC message | `event`, [`named_event`] | every stream the layer writes frames its messages the same way       |
//! | a comment that keeps a quiet stream open | `KEEP_ALIVE`        | proxies and clients see one kind of heartbeat                        |
//! | the head of an SSE response the layer makes | `head`, `unbuffered` | content type and caching cannot drift between the streams         |
//! | a response (or request) that is SSE   | [`is_sse`]             | one reading of `Content-Type` (case and leading blanks ignored)     |
//! | a client that takes SSE               | [`accepts_sse`]        | one reading of `Accept`                                              |
//! | what the layer accepts from the inner server | `ACCEPT_BOTH`   | the layer's own requests ask for JSON or SSE alike                  |
//! | reading a stream of the inner server's event by event | [`Events`] (`events.rs`) | every reader takes what the SSE standard takes, the same way |
//!
//! Where the layer passes an inner stream's bytes on untouched,
//! `runtime/flight/segment.rs` cuts it at event boundaries.

mod events;

pub use events::Events;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};

/// The media type of an SSE stream.
const EVENT_STREAM: &str = "text/event-stream";

/// The `Accept` of the layer's own requests to the inner server.
pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The comment a quiet SSE stream gets, wherever the layer sends one.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One SSE event carrying the JSON-RPC message `json` (one line).
pub(crate) fn event(json: &[u8]) -> Bytes {
    named_event(None, json)
}

/// One SSE event carrying the JSON-RPC message `json` (one line), with an
/// `event:` line naming it when `name` is given.
///
/// ```
/// let event = mcp_tasks::wire::sse::named_event(Some("message"), br#"{"jsonrpc":"2.0"}"#);
/// assert_eq!(&event[..], b"event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
/// ```
pub fn named_event(name: Option<&str>, json: &[u8]) -> Bytes {
    let named = name.map_or(0, |name| name.len() + 8);
    let mut event = Vec::with_capacity(named + json.len() + 8);
    if let Some(name) = name {
        event.extend_from_slice(b"event: ");
        event.extend_from_slice(name.as_bytes());
        event.push(b'\n');
    }
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(json);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// Makes `headers` the head of an SSE response the layer writes.
pub(crate) fn head(headers: &mut HeaderMap) {
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

/// Makes `headers` the head of a long-lived SSE stream: the SSE head, and
/// a reverse proxy in front asked not to buffer it, so that its events
/// arrive as they come (the status streams; the gateway's console feed).
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// mcp_tasks::wire::sse::unbuffered(&mut headers);
/// assert!(mcp_tasks::wire::sse::is_sse(&headers));
/// assert_eq!(headers["x-accel-buffering"], "no");
/// ```
pub fn unbuffered(headers: &mut HeaderMap) {
    head(headers);
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
}

/// Whether the message with `headers` is an SSE stream (its `Content-Type`,
/// case and leading blanks ignored), without allocating.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert(http::header::CONTENT_TYPE, "Text/Event-Stream; charset=utf-8".parse().unwrap());
/// assert!(mcp_tasks::wire::sse::is_sse(&headers));
/// ```
pub fn is_sse(headers: &HeaderMap) -> bool {
    super::is_content_type(headers, EVENT_STREAM)
}

/// Whether a client that sent `headers` takes an SSE answer.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert(http::header::ACCEPT, "application/json, text/event-stream".parse().unwrap());
/// assert!(mcp_tasks::wire::sse::accepts_sse(&headers));
/// ```
pub fn accepts_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains(EVENT_STREAM))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_data_line_and_a_blank_line() {
        assert_eq!(&event(br#"{"a":1}"#)[..], b"data: {\"a\":1}\n\n");
    }

    #[test]
    fn the_head_says_sse_and_no_cache_and_unbuffered_adds_the_proxy_hint() {
        let mut headers = HeaderMap::new();
        head(&mut headers);
        assert!(is_sse(&headers));
        assert_eq!(headers[CACHE_CONTROL], "no-cache");
        assert!(!headers.contains_key("x-accel-buffering"));
        unbuffered(&mut headers);
        assert_eq!(headers["x-accel-buffering"], "no");
    }

    #[test]
    fn json_is_not_sse() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        assert!(!is_sse(&headers));
        assert!(!is_sse(&HeaderMap::new()));
    }
}
