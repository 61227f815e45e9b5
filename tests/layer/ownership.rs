//! End to end over loopback HTTP: a task belongs to the principal that created
//! it. A test authentication middleware outside the layer turns the
//! `x-test-user` header into a `mcp_tasks::Principal`.

use crate::support;

use mcp_tasks::ToolPolicy;
use serde_json::{Value, json};
use support::client::{Exchange, McpClient};
use support::layered::{Layered, USER_HEADER, get_as, ms, send, task_id};
use support::wait::{BOUND, wait_until};

/// The JSON-RPC id of every request whose bytes are compared.
const SAME_ID: u64 = 7;

/// A task id the layer never minted.
const UNKNOWN: &str = "0123456789abcdef0123456789abcdef";

/// `tools/call` as `user`; the JSON-RPC response.
async fn call_as(client: &McpClient, user: Option<&str>, name: &str, arguments: Value) -> Value {
    let extra: Vec<(&str, &str)> = user.map(|user| (USER_HEADER, user)).into_iter().collect();
    let params = json!({"name": name, "arguments": arguments});
    send(client, client.next_id(), "tools/call", params, true, &extra)
        .await
        .into_response()
}

/// A task method as `user` with the JSON-RPC id [`SAME_ID`].
async fn as_user(client: &McpClient, method: &str, task: &str, user: Option<&str>) -> Exchange {
    let extra: Vec<(&str, &str)> = user.map(|user| (USER_HEADER, user)).into_iter().collect();
    let params = json!({"taskId": task, "inputResponses": {"k": {}}});
    send(client, SAME_ID, method, params, true, &extra).await
}

fn assert_same_bytes(what: &str, reference: &Exchange, other: &Exchange) {
    assert_eq!(other.status, reference.status, "{what}: {}", other.body);
    assert_eq!(other.content_type(), reference.content_type(), "{what}");
    assert_eq!(other.body, reference.body, "{what}");
}

#[tokio::test]
async fn foreign_anonymous_unknown_and_expired_tasks_all_read_as_the_same_bytes() {
    let layered = Layered::start_with_users(|layer| layer.threshold(ms(200))).await;
    let expiring = Layered::start_with_users(|layer| {
        layer
            .ttl(Some(ms(300)))
            .tool_policy("greet", ToolPolicy::Always)
    })
    .await;
    let client = layered.client();
    let expiring_client = expiring.client();

    let created = call_as(
        &client,
        Some("alice"),
        "slow_compute",
        json!({"seconds": 30}),
    )
    .await;
    let task = task_id(&created);
    let seen = get_as(&client, SAME_ID, &task, Some("alice")).await;
    assert_eq!(seen.status, 200);
    assert_eq!(seen.into_response()["result"]["status"], "working");

    let old = task_id(
        &call_as(
            &expiring_client,
            Some("alice"),
            "greet",
            json!({"name": "e"}),
        )
        .await,
    );
    let fresh = get_as(&expiring_client, SAME_ID, &old, Some("alice")).await;
    assert_eq!(fresh.into_response()["result"]["taskId"], old.as_str());
    wait_until("the short-lived task expires", BOUND, || async {
        let read = get_as(&expiring_client, SAME_ID, &old, Some("alice")).await;
        read.into_response().get("error").is_some()
    })
    .await;

    let reference = get_as(&client, SAME_ID, UNKNOWN, Some("alice")).await;
    assert_eq!(reference.status, 200, "{}", reference.body);
    let error = reference.clone().into_response();
    assert_eq!(error["error"]["code"], -32602, "{error}");
    let others = [
        ("bob", get_as(&client, SAME_ID, &task, Some("bob")).await),
        ("anonymous", get_as(&client, SAME_ID, &task, None).await),
        (
            "not an id",
            get_as(&client, SAME_ID, "no-such-task", Some("alice")).await,
        ),
        (
            "expired",
            get_as(&expiring_client, SAME_ID, &old, Some("alice")).await,
        ),
    ];
    for (what, other) in &others {
        assert_same_bytes(what, &reference, other);
    }

    // The same holds for tasks/cancel and tasks/update.
    for method in ["tasks/cancel", "tasks/update"] {
        let reference = as_user(&client, method, UNKNOWN, Some("alice")).await;
        for (what, user) in [("bob", Some("bob")), ("anonymous", None)] {
            let other = as_user(&client, method, &task, user).await;
            assert_same_bytes(&format!("{method} by {what}"), &reference, &other);
        }
        let other = as_user(&expiring_client, method, &old, Some("alice")).await;
        assert_same_bytes(&format!("{method} of an expired task"), &reference, &other);
    }
    // Through all of that, alice's task kept running.
    let still = get_as(&client, SAME_ID, &task, Some("alice")).await;
    assert_eq!(still.into_response()["result"]["status"], "working");
    assert_eq!(layered.probe.cancelled("slow_compute"), 0);
}

#[tokio::test]
async fn another_principal_cannot_cancel_a_task_but_its_owner_can() {
    let layered = Layered::start_with_users(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();
    let created = call_as(
        &client,
        Some("alice"),
        "slow_compute",
        json!({"seconds": 30}),
    )
    .await;
    let task = task_id(&created);

    for user in [Some("bob"), None] {
        let refused = as_user(&client, "tasks/cancel", &task, user).await;
        let response = refused.into_response();
        assert_eq!(response["error"]["code"], -32602, "{response}");
    }
    // The store would have ended the task before answering a cancel it took.
    let seen = get_as(&client, SAME_ID, &task, Some("alice")).await;
    assert_eq!(seen.into_response()["result"]["status"], "working");
    assert_eq!(layered.probe.cancelled("slow_compute"), 0);
    assert_eq!(layered.probe.running("slow_compute"), 1);

    let accepted = as_user(&client, "tasks/cancel", &task, Some("alice")).await;
    assert_eq!(
        accepted.into_response()["result"],
        json!({"resultType": "complete"})
    );
    assert!(layered.probe.wait_cancelled("slow_compute", BOUND).await);
}

#[tokio::test]
async fn an_anonymous_task_is_not_visible_to_an_authenticated_caller() {
    let layered =
        Layered::start_with_users(|layer| layer.tool_policy("greet", ToolPolicy::Always)).await;
    let client = layered.client();
    let task = task_id(&call_as(&client, None, "greet", json!({"name": "a"})).await);

    let anonymous = get_as(&client, SAME_ID, &task, None).await;
    assert_eq!(anonymous.into_response()["result"]["taskId"], task.as_str());
    let alice = get_as(&client, SAME_ID, &task, Some("alice")).await;
    let reference = get_as(&client, SAME_ID, UNKNOWN, Some("alice")).await;
    assert_same_bytes("alice", &reference, &alice);
}

#[tokio::test]
async fn the_owner_never_appears_in_any_response() {
    const OWNER: &str = "owner-7f3c9e";
    let layered = Layered::start_with_users(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();
    let user = Some(OWNER);

    let mut bodies = Vec::new();
    let extra = [(USER_HEADER, OWNER)];
    let params = json!({"name": "slow_compute", "arguments": {"seconds": 0.5},
                        "_meta": {"progressToken": "p"}});
    let created = send(&client, 1, "tools/call", params, true, &extra).await;
    let task = task_id(&created.clone().into_response());
    bodies.push(created.body);
    bodies.push(get_as(&client, 2, &task, user).await.body);
    bodies.push(as_user(&client, "tasks/update", &task, user).await.body);
    let done = client_wait(&client, &task, OWNER).await;
    bodies.push(done.body);
    bodies.push(as_user(&client, "tasks/cancel", &task, user).await.body);

    for body in &bodies {
        assert!(!body.contains(OWNER), "the owner leaked: {body}");
    }
    assert!(bodies[3].contains("completed"), "{}", bodies[3]);
}

/// Polls `tasks/get` as `user` until the task is no longer working.
async fn client_wait(client: &McpClient, task: &str, user: &str) -> Exchange {
    wait_until("the task leaves working", BOUND, || async {
        let polled = get_as(client, SAME_ID, task, Some(user)).await;
        let status = polled.clone().into_response()["result"]["status"].clone();
        (status != "working").then_some(polled)
    })
    .await
}
