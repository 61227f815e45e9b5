//! End to end over loopback HTTP: malformed requests get a JSON-RPC error and
//! an HTTP status, never a panic or a hang, and the server keeps serving.
//!
//! Every exchange runs under the client timeout of `support::layered`, so a
//! hang fails the test instead of stalling the suite.

use crate::support;

use std::time::Duration;

use mcp_tasks::ToolPolicy;
use serde_json::{Value, json};
use support::client::McpClient;
use support::layered::{Layered, error_of, ms, task_id, text};

/// POSTs `body` with the standard headers of `method`; returns the status and
/// the parsed JSON body.
async fn post_raw(
    client: &McpClient,
    method: &str,
    mcp_name: Option<&str>,
    body: impl Into<String>,
) -> (u16, Value) {
    let headers = McpClient::standard_headers(method, mcp_name);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let (status, received, text) = client.raw_post(&headers, body).await;
    let kind = received
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    assert_eq!(kind, "application/json", "HTTP {status}: {text}");
    let json = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
    (status.as_u16(), json)
}

async fn assert_still_serving(client: &McpClient) {
    let greet = client
        .call_tool("greet", json!({"name": "ok"}), false)
        .await;
    assert_eq!(text(&greet["result"]), "Hello, ok!");
}

#[tokio::test]
async fn malformed_bodies_get_json_rpc_errors_and_the_server_keeps_serving() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();
    let meta = client.meta(true);
    let without_capabilities = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});

    let cases: Vec<(&str, &str, String, u16, i64)> = vec![
        (
            "invalid JSON",
            "tools/call",
            "{not json".into(),
            400,
            -32700,
        ),
        ("an empty body", "tools/call", String::new(), 400, -32700),
        (
            "truncated JSON",
            "tools/call",
            r#"{"jsonrpc":"2.0","id":1,"#.into(),
            400,
            -32700,
        ),
        (
            "a batch",
            "tools/call",
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "greet", "arguments": {"name": "b"}, "_meta": meta}}])
            .to_string(),
            400,
            -32600,
        ),
        ("a number", "tools/call", "42".into(), 400, -32600),
        ("null", "tools/call", "null".into(), 400, -32600),
        (
            "a string",
            "tools/call",
            r#""tools/call""#.into(),
            400,
            -32600,
        ),
        (
            "params that are not an object",
            "tools/call",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 5}).to_string(),
            400,
            -32602,
        ),
        (
            "a task method without _meta",
            "tasks/get",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                   "params": {"taskId": "0123456789abcdef0123456789abcdef"}})
            .to_string(),
            400,
            -32602,
        ),
        (
            "a task method whose _meta lacks clientCapabilities",
            "tasks/get",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                   "params": {"taskId": "0123456789abcdef0123456789abcdef",
                              "_meta": without_capabilities}})
            .to_string(),
            400,
            -32602,
        ),
    ];
    for (what, method, body, status, code) in cases {
        let name = (method == "tasks/get").then_some("0123456789abcdef0123456789abcdef");
        let (got, response) = post_raw(&client, method, name, body).await;
        assert_eq!(got, status, "{what}: {response}");
        assert_eq!(response["error"]["code"], code, "{what}: {response}");
        assert_eq!(response["jsonrpc"], "2.0", "{what}: {response}");
        if what == "a batch" {
            let message = response["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("Batch"), "{response}");
        }
    }
    assert_eq!(layered.probe.started("greet"), 0);
    assert_still_serving(&client).await;
}

/// `Mcp-Name` is optional on task methods by default (the client sends none
/// for a `taskId` that is not a string), so nothing but the type of `taskId`
/// is wrong.
#[tokio::test]
async fn a_task_id_that_is_not_a_string_answers_400_invalid_params() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();

    for params in [
        json!({"taskId": 42}),
        json!({"taskId": null}),
        json!({"taskId": ["a"]}),
        json!({}),
    ] {
        for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
            let exchange = client.request(method, params.clone(), true).await;
            assert_eq!(exchange.status, 400, "{method} {params}: {}", exchange.body);
            error_of(&exchange.into_response(), -32602);
        }
    }
    assert_still_serving(&client).await;
}

#[tokio::test]
async fn tasks_update_without_input_responses_answers_400_invalid_params() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(200))
            .tool_policy("greet", ToolPolicy::Always)
    })
    .await;
    let client = layered.client();
    let id = task_id(&client.call_tool("greet", json!({"name": "u"}), true).await);

    for params in [
        json!({"taskId": id}),
        json!({"taskId": id, "inputResponses": [1, 2]}),
        json!({"taskId": id, "inputResponses": "yes"}),
    ] {
        let exchange = client.request("tasks/update", params.clone(), true).await;
        assert_eq!(exchange.status, 400, "{params}: {}", exchange.body);
        error_of(&exchange.into_response(), -32602);
    }
    assert_still_serving(&client).await;
}

#[tokio::test]
async fn a_body_over_the_limit_answers_413_and_one_under_it_is_served() {
    let layered = Layered::start(|layer| layer.max_body_bytes(1024)).await;
    let client = layered.client();

    let request = |name: String| {
        client
            .build_request(
                1,
                "tools/call",
                json!({"name": "greet", "arguments": {"name": name}}),
                true,
            )
            .to_string()
    };
    let small = request("s".repeat(200));
    assert!(small.len() < 1024);
    let headers = McpClient::standard_headers("tools/call", Some("greet"));
    let response = client.exchange(1, &headers, small).await.into_response();
    assert_eq!(
        text(&response["result"]),
        format!("Hello, {}!", "s".repeat(200))
    );

    let large = request("l".repeat(2000));
    let (status, response) = post_raw(&client, "tools/call", Some("greet"), large).await;
    assert_eq!(status, 413, "{response}");
    assert_eq!(response["error"]["code"], -32600, "{response}");
    assert_eq!(
        layered.probe.started("greet"),
        1,
        "the large call reached the tool"
    );
    assert_still_serving(&client).await;
}

#[tokio::test]
async fn a_body_that_announces_more_than_the_limit_is_refused_before_it_is_sent() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let layered = Layered::start(|layer| layer.max_body_bytes(1024)).await;
    let address = layered
        .served
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    // A method the layer reads, and one it passes on unread.
    for (method, name) in [("tools/call", "greet"), ("prompts/get", "greeting")] {
        let mut socket = tokio::net::TcpStream::connect(&address)
            .await
            .expect("connected");
        // Only the head: the 99 GB it announces never come.
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\nMcp-Name: {name}\r\nContent-Length: 99999999999\r\n\r\n"
        );
        socket.write_all(head.as_bytes()).await.expect("sent");
        let mut answer = vec![0; 4096];
        // Well before any body read timeout of the server.
        let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut answer))
            .await
            .expect("answered without waiting for the body")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(answer.starts_with("HTTP/1.1 413"), "{method}: {answer}");
    }
    assert_eq!(layered.probe.started("greet"), 0);
}

#[tokio::test]
async fn a_notification_is_forwarded_to_the_inner_server_and_accepted() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();

    let headers = McpClient::standard_headers("notifications/cancelled", None);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 9}});
    let (status, _, body) = client.raw_post(&headers, notification.to_string()).await;
    assert_eq!(status.as_u16(), 202, "HTTP {status}: {body}");
    assert_still_serving(&client).await;
}

/// A `tools/call` or task method without an id is no notification: it is
/// refused, and what only the layer may see (here the related task ids,
/// bearer secrets) never reaches the inner server. Found by `fuzz/`'s
/// request target, which saw such a call forwarded whole.
#[tokio::test]
async fn a_tools_call_or_task_method_without_an_id_is_refused_and_reaches_no_one() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();
    let mut meta = client.meta(true);
    meta["io.modelcontextprotocol/relatedTaskIds"] = json!(["0123456789abcdef0123456789abcdef"]);
    let call = json!({"jsonrpc": "2.0", "method": "tools/call",
                      "params": {"name": "greet", "arguments": {"name": "x"}, "_meta": meta}});
    let get = json!({"jsonrpc": "2.0", "method": "tasks/get",
                     "params": {"taskId": "0123456789abcdef0123456789abcdef", "_meta": meta}});
    // A `_meta` the one-pass parse refuses (a version that is no string)
    // takes the other way through the classification, to the same end.
    let mut odd = call.clone();
    odd["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(5);
    for (method, name, body) in [
        ("tools/call", "greet", call),
        ("tasks/get", "0123456789abcdef0123456789abcdef", get),
        ("tools/call", "greet", odd),
    ] {
        let (status, response) = post_raw(&client, method, Some(name), body.to_string()).await;
        assert_eq!(status, 400, "{method}: {response}");
        assert_eq!(response["error"]["code"], -32600, "{method}: {response}");
        assert_eq!(response["id"], Value::Null, "{method}: {response}");
    }
    assert_eq!(layered.probe.started("greet"), 0, "no call ran");
    assert_still_serving(&client).await;
}

/// With `Mcp-Name` required, the header check comes first (the classification
/// order): a header can never match a `taskId` that is not a string.
#[tokio::test]
async fn a_task_id_that_is_not_a_string_fails_the_header_check_when_mcp_name_is_required() {
    let layered = Layered::start(|layer| layer.require_task_name_header(true)).await;
    let client = layered.client();

    for name in [Some("42"), None] {
        let body = client.build_request(5, "tasks/get", json!({"taskId": 42}), true);
        let (status, response) = post_raw(&client, "tasks/get", name, body.to_string()).await;
        assert_eq!(status, 400, "{response}");
        assert_eq!(response["error"]["code"], -32020, "{response}");
    }
    assert_still_serving(&client).await;
}

#[tokio::test]
async fn a_body_over_a_limit_set_further_out_answers_413_too() {
    use http_body_util::{BodyExt, Full, Limited};
    use tower::{Layer, ServiceExt};

    // Another layer (tower-http's RequestBodyLimitLayer, say) limits the
    // body to 64 bytes before it reaches TasksLayer, whose limit is larger.
    let called = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let inner = tower::service_fn({
        let called = called.clone();
        move |_: http::Request<_>| {
            called.store(true, std::sync::atomic::Ordering::SeqCst);
            async {
                Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                    bytes::Bytes::new(),
                )))
            }
        }
    });
    let layered = mcp_tasks::TasksLayer::new(mcp_tasks::MemoryTaskStore::new()).layer(inner);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "x".repeat(200)}}});
    let request = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Limited::new(
            Full::new(bytes::Bytes::from(body.to_string())),
            64,
        ))
        .unwrap();
    let response = layered.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 413);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let reply: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(
        !called.load(std::sync::atomic::Ordering::SeqCst),
        "the inner service was called"
    );
}

/// The id of a request the layer answers comes back exactly as written,
/// whatever its spelling: escapes, a number beyond `u64`.
#[tokio::test]
async fn the_layer_echoes_an_id_exactly_as_written() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();
    let task = "0123456789abcdef0123456789abcdef";
    let params = json!({"taskId": task, "_meta": client.meta(true)});
    for id in [
        r#""a\"b\u00e9""#,
        "123456789012345678901234567890",
        "-1.5e3",
    ] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tasks/get","params":{params}}}"#);
        let headers = McpClient::standard_headers("tasks/get", Some(task));
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let (status, _, text) = client.raw_post(&headers, body).await;
        assert_eq!(status.as_u16(), 200, "{text}");
        let echoed = format!(r#""id":{id},"#);
        assert!(text.contains(&echoed), "{id} not echoed: {text}");
        assert!(text.contains("-32602"), "{text}");
    }
    assert_still_serving(&client).await;
}

/// An id JSON-RPC forbids (MCP: a string or a number) gets `-32600` with
/// `"id": null`: it is neither taken for a notification (`null`) nor
/// echoed back, and the call runs nothing, parked or not.
#[tokio::test]
async fn a_request_whose_id_json_rpc_forbids_gets_invalid_request_and_runs_nothing() {
    let layered = Layered::start(|layer| layer.tool_policy("greet", ToolPolicy::Always)).await;
    let client = layered.client();
    let params = json!({"name": "greet", "arguments": {"name": "x"}, "_meta": client.meta(true)});
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    for id in [
        "null",
        "{}",
        r#"{"a":1}"#,
        "[1]",
        deep.as_str(),
        "true",
        "false",
    ] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
        let (status, response) = post_raw(&client, "tools/call", Some("greet"), body).await;
        assert_eq!(status, 400, "id {id}: {response}");
        assert_eq!(response["error"]["code"], -32600, "id {id}: {response}");
        assert_eq!(response["id"], Value::Null, "id {id}: {response}");
    }
    assert_eq!(layered.probe.started("greet"), 0, "no call ran");
    assert_still_serving(&client).await;
}
