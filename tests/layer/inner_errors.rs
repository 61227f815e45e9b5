//! An inner service that fails (`Err`, no response at all) during the race
//! gives the client a JSON-RPC error for its call, never an empty 502, and a
//! parked call whose service fails later ends `failed`. A gateway's own
//! `502`/`504` (`"id": null`: it never read the request) reaches the client
//! with the call's id on every path a call can stay with its client.

use crate::support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use mcp_tasks::body::BoxError;
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer, ToolPolicy};
use serde_json::json;
use support::in_process::{self, send, tasks_declared};
use support::wait::{BOUND, wait_until};
use tower::Layer;

/// Answers every call with `answer()`, after `delay`.
fn after(
    delay: Duration,
    answer: fn() -> Result<Response<Full<Bytes>>, BoxError>,
) -> impl tower::Service<
    Request<RequestBody<Full<Bytes>>>,
    Response = Response<Full<Bytes>>,
    Error = BoxError,
    Future = impl Send,
> + Clone {
    tower::service_fn(
        move |_request: Request<RequestBody<Full<Bytes>>>| async move {
            // Slow on purpose: the scripted answer comes after `delay`.
            tokio::time::sleep(delay).await;
            answer()
        },
    )
}

/// An inner error whose text must not reach the client.
fn refused() -> Result<Response<Full<Bytes>>, BoxError> {
    Err("connect 10.1.2.3:9000 refused".into())
}

fn call() -> Request<Full<Bytes>> {
    let params = json!({"name": "job", "arguments": {}});
    in_process::post("tools/call", params, Some("job"), tasks_declared())
}

#[tokio::test]
async fn an_inner_error_before_the_threshold_is_a_json_rpc_error_for_the_call() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).threshold(Duration::from_millis(500));
    let service = layer.layer(after(Duration::ZERO, refused));
    let (status, answer) = send(&service, call()).await;
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        !answer.to_string().contains("10.1.2.3"),
        "no inner error text reaches the client: {answer}"
    );
}

// On paused time, like the quota test below: the threshold (50 ms) always
// comes before the inner error (300 ms).
#[tokio::test(start_paused = true)]
async fn an_inner_error_after_parking_fails_the_task() {
    let store = MemoryTaskStore::new();
    let layer = TasksLayer::new(store.clone()).threshold(Duration::from_millis(50));
    let service = layer.layer(after(Duration::from_millis(300), refused));
    let (_, created) = send(&service, call()).await;
    let task = created["result"]["taskId"]
        .as_str()
        .expect("a task handle")
        .to_owned();
    let get = || {
        in_process::post(
            "tasks/get",
            json!({"taskId": task}),
            Some(&task),
            tasks_declared(),
        )
    };
    let now = wait_until("the task fails", BOUND, || async {
        let (_, now) = send(&service, get()).await;
        (now["result"]["status"] == "failed").then_some(now)
    })
    .await;
    assert_eq!(now["result"]["error"]["code"], -32603, "{now}");
    assert!(!now.to_string().contains("10.1.2.3"), "{now}");
}

/// What a gateway answers when its upstream sends no head in time: `504`
/// with `"id": null`.
fn timed_out() -> Result<Response<Full<Bytes>>, BoxError> {
    let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the upstream MCP server did not answer in time"}}"#;
    Ok(Response::builder()
        .status(504)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .expect("a response"))
}

#[tokio::test]
async fn a_gateway_error_to_a_call_kept_synchronous_by_its_policy_carries_the_call_id() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).tool_policy("job", ToolPolicy::Never);
    let service = layer.layer(after(Duration::ZERO, timed_out));
    let (status, answer) = send(&service, call()).await;
    assert_eq!(status, 504, "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
}

// On paused time: the threshold (50 ms) always comes before the inner
// answer (400 ms), however loaded the machine, so the second call really is
// refused a task, not answered before it.
#[tokio::test(start_paused = true)]
async fn a_gateway_error_to_a_call_refused_a_task_by_a_full_quota_carries_the_call_id() {
    let layer = TasksLayer::new(MemoryTaskStore::new())
        .threshold(Duration::from_millis(50))
        .max_tasks(Some(1));
    let service = layer.layer(after(Duration::from_millis(400), timed_out));
    // The first call takes the one task there is room for.
    let (_, first) = send(&service, call()).await;
    assert!(first["result"]["taskId"].is_string(), "{first}");
    // The second is refused a task and stays with its client, who gets
    // the gateway's error under its own id.
    let (status, answer) = send(&service, call()).await;
    assert_eq!(status, 504, "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
}
