//! End to end over loopback HTTP: a tool that asks for input (MRTR) after its
//! call became a task puts the task in `input_required`; `tasks/update`
//! answers it and the layer re-issues the call.

use crate::support;

use mcp_tasks::ToolPolicy;
use serde_json::{Value, json};
use support::client::McpClient;
use support::layered::{Layered, USER_HEADER, get_as, ms, send, task_id, text};
use support::wait::{BOUND, wait_until};

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Starts with `tools` parked at once (`Always`).
async fn start(tools: &[&'static str]) -> (Layered, McpClient) {
    let layered = Layered::start(|layer| {
        tools.iter().fold(layer.threshold(ms(300)), |layer, tool| {
            layer.tool_policy(*tool, ToolPolicy::Always)
        })
    })
    .await;
    let client = layered
        .client()
        .with_capabilities(json!({"elicitation": {}}));
    (layered, client)
}

async fn wait_input(client: &McpClient, task: &str) -> Value {
    let polled = client
        .wait_task_status(task, &["input_required", "completed", "failed"], BOUND)
        .await;
    assert_eq!(polled["result"]["status"], "input_required", "{polled}");
    polled["result"].clone()
}

async fn wait_done(client: &McpClient, task: &str) -> Value {
    let polled = client
        .wait_task_status(task, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(polled["result"]["status"], "completed", "{polled}");
    polled["result"].clone()
}

#[tokio::test]
async fn a_parked_tool_that_asks_for_input_waits_in_input_required_until_tasks_update() {
    let (layered, client) = start(&["confirm_delete"]).await;

    let created = client
        .call_tool("confirm_delete", json!({"filename": "notes.txt"}), true)
        .await;
    let task = task_id(&created);
    let waiting = wait_input(&client, &task).await;
    let requests = waiting["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["1.confirm"],
        "{waiting}"
    );
    assert_eq!(requests["1.confirm"]["method"], "elicitation/create");
    assert!(waiting.get("requestState").is_none(), "{waiting}");

    let answer = accept(json!({"confirm": true}));
    let ack = client
        .tasks_update(&task, json!({"1.confirm": answer}))
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let done = wait_done(&client, &task).await;
    assert!(
        text(&done["result"]).starts_with("Deleted notes.txt"),
        "{done}"
    );

    // The re-issued call carried the answer under the tool's own key.
    let stats = layered.probe.stats("confirm_delete");
    assert_eq!(stats.started, 2, "{stats:?}");
    assert_eq!(
        stats.last_input_responses,
        Some(json!({"confirm": answer})),
        "{stats:?}"
    );
    assert!(stats.last_request_state.is_some(), "{stats:?}");
    // With the params as forwarded: the client's other capabilities, not
    // the tasks extension the layer serves itself.
    let meta = stats.last_meta.expect("the re-issued call's _meta");
    let capabilities = &meta["io.modelcontextprotocol/clientCapabilities"];
    assert!(capabilities.is_object(), "{meta}");
    assert!(
        capabilities["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_none(),
        "{meta}"
    );
}

#[tokio::test]
async fn a_partial_answer_keeps_the_rest_outstanding_and_unknown_keys_are_ignored() {
    let (layered, client) = start(&["multi_input"]).await;

    let task = task_id(&client.call_tool("multi_input", json!({}), true).await);
    let waiting = wait_input(&client, &task).await;
    let mut keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["1.first", "1.second"], "{waiting}");

    let partial = json!({"1.first": accept(json!({"value": "a"})), "bogus": {}});
    let ack = client.tasks_update(&task, partial).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let still = wait_input(&client, &task).await;
    let pending: Vec<&String> = still["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    assert_eq!(pending, ["1.second"], "{still}");
    assert_eq!(
        layered.probe.started("multi_input"),
        1,
        "re-issued too early"
    );

    let rest = json!({"1.second": accept(json!({"value": "b"}))});
    client.tasks_update(&task, rest).await;
    let done = wait_done(&client, &task).await;
    let summary = text(&done["result"]);
    assert!(
        summary.contains(r#""value":"a""#) && summary.contains(r#""value":"b""#),
        "{done}"
    );
}

#[tokio::test]
async fn every_round_gets_keys_unique_for_the_life_of_the_task() {
    let (_layered, client) = start(&["two_rounds"]).await;

    let task = task_id(&client.call_tool("two_rounds", json!({}), true).await);
    for (round, answer) in [(1, "one"), (2, "two")] {
        let key = format!("{round}.answer");
        // The completed round is gone at once: the ack came after the store moved on.
        let waiting = wait_input(&client, &task).await;
        let keys: Vec<&String> = waiting["inputRequests"]
            .as_object()
            .expect("inputRequests")
            .keys()
            .collect();
        assert_eq!(keys, [&key], "{waiting}");
        let answers = json!({ key: accept(json!({"answer": answer})) });
        client.tasks_update(&task, answers).await;
    }
    let done = wait_done(&client, &task).await;
    let summary = text(&done["result"]);
    assert!(summary.contains("one") && summary.contains("two"), "{done}");
}

#[tokio::test]
async fn load_shedding_after_parking_is_retried_without_asking_the_client() {
    let (layered, client) = start(&["shed_once"]).await;

    let task = task_id(&client.call_tool("shed_once", json!({}), true).await);
    let done = wait_done(&client, &task).await;
    assert_eq!(text(&done["result"]), "shed_once done after load shedding");
    assert_eq!(layered.probe.started("shed_once"), 2);
}

#[tokio::test]
async fn input_asked_before_the_threshold_stays_synchronous_and_the_retry_may_park() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(300))
            .tool_policy("test_tool_with_task", ToolPolicy::Required)
    })
    .await;
    let client = layered
        .client()
        .with_capabilities(json!({"elicitation": {}}));

    let asked = client
        .call_tool("test_tool_with_task", json!({}), true)
        .await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    assert!(
        layered.store.is_empty(),
        "a synchronous round became a task"
    );

    let retry = json!({
        "inputResponses": {"name": accept(json!({"name": "Ada"}))},
        "requestState": asked["result"]["requestState"],
    });
    let parked = client
        .call_tool_with("test_tool_with_task", json!({}), retry, true)
        .await
        .into_response();
    let task = task_id(&parked);
    let done = wait_done(&client, &task).await;
    assert!(text(&done["result"]).contains("Hello, Ada!"), "{done}");
}

#[tokio::test]
async fn a_task_cancelled_while_waiting_for_input_is_never_resumed() {
    let (layered, client) = start(&["confirm_delete"]).await;

    let task = task_id(
        &client
            .call_tool("confirm_delete", json!({"filename": "x"}), true)
            .await,
    );
    wait_input(&client, &task).await;
    let cancelled = client.tasks_cancel(&task).await;
    assert_eq!(cancelled["result"], json!({"resultType": "complete"}));

    let late = json!({"1.confirm": accept(json!({"confirm": true}))});
    let ack = client.tasks_update(&task, late.clone()).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");

    // A witness answered after it is resumed and done: a resume of the
    // cancelled task, started first, would have been counted by then.
    let witness = task_id(
        &client
            .call_tool("confirm_delete", json!({"filename": "y"}), true)
            .await,
    );
    wait_input(&client, &witness).await;
    client.tasks_update(&witness, late).await;
    wait_done(&client, &witness).await;
    let polled = client.tasks_get(&task).await;
    assert_eq!(polled["result"]["status"], "cancelled", "{polled}");
    // Its own call, and the witness's two.
    assert_eq!(layered.probe.started("confirm_delete"), 3, "it was resumed");
}

#[tokio::test]
async fn only_the_owner_can_answer_a_task_waiting_for_input() {
    let layered =
        Layered::start_with_users(|layer| layer.tool_policy("confirm_delete", ToolPolicy::Always))
            .await;
    let client = layered
        .client()
        .with_capabilities(json!({"elicitation": {}}));

    let params = json!({"name": "confirm_delete", "arguments": {"filename": "f"}});
    let created = send(
        &client,
        1,
        "tools/call",
        params,
        true,
        &[(USER_HEADER, "alice")],
    )
    .await;
    let task = task_id(&created.into_response());
    let status =
        |exchange: support::client::Exchange| exchange.into_response()["result"]["status"].clone();
    let asking = wait_until("the task leaves working", BOUND, || async {
        let now = status(get_as(&client, 2, &task, Some("alice")).await);
        (now != "working").then_some(now)
    })
    .await;
    assert_eq!(asking, "input_required");

    let answer = json!({"taskId": task,
                        "inputResponses": {"1.confirm": accept(json!({"confirm": true}))}});
    for user in ["bob", "mallory"] {
        let refused = send(
            &client,
            3,
            "tasks/update",
            answer.clone(),
            true,
            &[(USER_HEADER, user)],
        )
        .await;
        assert_eq!(refused.into_response()["error"]["code"], -32602);
    }
    assert_eq!(
        layered.probe.started("confirm_delete"),
        1,
        "resumed by a stranger"
    );
    assert_eq!(
        status(get_as(&client, 2, &task, Some("alice")).await),
        "input_required"
    );

    let ack = send(
        &client,
        4,
        "tasks/update",
        answer,
        true,
        &[(USER_HEADER, "alice")],
    )
    .await;
    assert_eq!(
        ack.into_response()["result"],
        json!({"resultType": "complete"})
    );
    wait_until("the answered task completes", BOUND, || async {
        status(get_as(&client, 2, &task, Some("alice")).await) == "completed"
    })
    .await;
    let done = get_as(&client, 2, &task, Some("alice"))
        .await
        .into_response();
    assert!(
        text(&done["result"]["result"]).starts_with("Deleted f"),
        "{done}"
    );
}
