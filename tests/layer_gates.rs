//! Requests the layer gates on the tasks extension besides the task methods,
//! and what counts as declaring it.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer, ToolPolicy};
use serde_json::{Value, json};
use tower::{Layer, ServiceExt};

/// Answers every request with an empty result (the request reached it).
async fn inner(
    request: Request<RequestBody<Full<Bytes>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete", "reached": "inner"}});
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(answer.to_string())))
        .expect("response"))
}

fn post(
    method: &str,
    params: Value,
    name: Option<&str>,
    extensions: Value,
) -> Request<Full<Bytes>> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request")
}

async fn send(request: Request<Full<Bytes>>) -> (u16, Value) {
    let layer = TasksLayer::new(MemoryTaskStore::new()).tool_policy("job", ToolPolicy::Required);
    let response = layer
        .layer(tower::service_fn(inner))
        .oneshot(request)
        .await
        .expect("call");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, serde_json::from_slice(&body).expect("json"))
}

#[tokio::test]
async fn a_listen_for_task_notifications_from_a_non_declaring_client_answers_400_missing_capability()
 {
    let listen = json!({"notifications": {"taskIds": ["abc"]}});
    let (status, body) = send(post(
        "subscriptions/listen",
        listen.clone(),
        None,
        json!({}),
    ))
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], -32021);

    let tasks = json!({"io.modelcontextprotocol/tasks": {}});
    let (status, body) = send(post("subscriptions/listen", listen, None, tasks)).await;
    assert_eq!(
        (status, &body["result"]["reached"]),
        (200, &json!("inner")),
        "{body}"
    );

    let plain = json!({"notifications": {"toolsListChanged": true}});
    let (status, body) = send(post("subscriptions/listen", plain, None, json!({}))).await;
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
            send(post("tools/call", call.clone(), Some("job"), not_declared)).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!(-32021)),
            "{body}"
        );
    }
    let declared = json!({"io.modelcontextprotocol/tasks": {}});
    let (status, body) = send(post("tools/call", call, Some("job"), declared)).await;
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
    let response = service.clone().oneshot(form).await.expect("call");
    assert_eq!(response.status(), 200);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
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
