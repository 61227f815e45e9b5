//! End to end over loopback HTTP: the task methods the layer answers itself,
//! `server/discover`, and what the inner server gets to see.

use crate::support;

use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{self, FixtureMode};
use support::layered::{Layered, error_of, ms, task_id, text};
use support::wait::{BOUND, wait_until};

/// The acknowledgement of `tasks/cancel` and `tasks/update`, exactly.
fn ack() -> Value {
    json!({"resultType": "complete"})
}

#[tokio::test]
async fn cancel_acks_empty_ends_the_task_cancelled_and_cancels_the_inner_call() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();

    let created = client
        .call_tool("slow_compute", json!({"seconds": 30}), true)
        .await;
    let id = task_id(&created);
    assert_eq!(layered.probe.running("slow_compute"), 1);

    let cancelled = client.tasks_cancel(&id).await;
    assert_eq!(cancelled["result"], ack(), "{cancelled}");
    let polled = client.tasks_get(&id).await;
    assert_eq!(polled["result"]["status"], "cancelled", "{polled}");
    for absent in ["result", "error", "inputRequests"] {
        assert!(polled["result"].get(absent).is_none(), "{polled}");
    }
    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner handler was not cancelled: {:?}",
        layered.probe.stats("slow_compute")
    );

    // Cancelling a terminal task acks the same and changes nothing.
    let again = client.tasks_cancel(&id).await;
    assert_eq!(again["result"], ack(), "{again}");
    let still = client.tasks_get(&id).await;
    assert_eq!(still["result"], polled["result"]);
    assert_eq!(layered.probe.finished("slow_compute"), 0);
}

#[tokio::test]
async fn a_late_outcome_never_changes_a_cancelled_task() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();

    let created = client
        .call_tool("slow_compute", json!({"seconds": 0.6}), true)
        .await;
    let id = task_id(&created);
    assert_eq!(client.tasks_cancel(&id).await["result"], ack());
    let cancelled = client.tasks_get(&id).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");

    // The inner call is over (cancelled, or answered late): nothing more
    // can reach the task.
    let settled = layered
        .probe
        .wait_until(BOUND, |probe| {
            probe.cancelled("slow_compute") + probe.finished("slow_compute") > 0
        })
        .await;
    assert!(settled, "the inner call never ended");
    let later = client.tasks_get(&id).await;
    assert_eq!(later["result"], cancelled["result"], "the task changed");
    assert_eq!(layered.probe.finished("slow_compute"), 0);
}

#[tokio::test]
async fn cancelling_a_completed_task_acks_and_keeps_its_result() {
    let layered =
        Layered::start(|layer| layer.tool_policy("greet", mcp_tasks::ToolPolicy::Always)).await;
    let client = layered.client();

    let id = task_id(&client.call_tool("greet", json!({"name": "c"}), true).await);
    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");

    assert_eq!(client.tasks_cancel(&id).await["result"], ack());
    let after = client.tasks_get(&id).await;
    assert_eq!(after["result"], done["result"]);
}

#[tokio::test]
async fn task_methods_from_a_non_declaring_client_answer_400_missing_capability() {
    let layered =
        Layered::start(|layer| layer.tool_policy("greet", mcp_tasks::ToolPolicy::Always)).await;
    let client = layered.client();
    let id = task_id(&client.call_tool("greet", json!({"name": "n"}), true).await);

    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/cancel", json!({"taskId": id})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
    ] {
        let exchange = client.request(method, params, false).await;
        assert_eq!(exchange.status, 400, "{method}: {}", exchange.body);
        let response = exchange.into_response();
        let error = error_of(&response, -32021);
        assert_eq!(
            error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json!({}),
            "{method}: {response}"
        );
    }
    // None of them touched the task.
    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
}

#[tokio::test]
async fn tasks_list_and_tasks_result_answer_404_method_not_found() {
    let layered =
        Layered::start(|layer| layer.tool_policy("greet", mcp_tasks::ToolPolicy::Always)).await;
    let client = layered.client();
    let id = task_id(&client.call_tool("greet", json!({"name": "l"}), true).await);

    for (method, params) in [
        ("tasks/list", json!({})),
        ("tasks/result", json!({"taskId": id})),
    ] {
        for declare in [true, false] {
            let exchange = client.request(method, params.clone(), declare).await;
            assert_eq!(exchange.status, 404, "{method}: {}", exchange.body);
            error_of(&exchange.into_response(), -32601);
        }
    }
}

#[tokio::test]
async fn an_unknown_task_id_answers_invalid_params_on_every_task_method() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();

    for unknown in ["0123456789abcdef0123456789abcdef", "no-such-task"] {
        for (method, params) in [
            ("tasks/get", json!({"taskId": unknown})),
            ("tasks/cancel", json!({"taskId": unknown})),
            (
                "tasks/update",
                json!({"taskId": unknown, "inputResponses": {"k": {}}}),
            ),
        ] {
            let exchange = client.request(method, params, true).await;
            assert_eq!(exchange.status, 200, "{method}: {}", exchange.body);
            let response = exchange.into_response();
            let error = error_of(&response, -32602);
            assert_eq!(error["message"], "Failed to retrieve task: Task not found");
        }
    }
}

#[tokio::test]
async fn tasks_update_on_a_working_task_acks_and_changes_nothing() {
    let layered = Layered::start(|layer| layer.threshold(ms(200))).await;
    let client = layered.client();

    let id = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 0.8}), true)
            .await,
    );
    let before = client.tasks_get(&id).await;
    assert_eq!(before["result"]["status"], "working", "{before}");

    let updated = client
        .tasks_update(&id, json!({"whatever": {"action": "accept"}}))
        .await;
    assert_eq!(updated["result"], ack(), "{updated}");
    let after = client.tasks_get(&id).await;
    assert_eq!(
        after["result"], before["result"],
        "the update changed the task"
    );
    assert_eq!(
        layered.probe.started("slow_compute"),
        1,
        "the call was re-issued"
    );

    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(
        text(&done["result"]["result"]),
        "slow_compute done after 0.8s"
    );
    assert_eq!(layered.probe.started("slow_compute"), 1);
}

#[tokio::test]
async fn server_discover_advertises_the_tasks_extension_and_keeps_the_fixture_capabilities() {
    let layered = Layered::start(|layer| layer).await;
    let (bare, _probe) = fixture::serve_fixture(FixtureMode::Stateless).await;

    let discovered = layered.client().discover().await;
    let mut result = discovered["result"].clone();
    assert_eq!(
        result["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{discovered}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        fixture::SERVER_NAME
    );
    assert_eq!(result["capabilities"]["tools"], json!({}), "{discovered}");

    // Everything else is what the fixture itself answers.
    let extensions = result["capabilities"]
        .as_object_mut()
        .expect("capabilities")
        .remove("extensions")
        .expect("extensions");
    assert_eq!(extensions.as_object().map(|e| e.len()), Some(1));
    let plain = McpClient::new(&bare.url).discover().await;
    assert_eq!(result, plain["result"]);
}

#[tokio::test]
async fn the_inner_server_never_sees_the_tasks_extension() {
    use mcp_tasks::ToolPolicy;

    for policy in [ToolPolicy::Threshold, ToolPolicy::Never, ToolPolicy::Always] {
        let layered = Layered::start(|layer| layer.tool_policy("echo_meta", policy)).await;
        let client = layered.client().with_capabilities(json!({
            "elicitation": {},
            "extensions": {"com.example/other": {"k": 1}},
        }));
        let sent = client.meta(true);
        assert!(sent.to_string().contains("io.modelcontextprotocol/tasks"));

        let response = client.call_tool("echo_meta", json!({}), true).await;
        let result = if policy == ToolPolicy::Always {
            let id = task_id(&response);
            let done = client
                .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
                .await;
            done["result"]["result"].clone()
        } else {
            response["result"].clone()
        };
        // Exactly the client's _meta without the tasks key, other extensions
        // kept; a call the layer may park also carries its progress token.
        let expected = client.meta(false);
        let mut echoed: Value = serde_json::from_str(text(&result)).expect("meta JSON");
        let token = echoed
            .as_object_mut()
            .and_then(|m| m.remove("progressToken"));
        match policy {
            ToolPolicy::Never => assert_eq!(token, None),
            _ => {
                let token = token.unwrap_or_else(|| panic!("{policy:?}: no token"));
                assert!(token.as_str().is_some_and(|t| t.starts_with("mcp-tasks/")));
            }
        }
        assert_eq!(echoed, expected, "{policy:?}");
        let last = layered.probe.last_meta("echo_meta").map(|mut meta| {
            meta.as_object_mut().map(|m| m.remove("progressToken"));
            meta
        });
        assert_eq!(last, Some(expected), "{policy:?}");
    }
}

#[tokio::test]
async fn requests_the_layer_does_not_own_reach_the_inner_server_unchanged() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();

    // tools/list is forwarded, whether or not the client declared tasks.
    for declare in [true, false] {
        let listed = client
            .request("tools/list", json!({}), declare)
            .await
            .into_response();
        let tools = listed["result"]["tools"].as_array().expect("tools");
        assert_eq!(tools.len(), fixture::tools().len(), "{listed}");
    }
    // The headers the inner server sees are the client's.
    let response = client.call_tool("echo_headers", json!({}), true).await;
    let headers: Value = serde_json::from_str(text(&response["result"])).expect("headers");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "echo_headers");
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
}

#[tokio::test]
async fn a_task_still_running_at_its_ttl_fails_with_the_reason_first_then_reads_as_unknown() {
    // TTL 400 ms: the task is failed a quarter of it (100 ms) before.
    let layered = Layered::start(|layer| layer.threshold(ms(100)).ttl(Some(ms(400)))).await;
    let client = layered.client();

    let created = client
        .call_tool("slow_compute", json!({"seconds": 30}), true)
        .await;
    assert_eq!(created["result"]["ttlMs"], 400, "{created}");
    let id = task_id(&created);
    assert_eq!(client.tasks_get(&id).await["result"]["status"], "working");

    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner call outlived its task: {:?}",
        layered.probe.stats("slow_compute")
    );
    let failed = client.tasks_get(&id).await;
    if failed.get("result").is_some() {
        // Read within the grace: failed, with the reason, never just gone.
        assert_eq!(failed["result"]["status"], "failed", "{failed}");
        let message = failed["result"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("TTL ran out"), "{failed}");
    }
    let gone = wait_until("the expired task reads as unknown", BOUND, || async {
        let read = client.tasks_get(&id).await;
        read.get("error").is_some().then_some(read)
    })
    .await;
    let error = error_of(&gone, -32602);
    assert_eq!(error["message"], "Failed to retrieve task: Task not found");
    wait_until("the expired task is reclaimed", BOUND, || async {
        layered.store.is_empty()
    })
    .await;
}
