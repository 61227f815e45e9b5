//! Reading an older upstream's answers, JSON or SSE, and handing them to a
//! 2026-07-28 client.
//!
//! | Answer | For the bridge itself (`initialize`, the probe) | For a client |
//! |--------|-------------------------------------------------|--------------|
//! | `application/json` | read whole, up to the message limit | read whole, up to the message limit, [`modernize`]d |
//! | `text/event-stream` | read up to the first response | each event passed on as it comes; a response among them [`modernize`]d; `id` and `retry` dropped (2026-07-28 has no resumable streams); the whole stream cut at [`STREAM_FACTOR`] times the message limit |
//! | anything else | no answer | passed on as it came |
//!
//! An answer over its limit fails: the bridge's own request with an error,
//! a client's JSON with a `502` JSON-RPC error, a client's stream by ending
//! it (the call's waiter then sees a cut stream, as with any broken one).

use bytes::Bytes;
use futures_util::TryStreamExt;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, Limited, StreamBody};
use sse_stream::{Sse, SseStream};

use super::exchange::{error_reply, is_sse, limited};
use super::pending::Pending;
use super::{Plain, full};
use serde_json::value::RawValue;

use crate::generation::message::{Kind, Message, error_response, member, replaced};
use crate::generation::results::modernize;

/// The log levels of MCP, least severe first.
pub(crate) const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The index in [`LEVELS`] of the level the JSON text `level` names.
pub(crate) fn level(level: &RawValue) -> Option<usize> {
    let level: String = serde_json::from_str(level.get()).ok()?;
    LEVELS.iter().position(|known| *known == level)
}

/// Whether `message` is a log message the call's client did not ask for:
/// 2026-07-28 sends log messages only at or above the level a request
/// names, and none to a request that names none.
fn unasked_log(message: &[u8], call: &Call) -> bool {
    let Some(read) = Message::read(message) else {
        return false;
    };
    if read.method.as_deref() != Some("notifications/message") {
        return false;
    }
    let sent = read
        .params
        .and_then(|params| member(params, "level"))
        .and_then(level);
    match (call.log_level, sent) {
        (Some(least), Some(sent)) => sent < least,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// How many times the message limit a whole SSE answer may carry.
pub(crate) const STREAM_FACTOR: usize = 4;

/// A 2026-07-28 call as the bridge sent it on.
pub(crate) struct Call {
    /// The client's id (JSON text), put back on the answer.
    pub id: String,
    /// Whether its result is cacheable.
    pub cacheable: bool,
    /// The least severe log message its client asked for
    /// (`_meta["io.modelcontextprotocol/logLevel"]`, as a [`LEVELS`]
    /// index); none asked, no log messages.
    pub log_level: Option<usize>,
    /// The upstream to tell if the client goes away first.
    pub pending: Pending,
}

/// `response`, an older upstream's answer to `call`, as a 2026-07-28
/// server would send it.
pub(crate) async fn for_client(
    response: Response<Plain>,
    mut call: Call,
    max: usize,
) -> Response<Plain> {
    let sse = is_sse(&response);
    let json = !sse
        && response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
    let (mut parts, body) = response.into_parts();
    parts.headers.remove("mcp-session-id");
    if sse {
        parts.headers.remove(CONTENT_LENGTH);
        let events = SseStream::new(limited(body, max.saturating_mul(STREAM_FACTOR)))
            .map_ok(move |event| Frame::data(modern_event(event, &mut call)))
            .map_err(|error| std::io::Error::other(error.to_string()));
        return Response::from_parts(parts, StreamBody::new(events).boxed_unsync());
    }
    if !json {
        // Not an answer to the call (an HTTP error): it did not run.
        call.pending.answered();
        return Response::from_parts(parts, body);
    }
    match Limited::new(body, max).collect().await {
        Ok(body) => {
            parts.headers.remove(CONTENT_LENGTH);
            let (body, _) = answer_for(body.to_bytes(), &call);
            // A gateway error (502, 504) is no answer of the upstream's:
            // the call may still run there, and is cancelled as it drops.
            if parts.status.is_success() {
                call.pending.answered();
            }
            Response::from_parts(parts, full(body))
        }
        Err(error) => {
            tracing::warn!(%error, "an answer of the upstream could not be read whole");
            let why = format!("The upstream's answer could not be read (limit {max} bytes)");
            error_reply(
                StatusCode::BAD_GATEWAY,
                error_response(&call.id, -32603, &why),
            )
        }
    }
}

/// One message of the upstream on `call`'s answer: the response to it
/// [`modernize`]d under the client's id, any other message as it is.
/// Whether it was the response.
fn answer_for(message: Bytes, call: &Call) -> (Bytes, bool) {
    let id = match Message::read(&message) {
        Some(read) if read.kind() == Kind::Response => read.id,
        _ => return (message, false),
    };
    let restored = id.and_then(|id| replaced(&message, &[(id, &call.id)]));
    let message = restored.unwrap_or(message);
    (modernize(message, call.cacheable), true)
}

/// One event of an older upstream's stream, written for a 2026-07-28
/// client: without `id` and `retry` (no resumable streams), each line of
/// its data on a `data:` line of its own; an event with no data (a
/// 2025-11-25 priming event) is left out. The response marks the call
/// answered.
fn modern_event(event: Sse, call: &mut Call) -> Bytes {
    let Some(data) = event.data.filter(|data| !data.is_empty()) else {
        return Bytes::new();
    };
    if unasked_log(data.as_bytes(), call) {
        return Bytes::new();
    }
    let (data, response) = answer_for(Bytes::from(data), call);
    if response {
        call.pending.answered();
    }
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(name) = &event.event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    for line in data.split(|byte| *byte == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.push(b'\n');
    }
    out.push(b'\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::super::exchange::first_response;
    use super::*;

    fn sse_response(text: &'static str) -> Response<Plain> {
        let mut response = Response::new(full(Bytes::from_static(text.as_bytes())));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        response
            .headers_mut()
            .insert("mcp-session-id", HeaderValue::from_static("s-1"));
        response
    }

    #[tokio::test]
    async fn a_stream_keeps_its_notifications_and_its_response_gains_the_2026_members() {
        let upstream = sse_response(
            "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\nevent: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":[]}}\n\n",
        );
        let call = Call {
            id: r#""c-5""#.to_owned(),
            cacheable: true,
            log_level: None,
            pending: Pending::settled(),
        };
        let response = for_client(upstream, call, 1 << 16).await;
        assert!(response.headers().get("mcp-session-id").is_none());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(!text.contains("id: "), "{text}");
        assert!(
            text.contains(r#""method":"notifications/progress""#),
            "{text}"
        );
        assert!(
            text.contains(
                r#""result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}"#
            ),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_first_response_of_a_stream_is_found_after_its_notifications() {
        let upstream = sse_response(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\n\n",
        );
        let found = first_response(upstream, 1 << 16).await.unwrap();
        assert!(found.starts_with(br#"{"jsonrpc":"2.0","id":0,"result""#));
        let cut = sse_response("data: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n\n");
        assert!(first_response(cut, 8).await.is_err(), "over the limit");
    }

    #[tokio::test]
    async fn a_multi_line_event_keeps_every_line_as_data_and_a_priming_event_is_left_out() {
        let upstream = sse_response(
            "id: prime\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"result\":{}}\n\n",
        );
        let call = Call {
            id: "3".to_owned(),
            cacheable: false,
            log_level: None,
            pending: Pending::settled(),
        };
        let response = for_client(upstream, call, 1 << 16).await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.starts_with("event: message\ndata: "), "{text}");
        assert!(
            text.lines().all(|line| line.is_empty()
                || line.starts_with("data: ")
                || line.starts_with("event: ")),
            "{text}"
        );
        let data: String = text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .collect::<Vec<_>>()
            .join("\n");
        let message: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(message["id"], 3, "{text}");
        assert_eq!(message["result"]["resultType"], "complete", "{text}");
    }

    #[tokio::test]
    async fn a_json_answer_over_the_limit_is_a_502_with_the_calls_id() {
        let mut upstream = Response::new(full(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":9,"result":{"content":[]}}"#,
        )));
        upstream
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let call = Call {
            id: "9".to_owned(),
            cacheable: false,
            log_level: None,
            pending: Pending::settled(),
        };
        let response = for_client(upstream, call, 8).await;
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(message["id"], 9);
    }

    #[tokio::test]
    async fn log_messages_reach_only_a_client_that_asked_for_their_level() {
        let stream = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n";
        for (asked, shown) in [
            (None, false),
            (Some(1), true),
            (Some(0), true),
            (Some(4), false),
        ] {
            let call = Call {
                id: "9".to_owned(),
                cacheable: false,
                log_level: asked,
                pending: Pending::settled(),
            };
            let response = for_client(sse_response(stream), call, 1 << 16).await;
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let text = std::str::from_utf8(&body).unwrap();
            assert_eq!(text.contains("working"), shown, "asked {asked:?}: {text}");
            assert!(text.contains(r#""id":9"#), "the answer always: {text}");
        }
    }
}
