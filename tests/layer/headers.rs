//! End to end over loopback HTTP: the routing headers of 2026-07-28
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) must agree with the body.

use crate::support;

use base64::Engine as _;
use mcp_tasks::ToolPolicy;
use serde_json::{Value, json};
use support::client::{Exchange, McpClient};
use support::layered::{Layered, error_of, ms, task_id, text};
use support::wait::BOUND;

type Headers = Vec<(String, String)>;

/// The standard headers of `method` with `name` set, replaced or removed.
fn headers(method: &str, mcp_name: Option<&str>) -> Headers {
    McpClient::standard_headers(method, mcp_name)
}

/// `headers` with `name` replaced by `value`, or removed when `None`.
fn with(mut headers: Headers, name: &str, value: Option<&str>) -> Headers {
    headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
    if let Some(value) = value {
        headers.push((name.to_owned(), value.to_owned()));
    }
    headers
}

async fn post(
    client: &McpClient,
    method: &str,
    params: Value,
    declare: bool,
    headers: Headers,
) -> Exchange {
    let id = client.next_id();
    let body = client.build_request(id, method, params, declare);
    client.exchange(id, &headers, body.to_string()).await
}

/// Asserts HTTP 400 with `-32020`.
fn assert_header_mismatch(exchange: Exchange) {
    assert_eq!(exchange.status, 400, "{}", exchange.body);
    assert_eq!(exchange.content_type(), "application/json");
    error_of(&exchange.into_response(), -32020);
}

fn base64_name(name: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(name);
    format!("=?base64?{encoded}?=")
}

/// A layered fixture and one task it holds (greet, parked at once).
async fn with_a_task(
    configure: impl FnOnce(mcp_tasks::TasksLayer) -> mcp_tasks::TasksLayer,
) -> (Layered, McpClient, String) {
    let layered =
        Layered::start(|layer| configure(layer.tool_policy("greet", ToolPolicy::Always))).await;
    let client = layered.client();
    let id = task_id(&client.call_tool("greet", json!({"name": "h"}), true).await);
    (layered, client, id)
}

#[tokio::test]
async fn a_tools_call_whose_mcp_method_disagrees_with_the_body_answers_400_header_mismatch() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();
    let params = json!({"name": "greet", "arguments": {"name": "m"}});

    // The layer reads every 2026-07-28 body and refuses each itself, a
    // header of a method it does not handle (`tools/list`) as well.
    for declare in [true, false] {
        for method in [Some("tasks/get"), Some("tools/list"), None] {
            let sent = with(headers("tools/call", Some("greet")), "Mcp-Method", method);
            let exchange = post(&client, "tools/call", params.clone(), declare, sent).await;
            assert_header_mismatch(exchange);
        }
    }
    assert_eq!(
        layered.probe.started("greet"),
        0,
        "the call reached the tool"
    );
}

/// The layer refuses it itself: with `Always`, a call that got past the
/// check would become a task (rmcp behind it refuses the header too).
#[tokio::test]
async fn a_tools_call_without_mcp_name_answers_400_header_mismatch_by_default() {
    let layered = Layered::start(|layer| layer.tool_policy("greet", ToolPolicy::Always)).await;
    let client = layered.client();
    let params = json!({"name": "greet", "arguments": {"name": "n"}});

    for declare in [true, false] {
        let sent = headers("tools/call", None);
        assert_header_mismatch(post(&client, "tools/call", params.clone(), declare, sent).await);
    }
    assert_eq!(
        layered.probe.started("greet"),
        0,
        "the call reached the tool"
    );
}

#[tokio::test]
async fn a_task_method_whose_mcp_name_disagrees_with_the_task_id_answers_400_header_mismatch_by_default()
 {
    let (_layered, client, id) = with_a_task(|layer| layer).await;
    let other = "0123456789abcdef0123456789abcdef";

    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let sent = headers(method, Some(other));
        let params = json!({"taskId": id, "inputResponses": {}});
        assert_header_mismatch(post(&client, method, params, true, sent).await);
    }
    // The refused cancel did not cancel anything.
    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
}

/// `Mcp-Name` is optional on task methods by default: the `taskId` in the
/// body decides, and each method does what it would have done with the header.
#[tokio::test]
async fn by_default_a_task_method_without_mcp_name_is_served_for_the_task_id_in_the_body() {
    let layered = Layered::start(|layer| {
        layer
            .threshold(ms(200))
            .tool_policy("confirm_delete", ToolPolicy::Always)
    })
    .await;
    let client = layered
        .client()
        .with_capabilities(json!({"elicitation": {}}));

    // tasks/get and tasks/update on a task waiting for input.
    let created = client
        .call_tool("confirm_delete", json!({"filename": "a.txt"}), true)
        .await;
    let id = task_id(&created);
    let waiting = client
        .wait_task_status(&id, &["input_required", "completed", "failed"], BOUND)
        .await;
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");

    let get = headers("tasks/get", None);
    let exchange = post(&client, "tasks/get", json!({"taskId": id}), true, get).await;
    assert_eq!(exchange.status, 200, "{}", exchange.body);
    let polled = exchange.into_response();
    assert_eq!(polled["result"]["taskId"], id.as_str(), "{polled}");
    assert_eq!(polled["result"]["status"], "input_required", "{polled}");

    let answer = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});
    let params = json!({"taskId": id, "inputResponses": answer});
    let update = headers("tasks/update", None);
    let exchange = post(&client, "tasks/update", params, true, update).await;
    assert_eq!(exchange.status, 200, "{}", exchange.body);
    let ack = exchange.into_response();
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let done = client
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert!(
        text(&done["result"]["result"]).starts_with("Deleted a.txt"),
        "{done}"
    );

    // tasks/cancel on a running task.
    let running = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 30}), true)
            .await,
    );
    let cancel = headers("tasks/cancel", None);
    let params = json!({"taskId": running});
    let exchange = post(&client, "tasks/cancel", params, true, cancel).await;
    assert_eq!(exchange.status, 200, "{}", exchange.body);
    let ack = exchange.into_response();
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let polled = client.tasks_get(&running).await;
    assert_eq!(polled["result"]["status"], "cancelled", "{polled}");
    assert!(
        layered.probe.wait_cancelled("slow_compute", BOUND).await,
        "the inner call was not cancelled"
    );
}

#[tokio::test]
async fn a_task_method_without_mcp_name_answers_400_header_mismatch_when_the_header_is_required() {
    let layered =
        Layered::start(|layer| layer.threshold(ms(200)).require_task_name_header(true)).await;
    let client = layered.client();
    let id = task_id(
        &client
            .call_tool("slow_compute", json!({"seconds": 30}), true)
            .await,
    );

    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": id, "inputResponses": {}});
        let exchange = post(&client, method, params, true, headers(method, None)).await;
        assert_header_mismatch(exchange);
    }
    // The refused cancel cancelled nothing; with the header the task is served.
    let polled = client.tasks_get(&id).await;
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    assert_eq!(layered.probe.cancelled("slow_compute"), 0);
    assert_eq!(layered.probe.running("slow_compute"), 1);
}

#[tokio::test]
async fn a_protocol_version_header_that_disagrees_with_meta_answers_400_header_mismatch() {
    let (layered, client, id) = with_a_task(|layer| layer).await;
    let calls = [
        (
            "tools/call",
            json!({"name": "echo_meta", "arguments": {}}),
            "echo_meta".to_owned(),
        ),
        ("tasks/get", json!({"taskId": id}), id.clone()),
    ];

    for (method, params, name) in calls {
        for version in [Some("2025-11-25"), Some("2026-07-29"), None] {
            for declare in [true, false] {
                let sent = with(
                    headers(method, Some(&name)),
                    "MCP-Protocol-Version",
                    version,
                );
                let exchange = post(&client, method, params.clone(), declare, sent).await;
                assert_header_mismatch(exchange);
            }
        }
    }
    assert_eq!(layered.probe.started("echo_meta"), 0);
}

#[tokio::test]
async fn a_task_method_on_another_protocol_version_answers_400_unsupported_version() {
    let (_layered, client, id) = with_a_task(|layer| layer).await;

    let id_num = client.next_id();
    let mut body = client.build_request(id_num, "tasks/get", json!({"taskId": id}), true);
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let sent = with(
        headers("tasks/get", Some(&id)),
        "MCP-Protocol-Version",
        Some("2025-11-25"),
    );
    let exchange = client.exchange(id_num, &sent, body.to_string()).await;
    assert_eq!(exchange.status, 400, "{}", exchange.body);
    let response = exchange.into_response();
    let error = error_of(&response, -32022);
    assert_eq!(
        error["data"]["supported"],
        json!(["2026-07-28"]),
        "{response}"
    );
    assert_eq!(error["data"]["requested"], "2025-11-25", "{response}");
}

#[tokio::test]
async fn a_base64_mcp_name_is_accepted_when_it_decodes_to_the_right_name() {
    let (_layered, client, id) = with_a_task(|layer| layer).await;

    let right = headers("tasks/get", Some(&base64_name(&id)));
    let exchange = post(&client, "tasks/get", json!({"taskId": id}), true, right).await;
    assert_eq!(exchange.status, 200, "{}", exchange.body);
    assert_eq!(exchange.into_response()["result"]["taskId"], id.as_str());

    let other = base64_name("0123456789abcdef0123456789abcdef");
    for wrong in [other.as_str(), "=?base64?not base64!?="] {
        let sent = headers("tasks/get", Some(wrong));
        let exchange = post(&client, "tasks/get", json!({"taskId": id}), true, sent).await;
        assert_header_mismatch(exchange);
    }

    // The same holds for a tool name, which then reaches the tool unchanged.
    let encoded = base64_name("echo_headers");
    let sent = headers("tools/call", Some(&encoded));
    let params = json!({"name": "echo_headers", "arguments": {}});
    let exchange = post(&client, "tools/call", params.clone(), true, sent).await;
    assert_eq!(exchange.status, 200, "{}", exchange.body);
    let response = exchange.into_response();
    let seen: Value = serde_json::from_str(text(&response["result"])).expect("headers");
    assert_eq!(seen["mcp-name"], encoded.as_str(), "{response}");
    let sent = headers("tools/call", Some(&base64_name("greet")));
    assert_header_mismatch(post(&client, "tools/call", params, true, sent).await);
}

#[tokio::test]
async fn related_task_ids_never_reach_the_inner_server_whether_the_client_declared_tasks_or_not() {
    let layered = Layered::start(|layer| layer).await;
    let client = layered.client();
    for declare in [true, false] {
        let related = json!(["0123456789abcdef0123456789abcdef"]);
        let params = json!({
            "name": "echo_meta",
            "arguments": {},
            "_meta": {"io.modelcontextprotocol/relatedTaskIds": related, "progressToken": "p"},
        });
        let answer = client
            .request("tools/call", params, declare)
            .await
            .into_response();
        let seen: Value = serde_json::from_str(text(&answer["result"])).expect("the echoed _meta");
        assert!(
            seen.get("io.modelcontextprotocol/relatedTaskIds").is_none(),
            "declared {declare}: the inner server saw {seen}"
        );
        assert_eq!(
            seen["progressToken"], "p",
            "the rest of _meta is kept: {seen}"
        );
    }
    assert_eq!(layered.probe.started("echo_meta"), 2);
}
