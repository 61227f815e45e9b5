//! The call the layer re-issues after `tasks/update` completes an input round
//! carries the credentials and request extensions of that update (same
//! principal, fresher token), the echoed `requestState`, and routing headers
//! consistent with its body.

use crate::support;

use std::convert::Infallible;

use axum::body::Body;
use http::{Request, Response};
use mcp_tasks::{MemoryTaskStore, Principal, RequestBody, TasksLayer};
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::serve;
use support::in_process::{json_response, read_message};
use support::layered::{
    CLIENT_TIMEOUT, USER_HEADER, get_as, ms, principal_from_header, send, task_id, text,
};
use support::wait::{BOUND, wait_until};
use tower::ServiceBuilder;

fn header(request: &Request<RequestBody<Body>>, name: &str) -> Value {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map_or(Value::Null, |v| json!(v))
}

/// Asks "who?" once (after the threshold, so the call is parked), then
/// answers with what the retry carried.
async fn inner(request: Request<RequestBody<Body>>) -> Result<Response<Body>, Infallible> {
    let seen_headers = json!({
        "authorization": header(&request, "authorization"),
        "mcpName": header(&request, "mcp-name"),
        "mcpMethod": header(&request, "mcp-method"),
        "principal": request.extensions().get::<Principal>().map(|p| p.as_str().to_owned()),
    });
    let message = read_message(request.into_body()).await;
    let params = &message["params"];
    let result = if params.get("inputResponses").is_none() {
        // Slow on purpose: the first round asks after the threshold, so the call is parked.
        tokio::time::sleep(ms(300)).await;
        json!({
            "resultType": "input_required",
            "inputRequests": {"who": {"method": "elicitation/create",
                "params": {"message": "who?", "requestedSchema": {"type": "object"}}}},
            "requestState": "round-1"
        })
    } else {
        let seen = json!({
            "headers": seen_headers,
            "id": message["id"],
            "requestState": params["requestState"],
            "answer": params["inputResponses"]["who"],
            "arguments": params["arguments"],
        });
        json!({"resultType": "complete", "content": [{"type": "text", "text": seen.to_string()}]})
    };
    let body = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
    Ok(json_response(&body))
}

async fn status_as(client: &McpClient, task: &str, wanted: &str) -> Value {
    let attempt = std::cell::Cell::new(500);
    wait_until(&format!("task {task} reaches {wanted}"), BOUND, || async {
        attempt.set(attempt.get() + 1);
        let got = get_as(client, attempt.get(), task, Some("alice"))
            .await
            .into_response();
        (got["result"]["status"] == wanted).then(|| got["result"].clone())
    })
    .await
}

#[tokio::test]
async fn the_resumed_call_carries_the_credentials_of_the_update_that_completed_the_round() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).threshold(ms(100));
    let app = ServiceBuilder::new()
        .map_request(principal_from_header)
        .layer(layer)
        .service(tower::service_fn(inner));
    let served = serve(app).await;
    let client = McpClient::new(&served.url).with_timeout(CLIENT_TIMEOUT);

    let call = send(
        &client,
        1,
        "tools/call",
        json!({"name": "ask", "arguments": {"path": "/tmp/a b", "n": 7}}),
        true,
        &[(USER_HEADER, "alice"), ("authorization", "Bearer first")],
    )
    .await
    .into_response();
    let task = task_id(&call);
    let waiting = status_as(&client, &task, "input_required").await;
    assert_eq!(
        waiting["inputRequests"]["1.who"]["params"]["message"],
        "who?"
    );
    assert!(
        waiting.get("requestState").is_none(),
        "requestState stays with the layer"
    );

    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let ack = send(
        &client,
        2,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {"1.who": answer}}),
        true,
        &[(USER_HEADER, "alice"), ("authorization", "Bearer fresh")],
    )
    .await
    .into_response();
    assert_eq!(ack["result"], json!({"resultType": "complete"}));

    let done = status_as(&client, &task, "completed").await;
    let seen: Value = serde_json::from_str(text(&done["result"])).expect("the retry's report");
    assert_eq!(seen["headers"]["authorization"], "Bearer fresh");
    assert_eq!(seen["headers"]["principal"], "alice");
    assert_eq!(seen["headers"]["mcpMethod"], "tools/call");
    assert_eq!(seen["headers"]["mcpName"], "ask");
    assert_eq!(seen["requestState"], "round-1");
    assert_eq!(
        seen["answer"], answer,
        "answered under the inner server's own key"
    );
    assert_ne!(
        seen["id"],
        json!(1),
        "the retry is a new request with a new id"
    );
    assert_eq!(seen["arguments"], json!({"path": "/tmp/a b", "n": 7}));
}
