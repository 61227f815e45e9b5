//! End to end over loopback HTTP: scopes. Layers with different `scope` over
//! one shared store keep their tasks apart: a task made under one scope
//! answers under every other exactly like a task that never existed, byte
//! for byte, on every task method; layers with the same scope (replicas of
//! one server) share their tasks.

use crate::support;

use mcp_tasks::{MemoryTaskStore, TaskId, ToolPolicy};
use serde_json::{Value, json};
use support::client::{Exchange, McpClient};
use support::layered::{Layered, USER_HEADER, ms, send, task_id, text};
use support::wait::{BOUND, wait_until};

/// The JSON-RPC id of every request whose bytes are compared.
const SAME_ID: u64 = 7;

/// Four layers over one store: scope `a`, its replica, scope `b` and none.
struct Scopes {
    a: Layered,
    replica: Layered,
    b: Layered,
    unscoped: Layered,
}

async fn scopes(configure: fn(mcp_tasks::TasksLayer) -> mcp_tasks::TasksLayer) -> Scopes {
    let store = MemoryTaskStore::new();
    let over = |scope: Option<&'static str>| {
        Layered::start_over(store.clone(), move |layer| {
            let layer = configure(layer);
            match scope {
                Some(scope) => layer.scope(scope),
                None => layer,
            }
        })
    };
    Scopes {
        a: over(Some("a")).await,
        replica: over(Some("a")).await,
        b: over(Some("b")).await,
        unscoped: over(None).await,
    }
}

fn user_headers(user: Option<&str>) -> Vec<(&str, &str)> {
    user.map(|user| (USER_HEADER, user)).into_iter().collect()
}

/// `method` on `task` as `user`, with the JSON-RPC id [`SAME_ID`].
async fn task_method(
    client: &McpClient,
    method: &str,
    task: &str,
    user: Option<&str>,
    answers: &Value,
) -> Exchange {
    let params = match method {
        "tasks/update" => json!({"taskId": task, "inputResponses": answers}),
        _ => json!({"taskId": task}),
    };
    send(client, SAME_ID, method, params, true, &user_headers(user)).await
}

/// `tools/call` as `user`; the task it parked as.
async fn park(client: &McpClient, user: Option<&str>, name: &str, arguments: Value) -> String {
    let params = json!({"name": name, "arguments": arguments});
    let headers = user_headers(user);
    let created = send(
        client,
        client.next_id(),
        "tools/call",
        params,
        true,
        &headers,
    )
    .await;
    task_id(&created.into_response())
}

/// Polls `tasks/get` as `user` until `task` is in `status`; the result.
async fn wait_as(client: &McpClient, task: &str, user: Option<&str>, status: &str) -> Value {
    wait_until(&format!("{task} is {status}"), BOUND, || async {
        let got = task_method(client, "tasks/get", task, user, &Value::Null).await;
        let got = got.into_response();
        if got["result"]["status"] == status {
            Ok(got["result"].clone())
        } else {
            Err(got)
        }
    })
    .await
}

/// A task id nobody ever issued.
fn never_issued() -> String {
    TaskId::generate().expect("OS random source").to_string()
}

fn assert_same_bytes(what: &str, reference: &Exchange, other: &Exchange) {
    assert_eq!(other.status, reference.status, "{what}: {}", other.body);
    assert_eq!(other.content_type(), reference.content_type(), "{what}");
    assert_eq!(other.body, reference.body, "{what}");
}

fn configure(layer: mcp_tasks::TasksLayer) -> mcp_tasks::TasksLayer {
    layer
        .threshold(ms(200))
        .tool_policy("confirm_delete", ToolPolicy::Always)
}

#[tokio::test]
async fn a_task_made_under_one_scope_answers_under_another_exactly_like_one_never_issued() {
    let scopes = scopes(configure).await;
    let (a, b) = (scopes.a.client(), scopes.b.client());
    let answers = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});

    for user in [Some("alice"), None] {
        let working = park(&a, user, "slow_compute", json!({"seconds": 30})).await;
        let asking = park(&a, user, "confirm_delete", json!({"filename": "f"})).await;
        wait_as(&a, &asking, user, "input_required").await;

        let unknown = never_issued();
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let reference = task_method(&b, method, &unknown, user, &answers).await;
            let error = reference.clone().into_response();
            assert_eq!(error["error"]["code"], -32602, "{method}: {error}");
            for (what, task) in [("working", &working), ("input_required", &asking)] {
                for (layer, client) in [("scope b", &b), ("no scope", &scopes.unscoped.client())] {
                    let other = task_method(client, method, task, user, &answers).await;
                    let what = format!("{method} of a {what} task through {layer} as {user:?}");
                    assert_same_bytes(&what, &reference, &other);
                }
            }
        }

        // Nothing that went through the other scopes touched the tasks.
        wait_as(&a, &working, user, "working").await;
        wait_as(&a, &asking, user, "input_required").await;
    }
    assert_eq!(scopes.a.probe.cancelled("slow_compute"), 0);
    assert_eq!(scopes.a.probe.started("confirm_delete"), 2, "not re-issued");
    for other in [&scopes.b, &scopes.unscoped] {
        assert_eq!(other.probe.started("confirm_delete"), 0);
        assert_eq!(other.probe.started("slow_compute"), 0);
    }
}

#[tokio::test]
async fn a_replica_with_the_same_scope_reads_updates_and_cancels_the_task() {
    let scopes = scopes(configure).await;
    let (a, replica) = (scopes.a.client(), scopes.replica.client());
    let alice = Some("alice");

    let working = park(&a, alice, "slow_compute", json!({"seconds": 30})).await;
    let seen = wait_as(&replica, &working, alice, "working").await;
    assert_eq!(seen["taskId"], working.as_str());

    let asking = park(&a, alice, "confirm_delete", json!({"filename": "g"})).await;
    wait_as(&a, &asking, alice, "input_required").await;
    let answers = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});
    let updated = task_method(&replica, "tasks/update", &asking, alice, &answers).await;
    assert_eq!(
        updated.into_response()["result"],
        json!({"resultType": "complete"})
    );
    // The replica re-issued the call, on its own inner server.
    assert!(
        scopes
            .replica
            .probe
            .wait_finished("confirm_delete", BOUND)
            .await
    );
    let done = wait_as(&a, &asking, alice, "completed").await;
    assert!(text(&done["result"]).starts_with("Deleted g"), "{done}");

    let cancelled = task_method(&replica, "tasks/cancel", &working, alice, &json!({})).await;
    assert_eq!(
        cancelled.into_response()["result"],
        json!({"resultType": "complete"})
    );
    // The call runs under the layer that parked it, which stops it.
    assert!(scopes.a.probe.wait_cancelled("slow_compute", BOUND).await);
}
