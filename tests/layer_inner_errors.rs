//! An inner service that fails (`Err`, no response at all) during the race
//! gives the client a JSON-RPC error for its call, never an empty 502, and a
//! parked call whose service fails later ends `failed`.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use mcp_tasks::body::BoxError;
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer};
use serde_json::json;
use support::in_process::{self, send, tasks_declared};
use tower::Layer;

/// Fails every call, after `delay`, with an error whose text must not reach
/// the client.
fn failing(
    delay: Duration,
) -> impl tower::Service<
    Request<RequestBody<Full<Bytes>>>,
    Response = Response<Full<Bytes>>,
    Error = BoxError,
    Future = impl Send,
> + Clone {
    tower::service_fn(
        move |_request: Request<RequestBody<Full<Bytes>>>| async move {
            tokio::time::sleep(delay).await;
            Err::<Response<Full<Bytes>>, BoxError>("connect 10.1.2.3:9000 refused".into())
        },
    )
}

fn call() -> Request<Full<Bytes>> {
    let params = json!({"name": "job", "arguments": {}});
    in_process::post("tools/call", params, Some("job"), tasks_declared())
}

#[tokio::test]
async fn an_inner_error_before_the_threshold_is_a_json_rpc_error_for_the_call() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).threshold(Duration::from_millis(500));
    let service = layer.layer(failing(Duration::ZERO));
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

#[tokio::test]
async fn an_inner_error_after_parking_fails_the_task() {
    let store = MemoryTaskStore::new();
    let layer = TasksLayer::new(store.clone()).threshold(Duration::from_millis(50));
    let service = layer.layer(failing(Duration::from_millis(300)));
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
    for _ in 0..50 {
        let (_, now) = send(&service, get()).await;
        if now["result"]["status"] == "failed" {
            assert_eq!(now["result"]["error"]["code"], -32603, "{now}");
            assert!(!now.to_string().contains("10.1.2.3"), "{now}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task never failed");
}
