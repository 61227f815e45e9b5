//! Driving the layer in process, without HTTP: 2026-07-28 requests, scripted
//! inner services, and reading answers.
#![allow(dead_code)]

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::ServiceExt;

/// The JSON-RPC message in `body`, or `null` when it is not JSON.
pub async fn read_message<B: Body>(body: B) -> Value {
    let bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// The answer of an inner server without tasks of its own to `message`
/// when it is the `server/discover` the layer asks once, before the first
/// declaring call (`own_tasks`); `None` for any other message.
pub fn discover_answer<B: From<String>>(message: &Value) -> Option<Response<B>> {
    (message["method"] == "server/discover").then(|| {
        json_response(
            &serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}}}),
        )
    })
}

/// A `200 application/json` response carrying `message`.
pub fn json_response<B: From<String>>(message: &Value) -> Response<B> {
    Response::builder()
        .header("content-type", "application/json")
        .body(B::from(message.to_string()))
        .expect("response")
}

/// A 2026-07-28 POST of `method` with id 1: the standard headers (`Mcp-Name`
/// when `name` is given) and `_meta` declaring `extensions`.
pub fn post(
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

/// The extensions object that declares the tasks extension.
pub fn tasks_declared() -> Value {
    json!({"io.modelcontextprotocol/tasks": {}})
}

/// Sends `request` through `service`; the HTTP status and the JSON answer.
pub async fn send<S, B>(service: &S, request: Request<Full<Bytes>>) -> (u16, Value)
where
    S: tower::Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: Body,
    B::Error: std::fmt::Debug,
{
    let (status, body) = send_raw(service, request).await;
    (status, serde_json::from_slice(&body).expect("json"))
}

/// Sends `request` through `service`; the HTTP status and the whole body.
pub async fn send_raw<S, B>(service: &S, request: Request<Full<Bytes>>) -> (u16, Bytes)
where
    S: tower::Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: Body,
    B::Error: std::fmt::Debug,
{
    let response = service.clone().oneshot(request).await.expect("call");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, body)
}
