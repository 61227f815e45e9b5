//! A parked call that the inner server sheds (`input_required` with only a
//! `requestState`) is re-issued by the layer in the background. That call
//! carries the original call's `Principal` and the extension types named
//! with `reissue_extension`, not the request's other extensions (keeping
//! all of them costs every call that answers in time), unless the layer is
//! told to keep them all.

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

/// An extension the tools read, named with `reissue_extension`.
#[derive(Clone)]
struct Tenant(&'static str);

/// An extension nobody names (like a connection's peer address).
#[derive(Clone)]
struct Peer(u16);

/// What an outer middleware inserts on every request.
fn with_extensions(request: Request<Body>) -> Request<Body> {
    let mut request = principal_from_header(request);
    request.extensions_mut().insert(Tenant("acme"));
    request.extensions_mut().insert(Peer(4242));
    request
}

fn seen(request: &Request<RequestBody<Body>>) -> Value {
    let extensions = request.extensions();
    json!({
        "principal": extensions.get::<Principal>().map(|p| p.as_str().to_owned()),
        "tenant": extensions.get::<Tenant>().map(|t| t.0),
        "peer": extensions.get::<Peer>().map(|p| p.0),
    })
}

/// Sheds the first call after the threshold, carrying what it saw in its
/// `requestState`; the retry answers with both.
async fn inner(request: Request<RequestBody<Body>>) -> Result<Response<Body>, Infallible> {
    let now = seen(&request);
    let message = read_message(request.into_body()).await;
    let result = match message["params"]["requestState"].as_str() {
        None => {
            // Slow on purpose: the first call sheds after the threshold, so it is parked.
            tokio::time::sleep(ms(300)).await;
            json!({"resultType": "input_required", "requestState": now.to_string()})
        }
        Some(first) => {
            let report =
                json!({"first": serde_json::from_str::<Value>(first).unwrap(), "retry": now});
            json!({"resultType": "complete", "content": [{"type": "text", "text": report.to_string()}]})
        }
    };
    let body = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
    Ok(json_response(&body))
}

/// Parks a call through `layer`, lets the inner server shed it, and returns
/// the report of the re-issued call.
async fn shed_and_report(layer: TasksLayer) -> Value {
    let app = ServiceBuilder::new()
        .map_request(with_extensions)
        .layer(layer.threshold(ms(100)))
        .service(tower::service_fn(inner));
    let served = serve(app).await;
    let client = McpClient::new(&served.url).with_timeout(CLIENT_TIMEOUT);
    let params = json!({"name": "busy", "arguments": {}});
    let alice = [(USER_HEADER, "alice")];
    let task = task_id(
        &send(&client, 1, "tools/call", params, true, &alice)
            .await
            .into_response(),
    );
    let attempt = std::cell::Cell::new(10);
    wait_until(&format!("task {task} completes"), BOUND, || async {
        attempt.set(attempt.get() + 1);
        let got = get_as(&client, attempt.get(), &task, Some("alice"))
            .await
            .into_response();
        match got["result"]["status"].as_str() {
            Some("completed") => {
                Some(serde_json::from_str(text(&got["result"]["result"])).unwrap())
            }
            Some("working") => None,
            _ => panic!("the shed call did not complete: {got}"),
        }
    })
    .await
}

#[tokio::test]
async fn the_retry_of_a_shed_call_carries_the_principal_and_the_named_extensions() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).reissue_extension::<Tenant>();
    let report = shed_and_report(layer).await;
    let everything = json!({"principal": "alice", "tenant": "acme", "peer": 4242});
    assert_eq!(report["first"], everything, "the call itself is untouched");
    assert_eq!(
        report["retry"],
        json!({"principal": "alice", "tenant": "acme", "peer": null})
    );
}

#[tokio::test]
async fn by_default_the_retry_carries_the_principal_alone() {
    let report = shed_and_report(TasksLayer::new(MemoryTaskStore::new())).await;
    assert_eq!(
        report["retry"],
        json!({"principal": "alice", "tenant": null, "peer": null})
    );
}

#[tokio::test]
async fn with_reissue_all_extensions_the_retry_carries_every_one() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).reissue_all_extensions();
    let report = shed_and_report(layer).await;
    assert_eq!(
        report["retry"],
        json!({"principal": "alice", "tenant": "acme", "peer": 4242})
    );
}
