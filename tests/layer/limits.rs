//! End to end over loopback HTTP: the limits of the layer (issue #10). At a
//! cap nothing is dropped: a 2026-07-28 call that would park stays
//! synchronous and its client gets the tool's real answer; a task that runs
//! too long, answers too much or asks too often ends `failed` with the reason.

use crate::support;

use mcp_tasks::ToolPolicy;
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{self, FixtureMode, FixtureOptions};
use support::layered::{Layered, USER_HEADER, ms, send, task_id, text};
use support::wait::{BOUND, wait_until};

const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// `tools/call` as `user` (`None`: anonymous); the response.
async fn call_as(client: &McpClient, user: Option<&str>, name: &str, arguments: Value) -> Value {
    let extra: Vec<(&str, &str)> = user.map(|user| (USER_HEADER, user)).into_iter().collect();
    let params = json!({"name": name, "arguments": arguments});
    let exchange = send(client, client.next_id(), "tools/call", params, true, &extra).await;
    exchange.into_response()
}

/// A 30 s `slow_compute` as `user`, which must park; its task id.
async fn park(client: &McpClient, user: Option<&str>) -> String {
    let created = call_as(client, user, "slow_compute", json!({"seconds": 30})).await;
    task_id(&created)
}

/// Asserts that a `slow_compute` of `seconds` as `user` stayed synchronous:
/// no task, the tool's own answer once its whole run is done.
async fn assert_synchronous(client: &McpClient, user: Option<&str>, seconds: f64) {
    let answer = call_as(client, user, "slow_compute", json!({"seconds": seconds})).await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        text(&answer["result"]),
        format!("slow_compute done after {seconds}s")
    );
}

/// Waits for `task` to end; its `tasks/get` result.
async fn terminal(client: &McpClient, task: &str) -> Value {
    client.wait_task_status(task, &TERMINAL, BOUND).await["result"].clone()
}

/// Asserts that `task` (a `tasks/get` result) failed with `-32603` and a
/// message containing `reason`.
fn assert_failed(task: &Value, reason: &str) {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], -32603, "{task}");
    let message = task["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(reason), "{reason:?} not in {task}");
    assert_eq!(task["statusMessage"], task["error"]["message"], "{task}");
}

#[tokio::test]
async fn a_principal_at_its_task_cap_gets_its_answer_synchronously_while_others_still_park() {
    let layered = Layered::start_with_users(|layer| {
        layer.threshold(ms(200)).max_tasks_per_principal(Some(2))
    })
    .await;
    let client = layered.client();

    park(&client, Some("alice")).await;
    park(&client, Some("alice")).await;
    assert_synchronous(&client, Some("alice"), 1.0).await;
    park(&client, Some("bob")).await;

    assert_eq!(layered.store.len(), 3, "one task per parked call");
    assert_eq!(layered.probe.finished("slow_compute"), 1);
    assert_eq!(layered.probe.running("slow_compute"), 3);
}

#[tokio::test]
async fn anonymous_callers_share_one_task_count() {
    let layered = Layered::start_with_users(|layer| {
        layer.threshold(ms(200)).max_tasks_per_principal(Some(1))
    })
    .await;

    park(&layered.client(), None).await;
    // Another client, another connection: still the same anonymous count.
    assert_synchronous(&layered.client(), None, 0.6).await;
    park(&layered.client(), Some("alice")).await;
    assert_eq!(layered.store.len(), 2);
}

#[tokio::test]
async fn a_finished_task_counts_against_the_cap_until_its_ttl() {
    let layered = Layered::start(|layer| {
        layer
            .ttl(Some(ms(3000)))
            .max_tasks_per_principal(Some(1))
            .tool_policy("greet", ToolPolicy::Always)
    })
    .await;
    let client = layered.client();
    let greet = || call_as(&client, None, "greet", json!({"name": "q"}));

    let task = task_id(&greet().await);
    assert_eq!(terminal(&client, &task).await["status"], "completed");
    let refused = greet().await;
    // Still there after the refusal, so there during it.
    let first = client.tasks_get(&task).await;
    assert_eq!(
        first["result"]["status"], "completed",
        "the task expired before the refusal could show anything: {first}"
    );
    assert_eq!(refused["result"]["resultType"], "complete", "{refused}");
    assert_eq!(text(&refused["result"]), "Hello, q!");

    // Once its TTL ran out, the next call parks again; not before.
    let admitted = wait_until(
        "a call parks once the first task expired",
        BOUND,
        || async {
            let answer = greet().await;
            (answer["result"]["resultType"] == "task").then_some(answer)
        },
    )
    .await;
    task_id(&admitted);
    let gone = client.tasks_get(&task).await;
    assert!(
        gone.get("error").is_some(),
        "admitted while {task} lived: {gone}"
    );
}

#[tokio::test]
async fn the_total_task_cap_counts_every_principal_together() {
    let layered = Layered::start_with_users(|layer| {
        layer
            .threshold(ms(200))
            .max_tasks_per_principal(None)
            .max_tasks(Some(2))
    })
    .await;
    let client = layered.client();

    park(&client, Some("alice")).await;
    park(&client, Some("bob")).await;
    assert_synchronous(&client, Some("carol"), 0.6).await;
    assert_eq!(layered.store.len(), 2);
}

#[tokio::test]
async fn with_one_running_place_a_second_slow_call_stays_synchronous_until_the_first_ends() {
    let layered = Layered::start_with_users(|layer| layer.threshold(ms(200)).max_running(1)).await;
    let client = layered.client();

    let first = park(&client, Some("alice")).await;
    assert_synchronous(&client, Some("bob"), 0.6).await;

    let cancelled = send(
        &client,
        client.next_id(),
        "tasks/cancel",
        json!({"taskId": first}),
        true,
        &[(USER_HEADER, "alice")],
    )
    .await
    .into_response();
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    assert!(layered.probe.wait_cancelled("slow_compute", BOUND).await);
    // The place is free again.
    park(&client, Some("bob")).await;
}

#[tokio::test]
async fn a_parked_result_larger_than_max_result_bytes_fails_the_task_saying_so() {
    let sse = Layered::start(configure_small_results).await;
    let json = Layered::start_json(configure_small_results).await;
    for layered in [&sse, &json] {
        let client = layered.client();
        let small = call_as(
            &client,
            None,
            "big_result",
            json!({"bytes": 500, "seconds": 0.5}),
        )
        .await;
        let big = call_as(
            &client,
            None,
            "big_result",
            json!({"bytes": 4096, "seconds": 0.5}),
        )
        .await;

        let small = terminal(&client, &task_id(&small)).await;
        assert_eq!(small["status"], "completed", "{small}");
        assert_eq!(text(&small["result"]).len(), 500);
        let big = terminal(&client, &task_id(&big)).await;
        assert_failed(&big, "larger than");
        assert!(
            big["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("1024 bytes"),
            "{big}"
        );
    }
}

fn configure_small_results(layer: mcp_tasks::TasksLayer) -> mcp_tasks::TasksLayer {
    layer.threshold(ms(150)).max_result_bytes(1024)
}

#[tokio::test]
async fn a_synchronous_json_answer_larger_than_max_result_bytes_is_relayed_unchanged() {
    let layered = Layered::start_json(|layer| layer.max_result_bytes(1024)).await;
    let options = FixtureOptions::new(FixtureMode::Stateless).json_response(true);
    let bare = fixture::serve(fixture::service_with(options, fixture::Probe::new())).await;

    let params = json!({"name": "big_result", "arguments": {"bytes": 100_000}});
    let through = send(
        &layered.client(),
        9,
        "tools/call",
        params.clone(),
        true,
        &[],
    )
    .await;
    let direct = send(
        &McpClient::new(&bare.url),
        9,
        "tools/call",
        params,
        true,
        &[],
    )
    .await;
    assert_eq!(through.status, 200);
    assert_eq!(through.content_type(), "application/json");
    assert_eq!(through.content_type(), direct.content_type());
    assert!(through.body.len() > 100_000, "{}", through.body.len());
    assert!(through.body == direct.body, "the answer was changed");
    assert!(layered.store.is_empty());
}

#[tokio::test]
async fn a_synchronous_sse_answer_larger_than_max_result_bytes_is_relayed_unchanged() {
    let layered = Layered::start(|layer| layer.max_result_bytes(1024)).await;
    let params = json!({"name": "big_result", "arguments": {"bytes": 100_000}});
    let client = layered.client();
    let plain = send(&client, 9, "tools/call", params.clone(), false, &[]).await;
    let declared = send(&client, 9, "tools/call", params, true, &[]).await;
    assert!(
        plain.is_sse() && plain.body.len() > 100_000,
        "{}",
        plain.status
    );
    assert!(declared.is_sse(), "{}", declared.content_type());
    assert_eq!(declared.body.len(), plain.body.len(), "the answer was lost");
    assert!(declared.body == plain.body, "the answer was changed");
}

#[tokio::test]
async fn a_tool_asking_for_more_input_rounds_than_max_input_rounds_fails_the_task() {
    let layered = Layered::start(|layer| {
        layer
            .tool_policy("two_rounds", ToolPolicy::Always)
            .max_input_rounds(1)
    })
    .await;
    let client = layered
        .client()
        .with_capabilities(json!({"elicitation": {}}));

    let task = task_id(&client.call_tool("two_rounds", json!({}), true).await);
    let waiting = client
        .wait_task_status(&task, &["input_required", "failed"], BOUND)
        .await;
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");

    let answer = json!({"action": "accept", "content": {"answer": "one"}});
    client
        .tasks_update(&task, json!({"1.answer": answer}))
        .await;
    let failed = terminal(&client, &task).await;
    assert_failed(&failed, "asked for input more than 1 times");
    assert_eq!(layered.probe.started("two_rounds"), 2, "no third call");
}

#[tokio::test]
async fn a_task_still_running_at_max_runtime_fails_with_the_reason_and_its_call_is_cancelled() {
    let layered =
        Layered::start(|layer| layer.threshold(ms(100)).max_runtime(Some(ms(1000)))).await;
    let client = layered.client();

    let task = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 30}), true)
            .await,
    );
    assert_eq!(client.tasks_get(&task).await["result"]["status"], "working");
    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner call outlived its runtime: {:?}",
        layered.probe.stats("slow_compute")
    );
    let failed = terminal(&client, &task).await;
    assert_failed(&failed, "The task ran longer than its runtime limit of 1s");
}

#[tokio::test]
async fn a_task_whose_inner_handler_panicked_fails_at_max_runtime_instead_of_staying_working() {
    let layered =
        Layered::start(|layer| layer.threshold(ms(100)).max_runtime(Some(ms(1500)))).await;
    let client = layered.client();

    let task = task_id(
        &client
            .call_tool("panic_after", json!({"seconds": 0.3}), true)
            .await,
    );
    // The unwinding drops the handler's guard: counted as cancelled.
    assert!(layered.probe.wait_cancelled("panic_after", BOUND).await);
    // rmcp keeps the stream open without an answer: the task still runs…
    assert_eq!(client.tasks_get(&task).await["result"]["status"], "working");
    // … until its runtime limit ends it.
    let failed = terminal(&client, &task).await;
    assert_failed(&failed, "runtime limit of 1s 500ms");
}
