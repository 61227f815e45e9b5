//! Progress without a token, end to end over loopback HTTP with the rmcp
//! fixture: the layer asks the inner server for progress on every call it
//! may park (but those of a tool that has answered at once, without
//! progress, many times in a row), so a parked task's `statusMessage`
//! moves for a client that sent no `progressToken`, and keeps those
//! notifications from that client whether its call answers in time, is
//! parked, or is refused a task.

use crate::support;

use std::cell::RefCell;

use serde_json::{Value, json};
use support::layered::{Layered, ms, task_id, text};
use support::wait::{BOUND, wait_until};

/// The methods of the notifications in `messages`.
fn notifications(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| message["method"].as_str())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_polling_client_that_sent_no_token_sees_the_status_message_move() {
    let layered = Layered::start(|layer| layer.threshold(ms(300))).await;
    let client = layered.client();

    let exchange = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 2.0, "label": "quiet"}),
            json!({}),
            true,
        )
        .await;
    // The handle alone: none of the layer's progress reached the client.
    assert_eq!(notifications(&exchange.messages), Vec::<String>::new());
    let created = exchange.into_response();
    let id = task_id(&created);
    // The last line before the threshold is the first status message.
    let first = created["result"]["statusMessage"]
        .as_str()
        .unwrap_or_else(|| panic!("no statusMessage in {created}"))
        .to_owned();
    assert!(first.starts_with("quiet: "), "{first}");

    let seen = RefCell::new(vec![first.clone()]);
    wait_until("the status message moves twice", BOUND, || async {
        let polled = client.tasks_get(&id).await;
        let task = &polled["result"];
        let mut seen = seen.borrow_mut();
        if let Some(message) = task["statusMessage"].as_str()
            && seen.last().map(String::as_str) != Some(message)
        {
            seen.push(message.to_owned());
        }
        assert!(
            seen.len() >= 3 || task["status"] == "working",
            "the task ended before its status message moved twice: {seen:?}"
        );
        seen.len() >= 3
    })
    .await;
    let done = client.wait_task_status(&id, &["completed"], BOUND).await;
    assert_eq!(text(&done["result"]["result"]), "quiet done after 2s");
}

#[tokio::test]
async fn a_call_that_answers_in_time_gets_no_progress_it_did_not_ask_for() {
    let layered = Layered::start(|layer| layer.threshold(ms(3000))).await;
    let client = layered.client();

    let exchange = client
        .call_tool_with("slow_compute", json!({"seconds": 0.7}), json!({}), true)
        .await;
    assert_eq!(exchange.status, 200);
    assert_eq!(notifications(&exchange.messages), Vec::<String>::new());
    let response = exchange.into_response();
    assert_eq!(text(&response["result"]), "slow_compute done after 0.7s");
    assert!(layered.store.is_empty());
}

#[tokio::test]
async fn a_call_refused_a_task_gets_no_progress_it_did_not_ask_for() {
    // No task may be created: the call stays with its client past the
    // threshold, and the rest of its stream goes out as the inner sent it,
    // the layer's progress left out.
    let layered = Layered::start(|layer| layer.threshold(ms(300)).max_tasks(Some(0))).await;
    let client = layered.client();

    let exchange = client
        .call_tool_with("slow_compute", json!({"seconds": 1.2}), json!({}), true)
        .await;
    assert_eq!(exchange.status, 200);
    assert_eq!(notifications(&exchange.messages), Vec::<String>::new());
    let response = exchange.into_response();
    assert_eq!(text(&response["result"]), "slow_compute done after 1.2s");
    assert!(layered.store.is_empty(), "a refused park left a task");
}

#[tokio::test]
async fn a_client_that_sent_its_own_token_still_gets_its_progress_and_only_that() {
    let layered = Layered::start(|layer| layer.threshold(ms(3000))).await;
    let client = layered.client();

    let exchange = client
        .call_tool_with(
            "slow_compute",
            json!({"seconds": 0.5}),
            json!({"_meta": {"progressToken": 41}}),
            true,
        )
        .await;
    let progress: Vec<&Value> = exchange
        .messages
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "no progress: {}", exchange.body);
    for message in progress {
        assert_eq!(message["params"]["progressToken"], 41, "{message}");
    }
}

#[tokio::test]
async fn a_tool_that_always_answered_at_once_gets_no_token_of_the_layers() {
    let layered = Layered::start(|layer| layer.threshold(ms(3000))).await;
    let client = layered.client();
    // The `_meta` the inner server got, as `echo_meta` answers it.
    let forwarded_meta = || async {
        let response = client
            .call_tool_with("echo_meta", json!({}), json!({}), true)
            .await
            .into_response();
        serde_json::from_str::<Value>(text(&response["result"])).expect("echo_meta answers JSON")
    };

    let first = forwarded_meta().await;
    let token = first["progressToken"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        token.starts_with("mcp-tasks/"),
        "a tool never seen: {first}"
    );
    let mut last = first;
    for _ in 0..16 {
        last = forwarded_meta().await;
    }
    assert_eq!(
        last.get("progressToken"),
        None,
        "after 17 quiet answers: {last}"
    );
}
