//! Parking the tasks that `tasks/get` is measured among, before the bench
//! server listens.
//!
//! The calls go through the real layer and fixture, in process (the
//! router's `oneshot`, no socket), to a route whose layer has
//! `ToolPolicy::Always` for the fast and the slow tool:
//!
//! | Calls        | Tool                           | State once parked                         |
//! |--------------|--------------------------------|-------------------------------------------|
//! | `count - 1`  | `greet`                        | `completed` (its driver finished at once) |
//! | 1, the target | `slow_compute`, `seconds` = 1 h | `working` for the whole benchmark       |
//!
//! The target is working, like a task a polling client reads; the others
//! fill the store without any background work that would tax the one server
//! worker (a running `slow_compute` wakes every 200 ms). All are anonymous,
//! so `tasks/get` needs no credentials.

use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::http_requests::{Prepared, Requests, SLOW_TOOL};

/// How long the target's `slow_compute` runs: longer than any benchmark.
const TARGET_SECONDS: u64 = 3600;
/// How long the fast tasks may take to complete.
const SETTLE: Duration = Duration::from_secs(30);

/// Parks `count` (at least one) tasks through `park_path`, checks them
/// through `read_path` (a route of the same store), and returns the id of
/// the working target.
pub async fn park(
    router: &axum::Router,
    park_path: &str,
    read_path: &str,
    count: usize,
) -> Result<String, String> {
    let requests = Requests::new();
    let mut last_fast = None;
    for id in 1..count as u64 {
        let handle = call(router, park_path, &requests.fast_call(id)).await?;
        last_fast = Some(task_id(&handle)?);
    }
    let slow = requests.tool_call(
        count as u64,
        SLOW_TOOL,
        json!({"seconds": TARGET_SECONDS, "label": "tasks/get target"}),
        json!({}),
    );
    let target = task_id(&call(router, park_path, &slow).await?)?;
    if let Some(last) = last_fast {
        wait_for(router, &requests, read_path, &last, "completed").await?;
    }
    wait_for(router, &requests, read_path, &target, "working").await?;
    Ok(target)
}

/// One in-process call to `path`; the JSON-RPC response.
async fn call(router: &axum::Router, path: &str, request: &Prepared) -> Result<Value, String> {
    let response = router
        .clone()
        .oneshot(request.to_request(path))
        .await
        .unwrap_or_else(|never| match never {});
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| format!("{path}: reading the answer: {error}"))?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|_| {
        let text = String::from_utf8_lossy(&body);
        format!("{path}: HTTP {status}, not one JSON answer: {text}")
    })
}

/// The `taskId` of a task handle; an error for any other answer.
fn task_id(answer: &Value) -> Result<String, String> {
    match (&answer["result"]["resultType"], &answer["result"]["taskId"]) {
        (Value::String(kind), Value::String(id)) if kind == "task" => Ok(id.clone()),
        _ => Err(format!("expected a task handle, got {answer}")),
    }
}

/// Reads `task_id` until its status is `status`, for at most [`SETTLE`];
/// an error at once if it ends in another status.
async fn wait_for(
    router: &axum::Router,
    requests: &Requests,
    path: &str,
    task_id: &str,
    status: &str,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let answer = call(router, path, &requests.tasks_get(0, task_id)).await?;
        let now = answer["result"]["status"].as_str().unwrap_or_default();
        if now == status {
            return Ok(());
        }
        let ended = matches!(now, "completed" | "failed" | "cancelled");
        if ended || tokio::time::Instant::now() >= deadline {
            return Err(format!("task {task_id} not {status}: {answer}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
