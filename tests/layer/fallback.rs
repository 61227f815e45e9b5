//! The fallback for clients without tasks: with it on, such a client's call
//! still running after the fallback time answers a tool result that names
//! its task, and two tools the layer adds to `tools/list` read the outcome
//! (or the progress so far) and cancel it. Tried with a raw 2026-07-28
//! client that declares nothing, and a 2025-11-25 session that never asks
//! for a task; the inner server is the rmcp fixture.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::client::McpClient;
use support::layered::{Layered, USER_HEADER, ms, send, task_id, text};
use support::session::Session;
use support::wait::{BOUND, wait_until};

/// `tools/call` of `name` by a client without tasks, as `user`; the response.
async fn call(client: &McpClient, name: &str, arguments: Value, user: Option<&str>) -> Value {
    let extra: Vec<(&str, &str)> = user.map(|user| (USER_HEADER, user)).into_iter().collect();
    let params = json!({"name": name, "arguments": arguments});
    send(
        client,
        client.next_id(),
        "tools/call",
        params,
        false,
        &extra,
    )
    .await
    .into_response()
}

/// The task id a fallback answer names, after checking its shape.
fn fallback_task(response: &Value) -> String {
    let result = &response["result"];
    assert!(result.get("isError").is_none(), "{response}");
    let id = result["structuredContent"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {response}"))
        .to_owned();
    assert_eq!(result["structuredContent"]["status"], "working");
    let said = text(result);
    assert!(
        said.contains(&id) && said.contains("get_task_result"),
        "{said}"
    );
    id
}

/// `get_task_result` until it answers something other than "still running".
async fn outcome(client: &McpClient, task: &str, user: Option<&str>) -> Value {
    wait_until(&format!("{task} ends"), BOUND, || async {
        let read = call(client, "get_task_result", json!({"taskId": task}), user).await;
        (read["result"]["structuredContent"]["status"] != "working").then_some(read)
    })
    .await
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_long_call_of_a_client_without_tasks_answers_its_task_and_the_added_tool_reads_the_outcome()
 {
    let layered = Layered::start(|layer| layer.fallback_after(ms(300))).await;
    let client = layered.client();
    let listed = client
        .request("tools/list", json!({}), false)
        .await
        .into_response();
    let names = tool_names(&listed);
    assert!(names.contains(&"slow_compute".to_owned()), "{names:?}");
    assert_eq!(names[names.len() - 2..], ["get_task_result", "cancel_task"]);

    // Answered at the fallback time, not the tool's: its task, still working.
    let answer = call(&client, "slow_compute", json!({"seconds": 1.0}), None).await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let task = fallback_task(&answer);

    let running = call(&client, "get_task_result", json!({"taskId": task}), None).await;
    assert_eq!(running["result"]["structuredContent"]["status"], "working");
    assert!(text(&running["result"]).contains("still running"));

    let done = outcome(&client, &task, None).await;
    assert_eq!(
        text(&done["result"]),
        "slow_compute done after 1s",
        "{done}"
    );
    assert_eq!(done["result"]["resultType"], "complete");
    // The task is any task: a client with tasks reads it too.
    let got = client.tasks_get(&task).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
}

#[tokio::test]
async fn a_call_answered_in_time_and_a_tool_without_fallback_stay_synchronous() {
    let layered = Layered::start(|layer| {
        layer
            .fallback_after(Duration::from_secs(30))
            .tool_fallback("echo_slow", None)
            .tool_fallback("slow_compute", Some(ms(200)))
    })
    .await;
    let client = layered.client();
    let quick = call(&client, "slow_compute", json!({"seconds": 0.05}), None).await;
    assert_eq!(text(&quick["result"]), "slow_compute done after 0.05s");
    let off = call(
        &client,
        "slow_compute",
        json!({"seconds": 0.6, "label": "x"}),
        None,
    )
    .await;
    // slow_compute falls back after its own 200 ms: under the global 30 s
    // it would have answered its result.
    fallback_task(&off);
    drop(off);
    // A tool turned off answers as the tool does, however long it takes.
    let layered = Layered::start(|layer| {
        layer
            .fallback_after(ms(100))
            .tool_fallback("slow_compute", None)
    })
    .await;
    let client = layered.client();
    let answer = call(
        &layered.client(),
        "slow_compute",
        json!({"seconds": 0.4}),
        None,
    )
    .await;
    assert_eq!(text(&answer["result"]), "slow_compute done after 0.4s");
    drop(client);
}

#[tokio::test]
async fn the_cancel_tool_stops_the_call_and_another_principal_sees_no_task() {
    let layered = Layered::start_with_users(|layer| layer.fallback_after(ms(200))).await;
    let client = layered.client();
    let answer = call(
        &client,
        "slow_compute",
        json!({"seconds": 30}),
        Some("alice"),
    )
    .await;
    let task = fallback_task(&answer);

    let foreign = call(
        &client,
        "get_task_result",
        json!({"taskId": task}),
        Some("bob"),
    )
    .await;
    assert_eq!(foreign["result"]["isError"], true, "{foreign}");
    assert!(text(&foreign["result"]).contains("no task"), "{foreign}");
    let foreign = call(&client, "cancel_task", json!({"taskId": task}), Some("bob")).await;
    assert_eq!(foreign["result"]["isError"], true, "{foreign}");

    let cancelled = call(
        &client,
        "cancel_task",
        json!({"taskId": task}),
        Some("alice"),
    )
    .await;
    assert!(cancelled["result"].get("isError").is_none(), "{cancelled}");
    assert_eq!(
        cancelled["result"]["structuredContent"]["status"],
        "cancelled"
    );
    let read = call(
        &client,
        "get_task_result",
        json!({"taskId": task}),
        Some("alice"),
    )
    .await;
    assert_eq!(read["result"]["isError"], true, "{read}");
    assert!(text(&read["result"]).contains("cancelled"), "{read}");
    // The inner call stopped.
    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner call was never cancelled"
    );

    let missing = call(&client, "get_task_result", json!({}), Some("alice")).await;
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    assert!(text(&missing["result"]).contains("taskId"), "{missing}");
}

#[tokio::test]
async fn a_client_with_tasks_still_gets_the_task_handle_at_the_threshold() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(100))
            .fallback_after(Duration::from_secs(30))
    })
    .await;
    let client = layered.client();
    let created = client
        .call_tool_with("slow_compute", json!({"seconds": 0.5}), json!({}), true)
        .await
        .into_response();
    task_id(&created);
}

#[tokio::test]
async fn a_2025_11_25_session_that_asks_for_no_task_falls_back_too() {
    let layered = Layered::start_sessions(|layer| layer.fallback_after(ms(300))).await;
    let session = Session::open(&layered, None).await;
    let listed = session.request("tools/list", json!({})).await;
    let names = tool_names(&listed);
    assert_eq!(names[names.len() - 2..], ["get_task_result", "cancel_task"]);
    let tools = listed["result"]["tools"].as_array().unwrap();
    let added = &tools[tools.len() - 2];
    assert_eq!(added["execution"]["taskSupport"], "forbidden", "{added}");

    let answer = session
        .request(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.8}}),
        )
        .await;
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
    let task = fallback_task(&answer);
    let done = wait_until(&format!("{task} ends"), BOUND, || async {
        let read = session
            .request(
                "tools/call",
                json!({"name": "get_task_result", "arguments": {"taskId": task}}),
            )
            .await;
        (read["result"]["structuredContent"]["status"] != "working").then_some(read)
    })
    .await;
    assert_eq!(
        text(&done["result"]),
        "slow_compute done after 0.8s",
        "{done}"
    );
    assert!(done["result"].get("resultType").is_none(), "{done}");
}

#[tokio::test]
async fn with_the_fallback_off_nothing_is_added() {
    let layered = Layered::start(|layer| layer.threshold(ms(100))).await;
    let client = layered.client();
    let listed = client
        .request("tools/list", json!({}), false)
        .await
        .into_response();
    assert!(!tool_names(&listed).contains(&"get_task_result".to_owned()));
    let answer = call(&client, "slow_compute", json!({"seconds": 0.3}), None).await;
    assert_eq!(text(&answer["result"]), "slow_compute done after 0.3s");
}

#[tokio::test]
async fn a_tool_with_an_output_schema_falls_back_with_an_answer_its_listed_schema_takes() {
    // Clients check a result against the tool's outputSchema (the Python
    // SDK refuses one that does not match): the layer lists such a tool
    // with a schema that takes its own result or the fallback's answer.
    let layered = Layered::start(|layer| layer.fallback_after(ms(200))).await;
    let client = layered.client();
    let listed = client
        .request("tools/list", json!({}), false)
        .await
        .into_response();
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let schema_of = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["outputSchema"].clone())
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
    };
    let schema = schema_of("slow_structured");
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(
        schema["anyOf"][0]["properties"]["seconds"]["type"], "number",
        "its own first: {schema}"
    );
    let handle = &schema["anyOf"][1];
    assert_eq!(handle["required"], json!(["taskId", "status"]), "{schema}");

    let answer = call(&client, "slow_structured", json!({"seconds": 0.6}), None).await;
    let task = fallback_task(&answer);
    // The answer's structured content is what the handle schema names.
    let structured = answer["result"]["structuredContent"]
        .as_object()
        .expect("an object");
    for key in structured.keys() {
        assert!(
            handle["properties"].get(key).is_some(),
            "{key} not in {handle}"
        );
    }
    // And its outcome is the tool's own result, which the first schema takes.
    let done = outcome(&client, &task, None).await;
    assert_eq!(
        done["result"]["structuredContent"]["seconds"], 0.6,
        "{done}"
    );

    // In a session too, where the layer rewrites the session's listing.
    let layered = Layered::start_sessions(|layer| layer.fallback_after(ms(200))).await;
    let session = Session::open(&layered, None).await;
    let listed = session.request("tools/list", json!({})).await;
    let widened = listed["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "slow_structured"))
        .map(|tool| tool["outputSchema"]["anyOf"][1]["required"].clone());
    assert_eq!(widened, Some(json!(["taskId", "status"])), "{listed}");
    let answer = session
        .request(
            "tools/call",
            json!({"name": "slow_structured", "arguments": {"seconds": 0.6}}),
        )
        .await;
    fallback_task(&answer);
}
