//! End to end over loopback HTTP: the real rmcp 3.11 client, which knows the
//! tasks extension, interoperates with the layer in front of a server that
//! does not.

use crate::support;

use rmcp::model::{CallToolResponse, GetTaskResult, TaskPayload, TaskStatus};
use serde_json::{Value, json};
use support::client::RmcpClient;
use support::layered::{Layered, ms};
use support::wait::{BOUND, wait_until};

/// Polls `tasks/get` through rmcp until the task is terminal.
async fn wait_terminal(client: &RmcpClient, task: &str) -> GetTaskResult {
    wait_until(&format!("task {task} ends"), BOUND, || async {
        let polled = client.tasks_get(task).await.expect("tasks/get");
        if polled.task.status().is_terminal() {
            Ok(polled)
        } else {
            Err(polled.task.status())
        }
    })
    .await
}

#[tokio::test]
async fn the_rmcp_client_gets_a_task_polls_it_to_completion_and_cancels_another() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = RmcpClient::connect(&layered.served.url, true).await;

    // A fast call is an ordinary result.
    let greet = client
        .call_tool_once("greet", json!({"name": "rmcp"}))
        .await
        .expect("greet");
    let CallToolResponse::Complete(greet) = greet else {
        panic!("expected a result, got {greet:?}");
    };
    assert_eq!(
        serde_json::to_value(&greet.content).expect("content")[0]["text"],
        "Hello, rmcp!"
    );

    // A slow one is a task that completes.
    let parked = client
        .call_tool_once("slow_compute", json!({"seconds": 0.8}))
        .await
        .expect("slow_compute");
    let CallToolResponse::Task(created) = parked else {
        panic!("expected a task, got {parked:?}");
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    let done = wait_terminal(&client, &created.task.task_id).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("expected completed, got {done:?}");
    };
    assert_eq!(
        Value::Object(result.clone())["content"][0]["text"],
        "slow_compute done after 0.8s"
    );

    // Another one is cancelled, and the tool with it.
    let parked = client
        .call_tool_once("slow_compute", json!({"seconds": 30}))
        .await
        .expect("slow_compute");
    let CallToolResponse::Task(created) = parked else {
        panic!("expected a task, got {parked:?}");
    };
    client
        .tasks_cancel(&created.task.task_id)
        .await
        .expect("tasks/cancel");
    let cancelled = wait_terminal(&client, &created.task.task_id).await;
    assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);
    assert!(layered.probe.wait_cancelled("slow_compute", BOUND).await);
    assert_eq!(layered.probe.finished("slow_compute"), 1);
    client.close().await;
}

#[tokio::test]
async fn an_rmcp_client_that_does_not_declare_tasks_is_always_answered_synchronously() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = RmcpClient::connect(&layered.served.url, false).await;

    let answered = client
        .call_tool_once("slow_compute", json!({"seconds": 0.5}))
        .await
        .expect("slow_compute");
    let CallToolResponse::Complete(result) = answered else {
        panic!("expected a result, got {answered:?}");
    };
    assert_eq!(
        serde_json::to_value(&result.content).expect("content")[0]["text"],
        "slow_compute done after 0.5s"
    );
    assert!(layered.store.is_empty());
    client.close().await;
}
