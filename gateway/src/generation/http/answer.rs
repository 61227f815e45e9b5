//! Reading an older upstream's answers, JSON or SSE, and handing them to a
//! 2026-07-28 client.
//!
//! | Answer | For the bridge itself (`initialize`, the probe) | For a client |
//! |--------|-------------------------------------------------|--------------|
//! | `application/json` | read whole, up to the message limit | read whole, up to the message limit, made a 2026-07-28 answer (`events.rs`); with a success status, a body that is no JSON-RPC response (not JSON, a request, a notification) becomes a `502` JSON-RPC error under the call's id, and an error under a `null` id the call's error |
//! | `text/event-stream` | read up to the first response | the head held until the first message: a `-32021` refusal (a capability the client did not declare) becomes HTTP 400 with it, as a 2026-07-28 server answers; otherwise each event passed on as it comes (`events.rs`); a response among them made a 2026-07-28 answer; `id` and `retry` dropped (2026-07-28 has no resumable streams); the whole stream cut at [`STREAM_FACTOR`] times the message limit |
//! | anything else | no answer | passed on as it came |
//!
//! An answer over its limit fails: the bridge's own request with an error,
//! a client's JSON with a `502` JSON-RPC error, a client's stream by ending
//! it (the call's waiter then sees a cut stream, as with any broken one).

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, Limited, StreamBody};
use sse_stream::Sse;

use super::events::{Call, answer_for, modern_event};
use super::exchange::{error_reply, is_sse, limited};
use super::rounds::{Asking, Events, relayed};
use super::{Plain, full};
use crate::generation::message::{MISSING_CAPABILITY, error_response, is_error};

/// The first event of `events` that carries data (a 2025-11-25 priming
/// event carries none, and is left out), or its error; `None` when the
/// stream ended first.
async fn first_message(events: &mut Events) -> Option<Result<Sse, std::io::Error>> {
    while let Some(event) = events.next().await {
        match event {
            Ok(event) if event.data.as_deref().is_none_or(str::is_empty) => continue,
            other => return Some(other),
        }
    }
    None
}

/// The events of an SSE answer, the whole stream cut at [`STREAM_FACTOR`]
/// times the message limit `max`.
pub(crate) fn sse_events(body: Plain, max: usize) -> Events {
    let events =
        mcp_tasks::wire::sse::Events::new(limited(body, max.saturating_mul(STREAM_FACTOR)));
    Box::pin(events.map_err(|error| std::io::Error::other(error.to_string())))
}

/// How many times the message limit a whole SSE answer may carry.
pub(crate) const STREAM_FACTOR: usize = 4;

/// `response`, an older upstream's answer to `call`, as a 2026-07-28
/// server would send it. A client that can be asked the upstream's
/// questions (`asking`) gets them as input rounds (`rounds.rs`).
pub(crate) async fn for_client(
    response: Response<Plain>,
    mut call: Call,
    max: usize,
    asking: Option<Asking>,
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
        let mut events = sse_events(body, max);
        // The head waits for the first message: a 2026-07-28 server refuses
        // a call whose client lacks a capability it needs with HTTP 400,
        // which a stream that has begun cannot say.
        let first = first_message(&mut events).await;
        if let Some(Ok(event)) = &first
            && let Some(data) = event.data.as_deref()
            && is_error(data.as_bytes(), MISSING_CAPABILITY)
        {
            call.pending.answered();
            let (refusal, _) = answer_for(Bytes::copy_from_slice(data.as_bytes()), &call);
            return error_reply(StatusCode::BAD_REQUEST, refusal);
        }
        let events: Events = Box::pin(futures_util::stream::iter(first).chain(events));
        if let Some(asking) = asking {
            return Response::from_parts(parts, relayed(events, call, asking));
        }
        let events = events.map_ok(move |event| Frame::data(modern_event(event, &mut call)));
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
            let (body, response) = answer_for(body.to_bytes(), &call);
            // A gateway error (502, 504) is no answer of the upstream's:
            // the call may still run there, and is cancelled as it drops.
            if !parts.status.is_success() {
                return Response::from_parts(parts, full(body));
            }
            call.pending.answered();
            if !response {
                // Not JSON, or no response: the client could not tie it to
                // its call, whose id the upstream never saw.
                tracing::warn!("an answer of the upstream is not a response to the call");
                return unusable(
                    &call,
                    "The upstream's answer is not a JSON-RPC response to the call",
                );
            }
            Response::from_parts(parts, full(body))
        }
        Err(error) => {
            tracing::warn!(%error, "an answer of the upstream could not be read whole");
            unusable(
                &call,
                &format!("The upstream's answer could not be read (limit {max} bytes)"),
            )
        }
    }
}

/// A `502` with a `-32603` error under `call`'s id: an answer of the
/// upstream the client could not use.
fn unusable(call: &Call, why: &str) -> Response<Plain> {
    error_reply(
        StatusCode::BAD_GATEWAY,
        error_response(&call.id, -32603, why),
    )
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::HeaderValue;

    use super::super::exchange::first_response;
    use super::super::pending::Pending;
    use super::*;

    /// A call with client id `id` (JSON text), settled upstream.
    fn settled_call(id: &str, cacheable: bool, log_level: Option<usize>) -> Call {
        Call {
            id: id.to_owned(),
            cacheable,
            log_level,
            pending: Pending::settled(),
            params: None,
        }
    }

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
        let call = settled_call(r#""c-5""#, true, None);
        let response = for_client(upstream, call, 1 << 16, None).await;
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
        let call = settled_call("3", false, None);
        let response = for_client(upstream, call, 1 << 16, None).await;
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
    async fn a_missing_capability_refusal_on_a_stream_is_a_400_with_the_calls_id() {
        let upstream = sse_response(
            "id: prime\ndata: \n\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32021,\"message\":\"needs elicitation\"}}\n\n",
        );
        let call = settled_call(r#""c-4""#, false, None);
        let response = for_client(upstream, call, 1 << 16, None).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(message["id"], "c-4");
        assert_eq!(message["error"]["code"], -32021);
        // Any other first message begins the stream, as before.
        let upstream = sse_response(
            "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32603,\"message\":\"x\"}}\n\n",
        );
        let call = settled_call("4", false, None);
        let response = for_client(upstream, call, 1 << 16, None).await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_json_answer_over_the_limit_is_a_502_with_the_calls_id() {
        let mut upstream = Response::new(full(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":9,"result":{"content":[]}}"#,
        )));
        upstream
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let call = settled_call("9", false, None);
        let response = for_client(upstream, call, 8, None).await;
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(message["id"], 9);
    }

    fn json_response(status: StatusCode, text: &'static str) -> Response<Plain> {
        let mut response = Response::new(full(Bytes::from_static(text.as_bytes())));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }

    /// The status and the message a client gets for the upstream's
    /// `status` and JSON `text`.
    async fn client_gets(
        status: StatusCode,
        text: &'static str,
    ) -> (StatusCode, serde_json::Value) {
        let call = settled_call(r#""c-1""#, false, None);
        let response = for_client(json_response(status, text), call, 1 << 16, None).await;
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&body).unwrap_or_default())
    }

    #[tokio::test]
    async fn a_json_answer_that_is_no_response_is_a_502_with_the_calls_id() {
        // Found by fuzz/'s bridge target: a broken answer reached the client
        // under the bridge's own id, which the client never sent.
        for broken in [
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-pc":"2.0"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":2}"#,
        ] {
            let (status, message) = client_gets(StatusCode::OK, broken).await;
            assert_eq!(status, StatusCode::BAD_GATEWAY, "{broken}");
            assert_eq!(message["id"], "c-1", "{broken}");
            assert_eq!(message["error"]["code"], -32603, "{broken}");
        }
        // `"result": null` is a response (serde reads a null into `None`).
        let (status, message) =
            client_gets(StatusCode::OK, r#"{"jsonrpc":"2.0","id":2,"result":null}"#).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(message["id"], "c-1", "{message}");
        let null = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#;
        let (status, message) = client_gets(StatusCode::OK, null).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(message["id"], "c-1", "{message}");
        assert_eq!(message["error"]["message"], "parse", "{message}");
        // An HTTP error's body passes as it came.
        let (status, message) = client_gets(StatusCode::SERVICE_UNAVAILABLE, r#"{"busy":1}"#).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(message["busy"], 1);
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
            let call = settled_call("9", false, asked);
            let response = for_client(sse_response(stream), call, 1 << 16, None).await;
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let text = std::str::from_utf8(&body).unwrap();
            assert_eq!(text.contains("working"), shown, "asked {asked:?}: {text}");
            assert!(text.contains(r#""id":9"#), "the answer always: {text}");
        }
    }
}
