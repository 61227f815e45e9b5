//! Proves the fixture server and the test clients work, without any layer.

use crate::support;

use std::time::Duration;

use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use support::wait::BOUND;
use support::{
    client::{McpClient, RmcpClient},
    fixture::{FixtureMode, FixtureOptions, Probe, serve, serve_fixture, service_with},
};

/// Text of the first content block of a `tools/call` response.
fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {response}"))
}

#[tokio::test]
async fn discover_advertises_no_tasks() {
    let (served, _probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url);

    let discover = client.discover().await;
    let result = &discover["result"];
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert!(result["capabilities"]["tools"].is_object(), "{discover}");
    assert!(result["capabilities"].get("tasks").is_none(), "{discover}");
    assert!(
        result["capabilities"].get("extensions").is_none(),
        "{discover}"
    );

    // The bare fixture does not implement the task methods.
    let get = client.tasks_get("no-such-task").await;
    assert_eq!(get["error"]["code"], -32601, "{get}");
}

#[tokio::test]
async fn greet_answers_at_once() {
    let (served, probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url);

    let exchange = client
        .call_tool_with("greet", json!({"name": "x"}), json!({}), true)
        .await;
    assert!(exchange.is_sse(), "default responses are SSE");
    let response = exchange.into_response();
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(text(&response), "Hello, x!");
    assert_eq!(probe.finished("greet"), 1);
    assert_eq!(probe.last_arguments("greet"), Some(json!({"name": "x"})));
}

#[tokio::test]
async fn slow_compute_streams_progress_before_the_result() {
    let (served, probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url);

    let exchange = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 0.3, "label": "job"}),
            json!({"_meta": {"progressToken": "p-1"}}),
            false,
        )
        .await;
    assert!(exchange.is_sse());
    let progress = exchange.progress();
    assert!(!progress.is_empty(), "no progress in {}", exchange.body);
    assert_eq!(progress[0]["params"]["progressToken"], "p-1");
    assert_eq!(progress[0]["params"]["message"], "job: started");
    // The result is the last message, after every notification.
    let last = exchange.messages.last().expect("messages");
    assert_eq!(last["id"], exchange.id);
    assert_eq!(text(last), "job done after 0.3s");
    assert_eq!(probe.finished("slow_compute"), 1);

    // Without a progress token there are no notifications at all.
    let quiet = client
        .call_tool_with("slow_compute", json!({"seconds": 0}), json!({}), false)
        .await;
    assert!(quiet.progress().is_empty());
    assert_eq!(text(&quiet.into_response()), "slow_compute done after 0s");
}

#[tokio::test]
async fn confirm_delete_completes_after_the_retry() {
    let (served, probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url).with_capabilities(json!({"elicitation": {}}));
    let arguments = json!({"filename": "notes.txt"});

    let first = client
        .call_tool("confirm_delete", arguments.clone(), true)
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = result["requestState"].clone();
    assert!(state.is_string());

    let retry = json!({
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}},
        "requestState": state,
    });
    let done = client
        .call_tool_with("confirm_delete", arguments.clone(), retry, true)
        .await
        .into_response();
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(text(&done).starts_with("Deleted notes.txt"), "{done}");
    assert!(text(&done).contains("accept"), "{done}");
    assert_eq!(probe.finished("confirm_delete"), 2);

    // A tampered requestState is a JSON-RPC error, not a result.
    let forged = json!({
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}},
        "requestState": "rs1.forged",
    });
    let rejected = client
        .call_tool_with("confirm_delete", arguments, forged, true)
        .await
        .into_response();
    assert_eq!(rejected["error"]["code"], -32602, "{rejected}");
}

#[tokio::test]
async fn other_mrtr_tools_follow_their_script() {
    let (served, _probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url);
    let accept = |content: Value| json!({"action": "accept", "content": content});

    // multi_input: answering one key leaves only the other one outstanding.
    let first = client.call_tool("multi_input", json!({}), false).await;
    let requests = first["result"]["inputRequests"]
        .as_object()
        .expect("requests");
    assert_eq!(requests.len(), 2, "{first}");
    let partial = client
        .call_tool_with(
            "multi_input",
            json!({}),
            json!({
                "inputResponses": {"first": accept(json!({"value": "a"}))},
                "requestState": first["result"]["requestState"],
            }),
            false,
        )
        .await
        .into_response();
    let pending: Vec<&String> = partial["result"]["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .collect();
    assert_eq!(pending, ["second"], "{partial}");
    let done = client
        .call_tool_with(
            "multi_input",
            json!({}),
            json!({
                "inputResponses": {"second": accept(json!({"value": "b"}))},
                "requestState": partial["result"]["requestState"],
            }),
            false,
        )
        .await
        .into_response();
    assert!(text(&done).contains(r#""value":"a""#), "{done}");
    assert!(text(&done).contains(r#""value":"b""#), "{done}");

    // two_rounds: the same key is asked twice.
    let mut response = client.call_tool("two_rounds", json!({}), false).await;
    for answer in ["one", "two"] {
        assert_eq!(response["result"]["resultType"], "input_required");
        response = client
            .call_tool_with(
                "two_rounds",
                json!({}),
                json!({
                    "inputResponses": {"answer": accept(json!({"answer": answer}))},
                    "requestState": response["result"]["requestState"],
                }),
                false,
            )
            .await
            .into_response();
    }
    assert!(text(&response).contains("one") && text(&response).contains("two"));

    // shed_once: a state-only round, then a plain result.
    let shed = client.call_tool("shed_once", json!({}), false).await;
    assert_eq!(shed["result"]["resultType"], "input_required");
    assert!(shed["result"].get("inputRequests").is_none(), "{shed}");
    let done = client
        .call_tool_with(
            "shed_once",
            json!({}),
            json!({"requestState": shed["result"]["requestState"]}),
            false,
        )
        .await
        .into_response();
    assert_eq!(done["result"]["resultType"], "complete", "{done}");

    // test_tool_with_task: asks a name, then works ~1.5 s.
    let ask = client
        .call_tool("test_tool_with_task", json!({}), true)
        .await;
    let done = client
        .call_tool_with(
            "test_tool_with_task",
            json!({}),
            json!({
                "inputResponses": {"name": accept(json!({"name": "Alice"}))},
                "requestState": ask["result"]["requestState"],
            }),
            true,
        )
        .await
        .into_response();
    assert!(text(&done).contains("Alice"), "{done}");
}

#[tokio::test]
async fn errors_and_echoes() {
    let (served, _probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url);

    let failing = client
        .call_tool("failing_job", json!({"seconds": 0.1}), false)
        .await;
    assert_eq!(failing["result"]["isError"], true, "{failing}");

    let protocol = client
        .call_tool("protocol_error_job", json!({}), false)
        .await;
    assert_eq!(protocol["error"]["code"], -32603, "{protocol}");
    assert!(protocol.get("result").is_none());

    let echoed = client.call_tool("echo_meta", json!({}), true).await;
    let meta: Value = serde_json::from_str(text(&echoed)).expect("meta JSON");
    assert_eq!(meta, client.meta(true));

    let headers = client.call_tool("echo_headers", json!({}), false).await;
    let headers: Value = serde_json::from_str(text(&headers)).expect("headers JSON");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "echo_headers");
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");

    // A mismatched Mcp-Name is refused by rmcp before the handler runs.
    let body = client.build_request(
        99,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "x"}}),
        false,
    );
    let (status, _, text) = client
        .raw_post(
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "not-greet"),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("-32020"), "{text}");
}

#[tokio::test]
async fn dropping_a_call_cancels_the_handler() {
    let (served, probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = McpClient::new(&served.url);

    // With a progress token the SSE head arrives at once; drop it mid-stream.
    let mut call = client
        .open_call("slow_compute", json!({"seconds": 30}), Some("p"), false)
        .await;
    let progress = call.next_message().await.expect("first progress");
    assert_eq!(progress["method"], "notifications/progress");
    drop(call);
    assert!(
        probe.wait_cancelled("slow_compute", BOUND).await,
        "handler not cancelled after the SSE stream was dropped"
    );

    // Without one, rmcp holds the head back until the result, so the client is
    // still waiting for headers when it gives up.
    let pending = client.call_tool("slow_compute", json!({"seconds": 30}), false);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), pending)
            .await
            .is_err()
    );
    assert!(
        probe
            .wait_until(BOUND, |probe| probe.cancelled("slow_compute") == 2)
            .await,
        "handler not cancelled after the pending request was dropped"
    );
    assert_eq!(probe.finished("slow_compute"), 0);
    assert_eq!(probe.running("slow_compute"), 0);
}

#[tokio::test]
async fn json_response_option() {
    let probe = Probe::new();
    let options = FixtureOptions::new(FixtureMode::Stateless).json_response(true);
    let served = serve(service_with(options, probe)).await;
    let client = McpClient::new(&served.url);

    let greet = client
        .call_tool_with("greet", json!({"name": "j"}), json!({}), false)
        .await;
    assert_eq!(greet.content_type(), "application/json");
    assert_eq!(text(&greet.into_response()), "Hello, j!");

    // A handler that notifies first still gets an SSE stream.
    let slow = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 0.1}),
            json!({"_meta": {"progressToken": 1}}),
            false,
        )
        .await;
    assert!(slow.is_sse());
    assert!(!slow.progress().is_empty());
}

#[tokio::test]
async fn session_mode_serves_both_eras() {
    let (served, probe) = serve_fixture(FixtureMode::Session).await;
    let client = McpClient::new(&served.url);

    let session = client
        .legacy_initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let greet = client
        .legacy_request(
            &session,
            "2025-11-25",
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "old"}}),
        )
        .await;
    assert!(greet.headers.get("mcp-session-id").is_none());
    let greet = greet.into_response();
    assert_eq!(text(&greet), "Hello, old!");
    // Legacy peers get no resultType.
    assert!(greet["result"].get("resultType").is_none(), "{greet}");

    // On a legacy session confirm_delete asks with a real elicitation/create
    // request on the response stream; answering it completes the call.
    let id = client.next_id();
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "confirm_delete", "arguments": {"filename": "old.txt"}},
    });
    let headers = McpClient::legacy_headers(&session, "2025-11-25");
    let mut call = client.open_post(id, &headers, body.to_string()).await;
    let elicit = call.next_message().await.expect("elicitation request");
    assert_eq!(elicit["method"], "elicitation/create", "{elicit}");
    let answer = json!({
        "jsonrpc": "2.0", "id": elicit["id"],
        "result": {"action": "accept", "content": {"confirm": true}},
    });
    let (status, _, _) = client
        .raw_post(
            &headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect::<Vec<_>>(),
            answer.to_string(),
        )
        .await;
    assert_eq!(status, 202);
    let messages = call.finish().await;
    let done = messages.last().expect("response");
    assert!(text(done).starts_with("Deleted old.txt"), "{done}");
    assert_eq!(probe.finished("confirm_delete"), 1);

    // The same server answers 2026-07-28 requests statelessly.
    let modern = client
        .call_tool("greet", json!({"name": "new"}), false)
        .await;
    assert_eq!(modern["result"]["resultType"], "complete");
    let discover = client.discover().await;
    assert!(
        discover["result"]["supportedVersions"]
            .as_array()
            .expect("versions")
            .contains(&json!("2025-11-25"))
    );
}

#[tokio::test]
async fn rmcp_client_interoperates() {
    let (served, probe) = serve_fixture(FixtureMode::Stateless).await;
    let client = RmcpClient::connect(&served.url, false).await;

    let greet = client.call_tool("greet", json!({"name": "r"}), false).await;
    assert_eq!(text(&greet), "Hello, r!");

    // Per-request declaration of the tasks extension reaches the server.
    let echoed = client.call_tool("echo_meta", json!({}), true).await;
    let meta: Value = serde_json::from_str(text(&echoed)).expect("meta JSON");
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    // rmcp puts a progress token on every request.
    assert!(meta.get("progressToken").is_some(), "{meta}");

    let first = client
        .call_tool_once("confirm_delete", json!({"filename": "r.txt"}))
        .await
        .expect("first round");
    let CallToolResponse::InputRequired(input) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    let params = rmcp::model::CallToolRequestParams::new("confirm_delete")
        .with_arguments(
            json!({"filename": "r.txt"})
                .as_object()
                .cloned()
                .expect("object"),
        )
        .with_input_responses(responses)
        .with_request_state(input.request_state.expect("state"));
    let done = client.peer().call_tool_once(params).await.expect("retry");
    let CallToolResponse::Complete(result) = done else {
        panic!("expected a result, got {done:?}");
    };
    assert_eq!(result.is_error, Some(false));

    // Dropping an rmcp call closes its stream, which cancels the handler.
    let call = client.call_tool_once("slow_compute", json!({"seconds": 30}));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    assert!(probe.wait_cancelled("slow_compute", BOUND).await);
    client.close().await;
}

#[tokio::test]
async fn serve_accepts_a_wrapped_service() {
    use std::convert::Infallible;

    use axum::body::Body;
    use http_body_util::BodyExt;
    use support::fixture::{BoxError, service};
    use tower::ServiceExt;

    // A boxed (Send, not Sync) service with its own error and body types, as a
    // layered stack would be.
    let probe = Probe::new();
    type FixtureBody = http_body_util::combinators::BoxBody<bytes::Bytes, Infallible>;
    let fixture = service(FixtureMode::Stateless, probe.clone());
    let fixture =
        ServiceExt::<http::Request<Body>>::map_err(fixture, |never| -> BoxError { match never {} });
    let wrapped = ServiceExt::<http::Request<Body>>::map_response(
        fixture,
        |response: http::Response<FixtureBody>| {
            response.map(|body| body.map_err(|never| -> BoxError { match never {} }).boxed())
        },
    );
    let wrapped = tower::util::BoxCloneService::new(wrapped);
    let served = serve(wrapped).await;

    let client = McpClient::new(&served.url);
    let greet = client.call_tool("greet", json!({"name": "w"}), false).await;
    assert_eq!(text(&greet), "Hello, w!");
    served.shutdown().await;
    assert_eq!(probe.finished("greet"), 1);
}
