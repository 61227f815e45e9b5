//! Task status push over `subscriptions/listen` (2026-07-28, Tasks
//! extension), against the rmcp fixture over loopback HTTP: the
//! acknowledgement names only the principal's tasks, each notification
//! equals `tasks/get` at that moment, the stream ends once every task is
//! terminal, and the caps refuse with clear errors.

use crate::support;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_tasks::{
    InputProgress, InputRound, MemoryTaskStore, RequestBody, TaskStore, TasksLayer, ToolPolicy,
};
use serde_json::json;
use serde_json::value::RawValue;
use support::in_process::{post, tasks_declared};
use support::layered::{Layered, USER_HEADER, ms, stored_task, task_id};
use support::listen::{SUBSCRIPTION_ID, listen, next, polled, pushed, without_meta};
use support::wait::{BOUND, settle, wait_until};
use tower::{Layer, ServiceExt};

#[tokio::test]
async fn a_subscription_sees_every_status_in_order_each_equal_to_tasks_get() {
    let layered = Layered::start(|layer| layer.tool_policy("two_rounds", ToolPolicy::Always)).await;
    let client = layered
        .client()
        .with_capabilities(json!({"elicitation": {}}));
    let task = task_id(&client.call_tool("two_rounds", json!({}), true).await);
    client
        .wait_task_status(&task, &["input_required"], BOUND)
        .await;

    let unknown = "0123456789abcdef0123456789abcdef";
    let (mut stream, id) = listen(&client, &[&task, unknown, "not-a-task"], None).await;
    assert_eq!(stream.status, 200);
    let ack = next(&mut stream).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([task]),
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id);

    // The state when the stream opened, exactly what tasks/get says.
    let now = pushed(&mut stream, id).await;
    assert_eq!(now["status"], "input_required");
    assert_eq!(without_meta(now), polled(&client, &task).await);

    let answer = json!({"action": "accept", "content": {"answer": "one"}});
    client
        .tasks_update(&task, json!({"1.answer": answer}))
        .await;
    let resumed = pushed(&mut stream, id).await;
    assert_eq!(resumed["status"], "working", "{resumed}");
    let asked = pushed(&mut stream, id).await;
    assert_eq!(asked["status"], "input_required", "{asked}");
    assert_eq!(without_meta(asked), polled(&client, &task).await);

    let answer = json!({"action": "accept", "content": {"answer": "two"}});
    client
        .tasks_update(&task, json!({"2.answer": answer}))
        .await;
    let resumed = pushed(&mut stream, id).await;
    assert_eq!(resumed["status"], "working", "{resumed}");
    let done = pushed(&mut stream, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(without_meta(done), polled(&client, &task).await);

    // Every subscribed task is terminal: the graceful end.
    let end = next(&mut stream).await;
    assert_eq!(end["id"], id, "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_ID], id, "{end}");
    assert!(
        stream.next_message().await.is_none(),
        "nothing after the end"
    );
}

#[tokio::test]
async fn status_messages_are_pushed_while_a_task_runs() {
    let layered = Layered::start(|layer| layer.threshold(ms(100))).await;
    let client = layered.client();
    // rmcp's tool reports progress only to a call with a progress token.
    let progress = json!({"_meta": {"progressToken": "p1"}});
    let created = client
        .call_tool_with("slow_compute", json!({"seconds": 1.5}), progress, true)
        .await;
    let task = task_id(&created.into_response());
    let (mut stream, id) = listen(&client, &[&task], None).await;
    next(&mut stream).await; // the ack
    let mut messages = Vec::new();
    loop {
        let params = pushed(&mut stream, id).await;
        if params["status"] == "completed" {
            break;
        }
        assert_eq!(params["status"], "working", "{params}");
        if let Some(message) = params["statusMessage"].as_str() {
            messages.push(message.to_owned());
        }
    }
    assert!(
        !messages.is_empty(),
        "the tool's progress reached the stream"
    );
    let mut unique = messages.clone();
    unique.dedup();
    assert_eq!(unique, messages, "a message is pushed once per change");
}

#[tokio::test]
async fn another_principals_task_is_never_acknowledged() {
    let layered = Layered::start_with_users(|layer| layer.threshold(ms(100))).await;
    let client = layered.client();
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 3}});
    let created = support::layered::send(
        &client,
        client.next_id(),
        "tools/call",
        call,
        true,
        &[(USER_HEADER, "alice")],
    )
    .await;
    let task = task_id(&created.into_response());

    let (mut bob, id) = listen(&client, &[&task], Some("bob")).await;
    let ack = next(&mut bob).await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([]),
        "{ack}"
    );
    let end = next(&mut bob).await;
    assert_eq!(end["id"], id, "nothing to report: the stream ends at once");
    assert_eq!(end["result"]["resultType"], "complete");

    let (mut alice, _) = listen(&client, &[&task], Some("alice")).await;
    let ack = next(&mut alice).await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([task]),
        "{ack}"
    );
}

#[tokio::test]
async fn listens_over_the_caps_are_refused_with_clear_errors() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(100))
            .max_subscriptions(1, 100)
            .max_subscription_task_ids(2)
    })
    .await;
    let client = layered.client();
    let task = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 3}), true)
            .await,
    );
    let (too_many, _) = listen(&client, &[&task, "a", "b"], None).await;
    let answer = too_many.finish().await;
    assert_eq!(answer[0]["error"]["code"], -32602, "{answer:?}");

    let (mut first, _) = listen(&client, &[&task], None).await;
    next(&mut first).await; // the ack: the subscription holds its slot
    let (second, _) = listen(&client, &[&task], None).await;
    let answer = second.finish().await;
    assert_eq!(answer[0]["error"]["code"], -32000, "{answer:?}");
    assert!(
        answer[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 1 per principal")),
        "{answer:?}"
    );
    drop(first);
    // The slot comes back once the first stream is gone.
    wait_until(
        "the slot of a closed stream is given back",
        BOUND,
        || async {
            let (mut again, _) = listen(&client, &[&task], None).await;
            let message = next(&mut again).await;
            if message["method"] == "notifications/subscriptions/acknowledged" {
                Ok(())
            } else {
                Err(message)
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_drain_ends_open_subscriptions_gracefully() {
    let mut drain = None;
    let layered = Layered::start_over(MemoryTaskStore::new(), |layer| {
        drain = Some(layer.drain());
        layer.threshold(ms(100))
    })
    .await;
    let drain = drain.expect("configured");
    let client = layered.client();
    let task = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 30}), true)
            .await,
    );
    let (mut stream, id) = listen(&client, &[&task], None).await;
    next(&mut stream).await; // the ack
    pushed(&mut stream, id).await; // working
    let shutdown = tokio::spawn(async move { drain.shutdown(ms(100)).await });
    let end = next(&mut stream).await;
    assert_eq!(end["id"], id, "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    shutdown.await.expect("drained");
}

/// In process, so that the client can stop reading without the kernel's
/// socket buffers reading for it: the stream ends with a JSON-RPC error
/// once its buffer is full. On paused time, so that the stream's feeder
/// reads each change before the next (see `settle`).
#[tokio::test(start_paused = true)]
async fn a_subscriber_that_stops_reading_is_ended_with_a_clear_error() {
    let store = MemoryTaskStore::new();
    let id = stored_task(&store, Duration::from_secs(60)).await;
    let response = listen_in_process(&store, id).await;

    // Nobody reads; each round trip is two status changes.
    let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
    for round in 0..60 {
        let key = format!("{round}.a");
        let ask = InputRound {
            requests: vec![(key.clone(), raw("{}"))],
            resume: raw("{}"),
        };
        store.require_input(id, ask).await.unwrap();
        settle().await;
        let answered = store.answer_input(id, None, vec![(key, raw("1"))]).await;
        assert!(matches!(
            answered,
            Ok(Some(InputProgress::RoundComplete { .. }))
        ));
        settle().await;
    }
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the stream ended")
        .to_bytes();
    let text = String::from_utf8_lossy(&body);
    let events: Vec<&str> = text
        .split("\n\n")
        .filter(|e| e.starts_with("data:"))
        .collect();
    // The buffer: 64 events plus room for the first burst (the ack and
    // the one task's state), the last slot kept for the error. Not more.
    assert_eq!(events.len(), 66, "the buffer, not more: {}", events.len());
    let last = events.last().unwrap();
    assert!(last.contains("\"code\":-32000"), "{last}");
    assert!(last.contains("read too slowly"), "{last}");
}

/// rmcp 3.11 has no `subscriptions/listen`: a listen that asks it for more
/// than task status gets its answer unchanged, and one that asks only for
/// task status is still served by the layer alone.
#[tokio::test]
async fn an_inner_server_without_listen_answers_its_part_and_breaks_no_task_only_listen() {
    let layered = Layered::start(|layer| layer.threshold(ms(100))).await;
    let client = layered.client();
    let task = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 0.3}), true)
            .await,
    );
    let id = client.next_id();
    let body = client.build_request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [task], "toolsListChanged": true}}),
        true,
    );
    let headers = support::client::McpClient::standard_headers("subscriptions/listen", None);
    let mixed = client.open_post(id, &headers, body.to_string()).await;
    assert_eq!(mixed.status, 404);
    let answer = mixed.finish().await;
    assert_eq!(answer[0]["error"]["code"], -32601, "{answer:?}");

    let (mut alone, id) = listen(&client, &[&task], None).await;
    let ack = next(&mut alone).await;
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task]));
    loop {
        let message = next(&mut alone).await;
        if message["id"] == id {
            assert_eq!(message["result"]["resultType"], "complete");
            break;
        }
    }
}

/// A listen for `id` sent straight to a layer over `store` (no sockets).
async fn listen_in_process(
    store: &MemoryTaskStore,
    id: mcp_tasks::TaskId,
) -> http::Response<mcp_tasks::ResponseBody<Full<Bytes>>> {
    // The inner server is never asked: the layer serves the listen.
    let inner = |_: http::Request<RequestBody<Full<Bytes>>>| async {
        Ok::<_, Infallible>(http::Response::new(Full::<Bytes>::default()))
    };
    let service = TasksLayer::new(store.clone()).layer(tower::service_fn(inner));
    let listen = json!({"notifications": {"taskIds": [id.to_string()]}});
    let request = post("subscriptions/listen", listen, None, tasks_declared());
    let response = service.oneshot(request).await.expect("call");
    assert_eq!(response.status(), 200);
    response
}

/// The store announces no expiry; the stream reads the task when its TTL
/// runs out, finds it gone, and ends.
#[tokio::test]
async fn a_subscription_ends_when_its_only_task_expires() {
    let store = MemoryTaskStore::new();
    let id = stored_task(&store, ms(400)).await;
    let response = listen_in_process(&store, id).await;
    let body = tokio::time::timeout(Duration::from_secs(3), response.into_body().collect())
        .await
        .expect("the stream ended within 3 s of a 400 ms TTL")
        .expect("body")
        .to_bytes();
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains(r#""resultType":"complete""#), "{text}");
    assert!(
        !text.contains(r#""status":"completed""#),
        "an expired task is not completed: {text}"
    );
}
