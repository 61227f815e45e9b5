//! An inner server with events of its own keeps them through the layer:
//! its `events/list` merged with the layer's type, its polls and streams
//! untouched. The inner server is written here from the extension's text
//! (one event type, `build.finished`, offered by poll and push).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_tasks::{EventsConfig, TasksLayer};
use serde_json::{Value, json};
use tower::ServiceBuilder;

use super::NAME;
use super::support::client::McpClient;
use super::support::fixture::serve;
use super::support::listen::next;
use super::support::wait::BOUND;

/// The inner server's answer to `message`: JSON, or SSE for a stream.
fn answer(message: &Value) -> http::Response<Full<Bytes>> {
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

#[tokio::test]
async fn an_inner_servers_own_events_pass_through_beside_the_layers() {
    let inner = tower::service_fn(
        |request: http::Request<mcp_tasks::RequestBody<axum::body::Body>>| async move {
            let bytes = request.into_body().collect().await.unwrap().to_bytes();
            let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Ok::<_, Infallible>(answer(&message))
        },
    );
    let layer = TasksLayer::new(mcp_tasks::MemoryTaskStore::new()).events(EventsConfig::new());
    let served = serve(ServiceBuilder::new().layer(layer).service(inner)).await;
    let client = McpClient::new(&served.url).with_timeout(BOUND);

    let listed = client
        .request("events/list", json!({}), false)
        .await
        .into_response();
    let names: Vec<&str> = listed["result"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["build.finished", NAME], "{listed}");

    let discovered = client.discover().await;
    let extension =
        &discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/events"];
    assert_eq!(
        *extension,
        json!({"listChanged": true}),
        "the inner server's own settings stay"
    );

    let polled = client
        .request(
            "events/poll",
            json!({"name": "build.finished", "arguments": {}, "cursor": null}),
            false,
        )
        .await
        .into_response();
    assert_eq!(polled["result"]["cursor"], "builds-8", "{polled}");
    assert_eq!(
        polled["result"]["events"][0]["data"],
        json!({"build": 7, "ok": true})
    );

    let id = client.next_id();
    let body = client.build_request(
        id,
        "events/stream",
        json!({"name": "build.finished", "arguments": {}, "cursor": null}),
        false,
    );
    let headers = McpClient::standard_headers("events/stream", Some("build.finished"));
    let mut stream = client.open_post(id, &headers, body.to_string()).await;
    assert_eq!(
        next(&mut stream).await["method"],
        "notifications/events/active"
    );
    let event = next(&mut stream).await;
    assert_eq!(event["params"]["eventId"], "build-7", "{event}");
    assert_eq!(next(&mut stream).await["id"], id);
}
