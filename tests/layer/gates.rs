//! Requests the layer gates on the tasks extension besides the task methods,
//! and what counts as declaring it.

use crate::support;

use std::convert::Infallible;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer, ToolPolicy};
use serde_json::{Value, json};
use support::in_process::{json_response, post, read_message, send, send_raw};
use tower::{Layer, ServiceExt};

/// Answers every request with an empty result (the request reached it).
async fn inner(
    request: Request<RequestBody<Full<Bytes>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let message = read_message(request.into_body()).await;
    let result = json!({"resultType": "complete", "reached": "inner"});
    Ok(json_response(
        &json!({"jsonrpc": "2.0", "id": message["id"], "result": result}),
    ))
}

/// Sends `request` through a layer where `job` requires tasks.
async fn through_layer(request: Request<Full<Bytes>>) -> (u16, Value) {
    let layer = TasksLayer::new(MemoryTaskStore::new()).tool_policy("job", ToolPolicy::Required);
    send(&layer.layer(tower::service_fn(inner)), request).await
}

#[tokio::test]
async fn a_listen_for_task_notifications_from_a_non_declaring_client_answers_400_missing_capability()
 {
    let listen = json!({"notifications": {"taskIds": ["abc"]}});
    let (status, body) = through_layer(post(
        "subscriptions/listen",
        listen.clone(),
        None,
        json!({}),
    ))
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], -32021);

    // Declared: the layer serves the task part itself (tests/push/listen.rs);
    // an unknown id is not acknowledged and the stream ends at once.
    let tasks = json!({"io.modelcontextprotocol/tasks": {}});
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let service = layer.layer(tower::service_fn(inner));
    let (status, body) =
        send_raw(&service, post("subscriptions/listen", listen, None, tasks)).await;
    assert_eq!(status, 200);
    let text = String::from_utf8_lossy(&body);
    assert!(
        !text.contains("\"reached\""),
        "the inner server was not asked: {text}"
    );
    assert!(
        text.contains(r#""notifications":{"taskIds":[]}"#),
        "an acknowledgement naming no task: {text}"
    );

    let plain = json!({"notifications": {"toolsListChanged": true}});
    let (status, body) = through_layer(post("subscriptions/listen", plain, None, json!({}))).await;
    assert_eq!(
        (status, &body["result"]["reached"]),
        (200, &json!("inner")),
        "{body}"
    );
}

#[tokio::test]
async fn the_extension_is_declared_by_an_object_not_by_null_or_false() {
    let call = json!({"name": "job", "arguments": {}});
    for not_declared in [
        json!({"io.modelcontextprotocol/tasks": null}),
        json!({"io.modelcontextprotocol/tasks": false}),
    ] {
        let (status, body) =
            through_layer(post("tools/call", call.clone(), Some("job"), not_declared)).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!(-32021)),
            "{body}"
        );
    }
    let declared = json!({"io.modelcontextprotocol/tasks": {}});
    let (status, body) = through_layer(post("tools/call", call, Some("job"), declared)).await;
    assert_eq!(
        (status, &body["result"]["reached"]),
        (200, &json!("inner")),
        "{body}"
    );
}

#[tokio::test]
async fn bodies_that_are_not_json_rpc_on_other_routes_reach_the_inner_service() {
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let service = layer.layer(tower::service_fn(
        |request: Request<RequestBody<Full<Bytes>>>| async move {
            let body = request
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            Ok::<_, Infallible>(Response::new(Full::new(body)))
        },
    ));
    let form = Request::post("/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Full::new(Bytes::from_static(
            b"grant_type=client_credentials",
        )))
        .expect("request");
    let (status, body) = send_raw(&service, form).await;
    assert_eq!(status, 200);
    assert_eq!(&body[..], b"grant_type=client_credentials");

    // A batch without the 2026-07-28 header belongs to an older protocol.
    let batch = Request::post("/mcp")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
        )))
        .expect("request");
    let response = service.oneshot(batch).await.expect("call");
    assert_eq!(response.status(), 200, "forwarded, not rejected");
}
