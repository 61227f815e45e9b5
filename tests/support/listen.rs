//! A client side of task status subscriptions (`subscriptions/listen`
//! with `taskIds`), for the push tests.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

use super::client::{McpClient, OpenCall};
use super::layered::USER_HEADER;

/// The `_meta` key naming the subscription.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Opens a declaring listen for `task_ids` as `user`; the open stream and
/// its JSON-RPC id.
pub async fn listen(client: &McpClient, task_ids: &[&str], user: Option<&str>) -> (OpenCall, u64) {
    let id = client.next_id();
    let body = client.build_request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": task_ids}}),
        true,
    );
    let mut headers = McpClient::standard_headers("subscriptions/listen", None);
    if let Some(user) = user {
        headers.push((USER_HEADER.to_owned(), user.to_owned()));
    }
    (client.open_post(id, &headers, body.to_string()).await, id)
}

/// The next message of `stream` within five seconds.
pub async fn next(stream: &mut OpenCall) -> Value {
    tokio::time::timeout(Duration::from_secs(5), stream.next_message())
        .await
        .expect("a message within 5 s")
        .expect("the stream is still open")
}

/// The next `notifications/tasks`; fails on any other notification.
pub async fn pushed(stream: &mut OpenCall, id: u64) -> Value {
    let message = next(stream).await;
    assert_eq!(message["method"], "notifications/tasks", "{message}");
    assert_eq!(message["params"]["_meta"][SUBSCRIPTION_ID], id, "{message}");
    message["params"].clone()
}

/// `tasks/get` as a pushed notification would show it.
pub async fn polled(client: &McpClient, task: &str) -> Value {
    let mut result = client.tasks_get(task).await["result"].clone();
    result.as_object_mut().unwrap().remove("resultType");
    result
}

/// `params` without `_meta`.
pub fn without_meta(mut params: Value) -> Value {
    params.as_object_mut().unwrap().remove("_meta");
    params
}
