//! End to end over loopback HTTP with a scripted inner service instead of the
//! fixture: whatever the inner server answers before the threshold reaches
//! the client byte for byte, and whatever breaks after parking fails the task
//! with `-32603` instead of leaving it `working`.

use crate::support;

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer};
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{Served, serve};
use support::layered::{CLIENT_TIMEOUT, ms, task_id};
use support::wait::BOUND;
use tower::ServiceBuilder;

/// How long the scripted "late" answers take; the layer's threshold is 150 ms.
const LATE: Duration = Duration::from_millis(350);

/// A JSON body with odd spacing, to prove it is relayed untouched.
fn odd_json(id: &Value) -> String {
    format!(
        "{{ \"jsonrpc\":\"2.0\",  \"id\": {id}, \"result\": {{\"content\":[{{\"type\":\"text\",\"text\":\"raw\"}}],\"resultType\":\"complete\"}} }}"
    )
}

fn response(status: u16, content_type: &str, body: impl Into<Body>) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(status).expect("status"))
        .header("content-type", content_type)
        .body(body.into())
        .expect("response")
}

/// The scripted inner server: behaves by `params.name` (or method).
async fn scripted(request: Request<RequestBody<Body>>) -> Result<Response<Body>, Infallible> {
    let sse_discover = request.headers().contains_key("x-test-sse");
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let id = message["id"].clone();
    if bytes.windows(10).any(|window| window == b"\"echo_raw\"") {
        // Read only the id: the rest may hold numbers `Value` cannot take.
        #[derive(serde::Deserialize)]
        struct Head {
            id: Value,
        }
        let id = serde_json::from_slice::<Head>(&bytes).map_or(Value::Null, |head| head.id);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": text}]}});
        return Ok(response(200, "application/json", answer.to_string()));
    }
    if message["method"] == "server/discover" {
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {"com.example/other": {"x": 1}}},
        }});
        return Ok(if sse_discover {
            response(200, "text/event-stream", format!("data: {answer}\n\n"))
        } else {
            response(200, "application/json", answer.to_string())
        });
    }
    if message["method"]
        .as_str()
        .is_some_and(|method| method.starts_with("tasks/"))
    {
        // An upstream with task methods of its own; the layer must not ask it.
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "complete", "tasks": [], "answeredBy": "inner"}});
        return Ok(response(200, "application/json", answer.to_string()));
    }
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": "t", "progress": 1}});
    Ok(
        match message["params"]["name"].as_str().unwrap_or_default() {
            "fast_json" => response(200, "application/json", odd_json(&id)),
            "fast_sse" => response(
                200,
                "text/event-stream",
                format!(
                    "data: {progress}\n\n: a comment\n\ndata: {}\n\n",
                    odd_json(&id)
                ),
            ),
            "fast_sse_odd" => response(200, "text/event-stream", odd_sse(&id, Duration::ZERO)),
            "late_sse_odd" => response(200, "text/event-stream", odd_sse(&id, LATE)),
            "fast_http_error" => response(503, "text/plain", "busy"),
            "late_panic" => {
                // Slow on purpose: this script answers after the threshold.
                tokio::time::sleep(LATE).await;
                panic!("scripted panic in the inner service");
            }
            "late_http_error" => {
                // Slow on purpose: this script answers after the threshold.
                tokio::time::sleep(LATE).await;
                response(502, "text/plain", "upstream down")
            }
            "late_html" => {
                // Slow on purpose: this script answers after the threshold.
                tokio::time::sleep(LATE).await;
                response(200, "text/html", "<h1>not MCP</h1>")
            }
            "late_wrong_id" => {
                // Slow on purpose: this script answers after the threshold.
                tokio::time::sleep(LATE).await;
                let other =
                    json!({"jsonrpc": "2.0", "id": "someone-else", "result": {"content": []}});
                response(200, "application/json", other.to_string())
            }
            "late_sse_without_answer" => {
                let events = futures_util::stream::once(async move {
                    // Slow on purpose: this script answers after the threshold.
                    tokio::time::sleep(LATE).await;
                    Ok::<_, Infallible>(Bytes::from(format!("data: {progress}\n\n")))
                });
                response(200, "text/event-stream", Body::from_stream(events))
            }
            other => response(400, "text/plain", format!("no script for {other:?}")),
        },
    )
}

/// The lines of an SSE answer that the SSE standard reads without fault
/// and the `sse-stream` crate refused (an unknown field, a line without a
/// colon, two `event:` and two `id:` lines, a `retry:` that is not a
/// number), before and inside the event that carries the response.
fn odd_sse_text(id: &Value) -> String {
    format!(
        "x-vendor: 1\nid: a\nid: b\n\nevent: message\nevent: message\nretry: soon\ndata\n\n\
         data: {}\nheartbeat\n\n",
        odd_json(id)
    )
}

/// [`odd_sse_text`] in frames of 7 bytes, the first after `delay`.
fn odd_sse(id: &Value, delay: Duration) -> Body {
    let text = Bytes::from(odd_sse_text(id));
    let frames: Vec<Bytes> = (0..text.len())
        .step_by(7)
        .map(|at| text.slice(at..(at + 7).min(text.len())))
        .collect();
    let frames = futures_util::stream::iter(frames).then(move |frame| async move {
        // Slow on purpose: the late script answers after the threshold.
        tokio::time::sleep(delay).await;
        Ok::<_, Infallible>(frame)
    });
    Body::from_stream(frames)
}

async fn start() -> Served {
    let layer = TasksLayer::new(MemoryTaskStore::new()).threshold(ms(150));
    let inner = tower::service_fn(scripted);
    serve(ServiceBuilder::new().layer(layer).service(inner)).await
}

fn client(served: &Served) -> McpClient {
    McpClient::new(&served.url).with_timeout(CLIENT_TIMEOUT)
}

#[tokio::test]
async fn answers_before_the_threshold_reach_the_client_byte_for_byte() {
    let served = start().await;
    let client = client(&served);

    let json = client
        .call_tool_with("fast_json", json!({}), json!({}), true)
        .await;
    assert_eq!(json.status, 200);
    assert_eq!(json.content_type(), "application/json");
    assert_eq!(json.body, odd_json(&json!(json.id)));

    let sse = client
        .call_tool_with("fast_sse", json!({}), json!({}), true)
        .await;
    assert_eq!(sse.content_type(), "text/event-stream");
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": "t", "progress": 1}});
    let expected = format!(
        "data: {progress}\n\n: a comment\n\ndata: {}\n\n",
        odd_json(&json!(sse.id))
    );
    assert_eq!(sse.body, expected);

    // Lines the SSE standard reads (and the sse-stream crate refused),
    // in frames cut mid-line: every byte still reaches the client.
    let odd = client
        .call_tool_with("fast_sse_odd", json!({}), json!({}), true)
        .await;
    assert_eq!(odd.content_type(), "text/event-stream");
    assert_eq!(odd.body, odd_sse_text(&json!(odd.id)));

    let error = client
        .call_tool_with("fast_http_error", json!({}), json!({}), true)
        .await;
    assert_eq!(error.status, 503);
    assert_eq!(error.content_type(), "text/plain");
    assert_eq!(error.body, "busy");
}

#[tokio::test]
async fn a_parked_call_that_breaks_fails_the_task_with_an_internal_error() {
    let served = start().await;
    let client = client(&served);

    // The panic comes last: printing its backtrace (RUST_BACKTRACE=1) can
    // stall this single-threaded runtime for longer than the threshold, and
    // no call may be racing it then.
    let cases = [
        ("late_http_error", "HTTP 502"),
        ("late_html", "content type"),
        ("late_wrong_id", "not the response to this call"),
        ("late_sse_without_answer", "ended without a response"),
        ("late_panic", "panicked"),
    ];
    let mut parked = Vec::new();
    for (tool, reason) in cases {
        let created = client.call_tool(tool, json!({}), true).await;
        parked.push((tool, reason, task_id(&created)));
    }
    for (tool, reason, task) in parked {
        let done = client
            .wait_task_status(&task, &["completed", "failed", "cancelled"], BOUND)
            .await;
        let result = &done["result"];
        assert_eq!(result["status"], "failed", "{tool}: {done}");
        assert_eq!(result["error"]["code"], -32603, "{tool}: {done}");
        let message = result["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{tool}: {done}");
        assert_eq!(result["statusMessage"], message, "{tool}: {done}");
        assert!(result.get("result").is_none(), "{tool}: {done}");
    }

    // The layer is still serving after all of that.
    let fine = client.call_tool("fast_json", json!({}), true).await;
    assert_eq!(fine["result"]["content"][0]["text"], "raw");
}

#[tokio::test]
async fn a_parked_call_whose_stream_has_lines_the_standard_reads_completes() {
    let served = start().await;
    let client = client(&served);
    let created = client.call_tool("late_sse_odd", json!({}), true).await;
    let task = task_id(&created);
    let done = client
        .wait_task_status(&task, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let got = client.tasks_get(&task).await;
    assert_eq!(
        got["result"]["result"]["content"][0]["text"], "raw",
        "{got}"
    );
}

#[tokio::test]
async fn discover_gains_the_tasks_extension_over_json_and_sse_and_keeps_other_extensions() {
    let served = start().await;
    let client = client(&served);

    for sse in [false, true] {
        let mut headers = McpClient::standard_headers("server/discover", None);
        if sse {
            headers.push(("x-test-sse".to_owned(), "1".to_owned()));
        }
        let id = client.next_id();
        let body = client.build_request(id, "server/discover", json!({}), false);
        let exchange = client.exchange(id, &headers, body.to_string()).await;
        assert_eq!(exchange.is_sse(), sse, "{}", exchange.body);
        let discovered = exchange.into_response();
        let extensions = &discovered["result"]["capabilities"]["extensions"];
        assert_eq!(
            *extensions,
            json!({"com.example/other": {"x": 1}, "io.modelcontextprotocol/tasks": {}}),
            "{discovered}"
        );
        assert_eq!(discovered["result"]["capabilities"]["tools"], json!({}));
        assert_eq!(
            discovered["result"]["supportedVersions"],
            json!(["2026-07-28"])
        );
    }
}

#[tokio::test]
async fn the_layer_answers_every_task_method_itself_even_when_the_inner_server_has_them() {
    let served = start().await;
    let client = client(&served);
    let unknown = "0123456789abcdef0123456789abcdef";

    for declare in [true, false] {
        // `tasks/other`: no method of the extension, yet in its namespace
        // (found by fuzz/'s request target reaching the inner server).
        for method in ["tasks/list", "tasks/result", "tasks/other"] {
            let exchange = client
                .request(method, json!({"taskId": unknown}), declare)
                .await;
            assert_eq!(exchange.status, 404, "{method}: {}", exchange.body);
            let response = exchange.into_response();
            assert_eq!(response["error"]["code"], -32601, "{method}: {response}");
        }
    }
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let params = json!({"taskId": unknown, "inputResponses": {}});
        let declaring = client.request(method, params.clone(), true).await;
        assert!(!declaring.body.contains("answeredBy"), "{}", declaring.body);
        assert_eq!(declaring.into_response()["error"]["code"], -32602);
        let other = client.request(method, params, false).await;
        assert_eq!(other.status, 400, "{}", other.body);
        assert_eq!(other.into_response()["error"]["code"], -32021);
    }
}

/// The one edit the layer makes to a declaring client's `tools/call` is
/// removing the tasks extension: every other value reaches the inner server
/// as the client wrote it.
#[tokio::test]
async fn stripping_the_tasks_extension_changes_nothing_else_in_the_call() {
    let served = start().await;
    let client = client(&served);

    for number in ["123456789012345678901234567890", "1e400"] {
        let id = client.next_id();
        let body = client
            .build_request(
                id,
                "tools/call",
                json!({"name": "echo_raw", "arguments": {"n": "NUMBER"}}),
                true,
            )
            .to_string()
            .replace("\"NUMBER\"", number);
        let headers = McpClient::standard_headers("tools/call", Some("echo_raw"));
        let response = client.exchange(id, &headers, body).await.into_response();
        let seen = response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{response}"));
        assert!(
            !seen.contains("io.modelcontextprotocol/tasks"),
            "{number}: the inner server saw the tasks extension: {seen}"
        );
        assert!(
            seen.contains(&format!("\"n\":{number}")),
            "{number}: the argument changed on the way: {seen}"
        );
    }
}
