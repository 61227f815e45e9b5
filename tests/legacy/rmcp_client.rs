//! A real 2025-11-25 client, rmcp 2.2, against the layer in front of the rmcp
//! 3.x fixture in session mode. The client sends raw task requests; its own
//! handler answers the elicitation the layer relays on the `tasks/result`
//! stream, as a 2025-11-25 client does.

use crate::support;

use serde_json::{Value, json};
use support::client::{ElicitReply, LegacyClient};
use support::layered::{Layered, USER_HEADER, ms, text};
use support::wait::{BOUND, next_millisecond, wait_until};

const RELATED: &str = "io.modelcontextprotocol/related-task";

async fn status(client: &LegacyClient, task: &str) -> String {
    let got = client
        .request("tasks/get", json!({"taskId": task}))
        .await
        .expect("tasks/get");
    got["status"].as_str().unwrap_or_default().to_owned()
}

/// The params of every `notifications/tasks/status` the client received.
fn status_notifications(client: &LegacyClient) -> Vec<Value> {
    client
        .wire()
        .notifications()
        .into_iter()
        .filter(|n| n["method"] == "notifications/tasks/status")
        .map(|n| n["params"].clone())
        .collect()
}

async fn start(client: &LegacyClient, name: &str, arguments: Value) -> String {
    let created = client
        .request(
            "tools/call",
            json!({"name": name, "arguments": arguments, "task": {"ttl": 60_000}}),
        )
        .await
        .expect("task-augmented tools/call");
    assert_eq!(created["task"]["status"], "working", "{created}");
    assert_eq!(created["task"]["ttl"], 60_000, "{created}");
    created["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

#[tokio::test]
async fn an_rmcp_2_2_client_sees_tasks_advertised_and_runs_one_to_its_result() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let client = LegacyClient::connect(&layered.served.url).await;
    let tasks = &client.server_capabilities()["tasks"];
    assert_eq!(tasks["requests"]["tools"]["call"], json!({}), "{tasks}");
    assert_eq!(tasks["cancel"], json!({}));
    let typed = client.peer_info().expect("typed initialize result");
    assert!(
        typed.capabilities.tasks.is_some(),
        "rmcp 2.2 reads the capability"
    );

    let tools = client
        .request("tools/list", json!({}))
        .await
        .expect("tools");
    assert!(
        tools["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .all(|tool| tool["execution"]["taskSupport"] == "optional"),
        "{tools}"
    );

    let id = start(&client, "slow_compute", json!({"seconds": 0.5})).await;
    assert_eq!(status(&client, &id).await, "working");
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("tasks/result");
    assert_eq!(text(&result), "slow_compute done after 0.5s", "{result}");
    assert_eq!(result["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(status(&client, &id).await, "completed");

    // A plain call in the same session is untouched.
    let greet = client
        .request(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "r"}}),
        )
        .await
        .expect("greet");
    assert_eq!(text(&greet), "Hello, r!");
    client.close().await;
}

#[tokio::test]
async fn the_clients_own_handler_answers_an_elicitation_relayed_on_tasks_result() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let client = LegacyClient::connect_with(
        &layered.served.url,
        ElicitReply::Accept(json!({"confirm": true})),
    )
    .await;
    let id = start(&client, "confirm_delete", json!({"filename": "b.txt"})).await;
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("tasks/result");
    assert!(text(&result).starts_with("Deleted b.txt"), "{result}");

    let asked = client.received();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(asked[0]["params"]["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(layered.probe.finished("confirm_delete"), 1);
    client.close().await;
}

#[tokio::test]
async fn a_declined_elicitation_reaches_the_tool_and_is_error_fails_the_task() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let client = LegacyClient::connect_with(&layered.served.url, ElicitReply::Decline).await;
    let id = start(&client, "confirm_delete", json!({"filename": "c.txt"})).await;
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("tasks/result");
    assert!(!text(&result).starts_with("Deleted"), "{result}");

    let failing = start(&client, "failing_job", json!({"seconds": 0.1})).await;
    let outcome = client
        .request("tasks/result", json!({"taskId": failing}))
        .await
        .expect("the isError result, verbatim");
    assert_eq!(outcome["isError"], true, "{outcome}");
    assert_eq!(status(&client, &failing).await, "failed");
    client.close().await;
}

#[tokio::test]
async fn cancel_and_list_as_an_authenticated_rmcp_2_2_client() {
    let layered = Layered::start_sessions(|layer| layer.list_page_size(2)).await;
    let alice = LegacyClient::connect_with_headers(
        &layered.served.url,
        ElicitReply::default(),
        &[(USER_HEADER, "alice")],
    )
    .await;
    let bob = LegacyClient::connect_with_headers(
        &layered.served.url,
        ElicitReply::default(),
        &[(USER_HEADER, "bob")],
    )
    .await;
    assert_eq!(alice.server_capabilities()["tasks"]["list"], json!({}));

    // Lists are ordered by creation time (in ms), then id: start a ms apart.
    let running = start(&alice, "slow_compute", json!({"seconds": 30})).await;
    next_millisecond().await;
    let quick = start(&alice, "greet", json!({"name": "q"})).await;
    next_millisecond().await;
    let third = start(&alice, "greet", json!({"name": "z"})).await;
    start(&bob, "greet", json!({"name": "b"})).await;
    assert!(layered.probe.wait_started("slow_compute", BOUND).await);

    let cancelled = alice
        .request("tasks/cancel", json!({"taskId": running}))
        .await
        .expect("tasks/cancel");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(layered.probe.wait_cancelled("slow_compute", BOUND).await);

    let first = alice
        .request("tasks/list", json!({}))
        .await
        .expect("page 1");
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = alice
        .request("tasks/list", json!({"cursor": cursor}))
        .await
        .expect("page 2");
    assert!(second.get("nextCursor").is_none(), "{second}");
    let ids: Vec<&str> = first["tasks"]
        .as_array()
        .into_iter()
        .chain(second["tasks"].as_array())
        .flatten()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert_eq!(ids, [running.as_str(), quick.as_str(), third.as_str()]);

    let (code, _, _) = alice
        .request("tasks/list", json!({"cursor": "forged"}))
        .await
        .expect_err("a bad cursor");
    assert_eq!(code, -32602);
    alice.close().await;
    bob.close().await;
}

#[tokio::test]
async fn an_rmcp_2_2_and_an_rmcp_3_client_use_one_layer_concurrently() {
    use rmcp::model::{CallToolResponse, TaskPayload};

    let layered = Layered::start_sessions(|layer| layer.threshold(ms(200))).await;
    let old = LegacyClient::connect(&layered.served.url).await;
    let new = support::client::RmcpClient::connect(&layered.served.url, true).await;

    let legacy_side = async {
        let id = start(
            &old,
            "slow_compute",
            json!({"seconds": 0.8, "label": "old"}),
        )
        .await;
        let result = old
            .request("tasks/result", json!({"taskId": id}))
            .await
            .expect("tasks/result");
        text(&result).to_owned()
    };
    let modern_side = async {
        let created = new
            .call_tool_once("slow_compute", json!({"seconds": 0.8, "label": "new"}))
            .await
            .expect("tools/call");
        let CallToolResponse::Task(created) = created else {
            panic!("a slow call from a declaring client becomes a task: {created:?}");
        };
        let polled = wait_until("the 2026-07-28 task ends", BOUND, || async {
            let polled = new
                .tasks_get(&created.task.task_id)
                .await
                .expect("tasks/get");
            polled.task.status().is_terminal().then_some(polled)
        })
        .await;
        let TaskPayload::Completed { result } = polled.task.payload else {
            panic!("not completed: {:?}", polled.task.payload);
        };
        serde_json::to_value(result).expect("result JSON")
    };
    let (old_text, new_result) = tokio::join!(legacy_side, modern_side);
    assert_eq!(old_text, "old done after 0.8s");
    assert_eq!(text(&new_result), "new done after 0.8s", "{new_result}");
    assert_eq!(layered.probe.finished("slow_compute"), 2);
    old.close().await;
    new.close().await;
}

#[tokio::test]
async fn a_waiting_tasks_result_stream_carries_the_status_notification() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let client = LegacyClient::connect_with(
        &layered.served.url,
        ElicitReply::Accept(json!({"confirm": true})),
    )
    .await;
    let id = start(&client, "confirm_delete", json!({"filename": "s.txt"})).await;
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("tasks/result");
    assert!(text(&result).starts_with("Deleted s.txt"), "{result}");

    let statuses = status_notifications(&client);
    let seen: Vec<&str> = statuses
        .iter()
        .map(|p| p["status"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(seen.last(), Some(&"completed"), "{statuses:?}");
    for params in &statuses {
        assert_eq!(params["taskId"], id.as_str(), "{params}");
        assert_eq!(params["ttl"], 60_000, "the 2025-11-25 task shape: {params}");
        assert!(params.get("resultType").is_none(), "{params}");
    }
    client.close().await;
}

#[tokio::test]
async fn the_sessions_get_stream_carries_the_status_of_its_tasks() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let client = LegacyClient::connect(&layered.served.url).await;
    let id = start(&client, "slow_compute", json!({"seconds": 0.5})).await;
    // Polled to the end: no tasks/result stream is open.
    wait_until("the task completes", BOUND, || async {
        status(&client, &id).await == "completed"
    })
    .await;
    let is_completed = |p: &Value| p["taskId"] == id.as_str() && p["status"] == "completed";
    let pushed = wait_until("the completion is pushed", BOUND, || async {
        let pushed = status_notifications(&client);
        pushed.iter().any(is_completed).then_some(pushed)
    })
    .await;
    let completed: Vec<&Value> = pushed
        .iter()
        .filter(|p| p["taskId"] == id.as_str() && p["status"] == "completed")
        .collect();
    assert_eq!(completed.len(), 1, "{pushed:?}");
    assert_eq!(completed[0]["ttl"], 60_000, "{pushed:?}");
    client.close().await;
}
