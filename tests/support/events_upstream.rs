//! An MCP server of protocol 2026-07-28 with events of its own, written
//! from the Events extension's text: one event type, `build.finished`,
//! offered by poll and push. It answers `server/discover` (the extension
//! declared with `listChanged`), `events/list`, `events/poll` (one event,
//! cursor `builds-8`) and `events/stream` (`active`, the event, the final
//! result); anything else `-32601`. For the tests that check such a
//! server's events pass through the layer and the gateway.
#![allow(dead_code)]

use std::convert::Infallible;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

/// The inner server's answer to `message`: JSON, or SSE for a stream.
pub fn answer(message: &Value) -> http::Response<Full<Bytes>> {
    let id = &message["id"];
    let result = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let event = json!({
        "eventId": "build-7",
        "name": "build.finished",
        "timestamp": "2026-12-07T10:00:00Z",
        "data": {"build": 7, "ok": true},
    });
    let body = match message["method"].as_str().unwrap_or_default() {
        "server/discover" => result(json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/events": {"listChanged": true}}},
            "serverInfo": {"name": "builds", "version": "1"},
        })),
        "events/list" => result(json!({"resultType": "complete", "events": [{
            "name": "build.finished",
            "delivery": ["poll", "push"],
            "inputSchema": {"type": "object"},
            "payloadSchema": {"type": "object"},
        }]})),
        "events/poll" => result(json!({
            "resultType": "complete", "events": [event], "cursor": "builds-8",
            "truncated": false, "hasMore": false, "nextPollMs": 5000,
        })),
        "events/stream" => {
            let meta = json!({"io.modelcontextprotocol/subscriptionId": id});
            let mut pushed = event.clone();
            pushed["cursor"] = json!("builds-8");
            pushed["_meta"] = meta.clone();
            let frames = [
                json!({"jsonrpc": "2.0", "method": "notifications/events/active",
                       "params": {"cursor": "builds-7", "truncated": false, "_meta": meta}}),
                json!({"jsonrpc": "2.0", "method": "notifications/events/event", "params": pushed}),
                result(json!({"resultType": "complete", "_meta": meta})),
            ];
            let sse: String = frames
                .iter()
                .map(|frame| format!("data: {frame}\n\n"))
                .collect();
            return http::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Full::new(Bytes::from(sse)))
                .unwrap();
        }
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
        }
    };
    http::Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// The server as a tower service over any request body.
pub fn service<B>() -> impl tower::Service<
    http::Request<B>,
    Response = http::Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Send,
> + Clone
+ Send
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Debug,
{
    tower::service_fn(|request: http::Request<B>| async move {
        let bytes = request
            .into_body()
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok::<_, Infallible>(answer(&message))
    })
}
