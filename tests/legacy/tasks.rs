//! End to end over loopback HTTP: 2025-11-25 experimental tasks, served by the
//! layer in front of the rmcp fixture in its session mode, seen as raw
//! messages on the wire.

use crate::support;

use std::time::Duration;

use mcp_tasks::{TaskId, TaskStore, ToolPolicy};
use serde_json::{Value, json};
use support::layered::{Layered, ms, text};
use support::session::{Session, outcome};
use support::wait::{BOUND, wait_until};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

#[tokio::test]
async fn initialize_advertises_tasks_and_tools_list_their_support() {
    let layered = Layered::start_sessions(|layer| {
        layer
            .tool_policy("slow_compute", ToolPolicy::Required)
            .tool_policy("greet", ToolPolicy::Never)
    })
    .await;
    let anonymous = Session::open(&layered, None).await;
    assert_eq!(
        anonymous.initialized["capabilities"]["tasks"],
        json!({"cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{}",
        anonymous.initialized
    );
    // Nothing else in the result changed.
    assert_eq!(anonymous.initialized["capabilities"]["tools"], json!({}));
    assert_eq!(anonymous.initialized["protocolVersion"], "2025-11-25");

    let alice = Session::open(&layered, Some("alice")).await;
    assert_eq!(
        alice.initialized["capabilities"]["tasks"]["list"],
        json!({})
    );

    let tools = alice.request("tools/list", json!({})).await;
    let support = |name: &str| -> Value {
        tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {tools}"))["execution"]["taskSupport"]
            .clone()
    };
    assert_eq!(support("slow_compute"), "required");
    assert_eq!(support("greet"), "forbidden");
    assert_eq!(support("failing_job"), "optional");
}

#[tokio::test]
async fn an_older_session_gets_no_tasks_and_its_calls_pass_through() {
    let layered = Layered::start_sessions(|layer| layer.threshold(Duration::ZERO)).await;
    let old = Session::open_with(layered.client(), None, "2025-06-18").await;
    assert!(
        old.initialized["capabilities"].get("tasks").is_none(),
        "{}",
        old.initialized
    );
}

#[tokio::test]
async fn a_task_runs_to_its_result_and_tasks_result_waits_for_it() {
    let layered = Layered::start_sessions(|layer| layer.max_ttl(Some(ms(120_000)))).await;
    let session = Session::open(&layered, None).await;

    let created = session
        .call_as_task(
            "slow_compute",
            json!({"seconds": 0.6}),
            json!({"ttl": 60_000}),
        )
        .await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60_000, "the requested ttl is honoured");
    assert_eq!(task["pollInterval"], 1000);
    assert!(created["result"].get("resultType").is_none(), "{created}");
    let id = task["taskId"].as_str().expect("taskId").to_owned();
    let stored = layered.store.admin_get(TaskId::parse(&id).unwrap()).await;
    let stored = stored.unwrap().expect("the operator finds the task");
    assert_eq!(stored.tool.as_deref(), Some("slow_compute"));

    let got = session.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["taskId"], id.as_str());
    assert_eq!(got["result"]["status"], "working");
    assert!(got["result"].get("result").is_none(), "{got}");

    let waited = session
        .exchange("tasks/result", json!({"taskId": id}))
        .await;
    assert!(waited.is_sse(), "a running task's result is streamed");
    let result = waited.into_response();
    assert_eq!(
        text(&result["result"]),
        "slow_compute done after 0.6s",
        "{result}"
    );
    assert_eq!(result["result"]["_meta"][RELATED]["taskId"], id.as_str());

    let done = session.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(done["result"]["status"], "completed");
    // A terminal task's result comes at once, as JSON, again.
    let again = session
        .exchange("tasks/result", json!({"taskId": id}))
        .await;
    assert!(!again.is_sse());
    assert_eq!(again.into_response()["result"], result["result"]);
    assert_eq!(layered.probe.finished("slow_compute"), 1);
}

#[tokio::test]
async fn a_one_megabyte_tool_name_is_kept_cut_to_its_first_1024_bytes() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;
    let name = "y".repeat(1 << 20);
    let id = session.start_task(&name, json!({})).await;
    let stored = layered.store.admin_get(TaskId::parse(&id).unwrap()).await;
    let stored = stored.unwrap().expect("the operator finds the task");
    assert_eq!(stored.tool, Some(format!("{}…", "y".repeat(1024))));
}

#[tokio::test]
async fn a_ttl_above_the_maximum_is_lowered_and_reported() {
    let layered = Layered::start_sessions(|layer| layer.max_ttl(Some(ms(5_000)))).await;
    let session = Session::open(&layered, None).await;
    let created = session
        .call_as_task("greet", json!({"name": "t"}), json!({"ttl": 86_400_000}))
        .await;
    assert_eq!(created["result"]["task"]["ttl"], 5_000, "{created}");
}

#[tokio::test]
async fn without_max_ttl_a_client_gets_at_most_the_layers_ttl() {
    let layered = Layered::start_sessions(|layer| layer.ttl(Some(ms(10_000)))).await;
    let session = Session::open(&layered, None).await;
    let ttl_of = |created: Value| created["result"]["task"]["ttl"].clone();
    let longer = session
        .call_as_task("greet", json!({"name": "t"}), json!({"ttl": 86_400_000}))
        .await;
    assert_eq!(ttl_of(longer), 10_000);
    let shorter = session
        .call_as_task("greet", json!({"name": "t"}), json!({"ttl": 2_000}))
        .await;
    assert_eq!(ttl_of(shorter), 2_000);
    let unasked = session
        .call_as_task("greet", json!({"name": "t"}), json!({}))
        .await;
    assert_eq!(ttl_of(unasked), 10_000);
}

#[tokio::test]
async fn calls_without_params_task_stay_synchronous_whatever_the_threshold() {
    let layered = Layered::start_sessions(|layer| {
        layer
            .threshold(Duration::ZERO)
            .default_policy(ToolPolicy::Always)
    })
    .await;
    let session = Session::open(&layered, None).await;
    let answer = session
        .request(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.3}}),
        )
        .await;
    assert_eq!(
        text(&answer["result"]),
        "slow_compute done after 0.3s",
        "{answer}"
    );
    assert!(layered.store.is_empty(), "no unsolicited task");
}

#[tokio::test]
async fn required_and_never_tools_answer_method_not_found() {
    let layered = Layered::start_sessions(|layer| {
        layer
            .tool_policy("slow_compute", ToolPolicy::Required)
            .tool_policy("greet", ToolPolicy::Never)
    })
    .await;
    let session = Session::open(&layered, None).await;
    let plain = session
        .request(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
        )
        .await;
    assert_eq!(error_code(&plain), -32601, "{plain}");
    let tasked = session
        .call_as_task("greet", json!({"name": "x"}), json!({}))
        .await;
    assert_eq!(error_code(&tasked), -32601, "{tasked}");
    assert_eq!(layered.probe.started("slow_compute"), 0);
    assert_eq!(layered.probe.started("greet"), 0);
}

#[tokio::test]
async fn is_error_results_and_protocol_errors_make_failed_tasks() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;

    let failing = session
        .start_task("failing_job", json!({"seconds": 0.1}))
        .await;
    let result = session
        .request("tasks/result", json!({"taskId": failing}))
        .await;
    assert_eq!(result["result"]["isError"], true, "verbatim: {result}");
    assert_eq!(
        result["result"]["_meta"][RELATED]["taskId"],
        failing.as_str()
    );
    let got = session.wait_status(&failing, &["failed"]).await;
    assert_eq!(got["result"]["status"], "failed");

    let broken = session.start_task("protocol_error_job", json!({})).await;
    let result = session
        .request("tasks/result", json!({"taskId": broken}))
        .await;
    assert_eq!(error_code(&result), -32603, "{result}");
    assert_eq!(result["error"]["data"]["tool"], "protocol_error_job");
    session.wait_status(&broken, &["failed"]).await;
}

#[tokio::test]
async fn cancel_stops_the_inner_tool_and_a_second_cancel_is_refused() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;
    let id = session
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;
    assert!(layered.probe.wait_started("slow_compute", BOUND).await);

    let cancelled = session.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], id.as_str());
    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the tool saw notifications/cancelled"
    );
    let again = session.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(error_code(&again), -32602, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("'cancelled'"),
        "{again}"
    );
    let result = session.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(error_code(&result), -32602, "{result}");
}

#[tokio::test]
async fn a_clients_notifications_cancelled_for_a_task_is_not_forwarded() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;
    let id = session.client.next_id();
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow_compute", "arguments": {"seconds": 0.8}, "task": {}},
    });
    let created = session
        .client
        .exchange(id, &session.headers(), body.to_string())
        .await
        .into_response();
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .expect("task")
        .to_owned();
    assert!(layered.probe.wait_started("slow_compute", BOUND).await);
    let (status, _) = session
        .post(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "impatient"},
        }))
        .await;
    assert_eq!(status, 202);
    let done = session
        .wait_status(&task, &["completed", "failed", "cancelled"])
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(layered.probe.cancelled("slow_compute"), 0);
}

#[tokio::test]
async fn an_elicitation_is_relayed_on_the_tasks_result_stream_and_answered() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;
    let id = session
        .start_task("confirm_delete", json!({"filename": "a.txt"}))
        .await;
    session.wait_status(&id, &["input_required"]).await;

    let (stream, asked) = session.first_relayed(&id).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["_meta"][RELATED]["taskId"], id.as_str());
    let relay_id = asked["id"].as_str().expect("a string id").to_owned();
    assert!(relay_id.starts_with("mcp-tasks:"), "{relay_id}");

    let (status, body) = session
        .post(json!({
            "jsonrpc": "2.0", "id": relay_id,
            "result": {"action": "accept", "content": {"confirm": true}},
        }))
        .await;
    assert_eq!(status, 202, "{body}");
    let result = outcome(stream).await;
    assert!(
        text(&result["result"]).starts_with("Deleted a.txt"),
        "{result}"
    );
    assert_eq!(
        session.wait_status(&id, &["completed"]).await["result"]["status"],
        "completed"
    );

    // The same answer again finds nothing waiting.
    let (status, body) = session
        .post(json!({"jsonrpc": "2.0", "id": relay_id, "result": {"action": "accept"}}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("-32602"), "{body}");
}

#[tokio::test]
async fn a_waiting_tasks_result_sends_keep_alive_comments() {
    let layered = Layered::start_sessions(|layer| layer.keep_alive(ms(100))).await;
    let session = Session::open(&layered, None).await;
    let id = session
        .start_task("slow_compute", json!({"seconds": 0.7}))
        .await;
    let waited = session
        .exchange("tasks/result", json!({"taskId": id}))
        .await;
    let comments = waited.body.matches(": keep-alive").count();
    assert!(
        comments >= 3,
        "{comments} keep-alive comments in {:?}",
        waited.body
    );
    assert_eq!(
        text(&waited.into_response()["result"]),
        "slow_compute done after 0.7s"
    );
}

#[tokio::test]
async fn ending_the_session_fails_its_running_task_and_forgets_the_session() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;
    let observer = Session::open(&layered, None).await;
    let id = session
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;
    assert!(layered.probe.wait_started("slow_compute", BOUND).await);

    let response = reqwest::Client::new()
        .delete(&layered.served.url)
        .header("Mcp-Session-Id", &session.id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .expect("DELETE");
    assert!(response.status().is_success(), "{}", response.status());

    // The task is not bound to the session: another session still reads it.
    let failed = observer.wait_status(&id, &["failed"]).await;
    assert!(
        failed["result"]["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("tool call failed"),
        "{failed}"
    );
    // The ended session is no longer served tasks: its requests go to the
    // inner server, which no longer knows it.
    let gone = session.exchange("tasks/get", json!({"taskId": id})).await;
    assert_eq!(gone.status, 404, "{}", gone.body);
}

#[tokio::test]
async fn a_task_whose_client_sent_no_progress_token_still_reports_progress() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;

    let created = session
        .call_as_task("slow_compute", json!({"seconds": 1.5}), json!({}))
        .await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    // The layer asked the inner server for progress itself.
    let message = wait_until("a status message shows progress", BOUND, || async {
        let got = session.request("tasks/get", json!({"taskId": id})).await;
        if let Some(message) = got["result"]["statusMessage"].as_str() {
            return Some(message.to_owned());
        }
        assert_eq!(got["result"]["status"], "working", "no progress: {got}");
        None
    })
    .await;
    assert!(message.starts_with("slow_compute: "), "{message}");
}
