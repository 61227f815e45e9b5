//! End to end over loopback HTTP: who sees which 2025-11-25 task, `tasks/list`
//! paging, and both protocol generations on one layer at once.

use crate::support;

use std::collections::HashSet;

use serde_json::{Value, json};
use support::layered::{Layered, USER_HEADER, get_as, send, task_id, text};
use support::session::{Session, outcome};
use support::wait::{BOUND, next_millisecond, wait_until};

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

/// Every task id `tasks/list` gives `session`, page by page; also the page count.
async fn list_all(session: &Session) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = session.request("tasks/list", params).await;
        pages += 1;
        for task in page["result"]["tasks"].as_array().expect("tasks") {
            assert!(task.get("ttl").is_some(), "legacy task shape: {task}");
            ids.push(task["taskId"].as_str().expect("taskId").to_owned());
        }
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (ids, pages),
        }
        assert!(pages < 50, "paging does not end");
    }
}

#[tokio::test]
async fn tasks_list_pages_through_the_callers_tasks_only() {
    let layered = Layered::start_sessions(|layer| layer.list_page_size(2)).await;
    let alice = Session::open(&layered, Some("alice")).await;
    let bob = Session::open(&layered, Some("bob")).await;
    let mut mine = Vec::new();
    for n in 0..5 {
        mine.push(
            alice
                .start_task("greet", json!({"name": format!("a{n}")}))
                .await,
        );
        // Lists are ordered by creation time (in ms), then id.
        next_millisecond().await;
    }
    let theirs = bob.start_task("greet", json!({"name": "b"})).await;

    let (listed, pages) = list_all(&alice).await;
    assert_eq!(listed, mine, "every task once, oldest first");
    assert_eq!(pages, 3, "five tasks in pages of two");
    let (listed, _) = list_all(&bob).await;
    assert_eq!(listed, vec![theirs]);

    // A second session of the same principal sees the same tasks.
    let alice_again = Session::open(&layered, Some("alice")).await;
    let (listed, _) = list_all(&alice_again).await;
    assert_eq!(listed.len(), 5);

    let bad = alice
        .request("tasks/list", json!({"cursor": "not-a-cursor"}))
        .await;
    assert_eq!(error_code(&bad), -32602, "{bad}");
    let wrong_type = alice.request("tasks/list", json!({"cursor": 7})).await;
    assert_eq!(error_code(&wrong_type), -32602, "{wrong_type}");

    // Anonymous callers are not offered tasks/list and cannot call it.
    let anonymous = Session::open(&layered, None).await;
    assert!(
        anonymous.initialized["capabilities"]["tasks"]
            .get("list")
            .is_none()
    );
    let refused = anonymous.request("tasks/list", json!({})).await;
    assert_eq!(error_code(&refused), -32601, "{refused}");
}

#[tokio::test]
async fn another_principals_task_reads_exactly_like_an_unknown_one() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let alice = Session::open(&layered, Some("alice")).await;
    let bob = Session::open(&layered, Some("bob")).await;
    let task = alice
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;
    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = bob.request(method, json!({"taskId": task})).await;
        let missing = bob.request(method, json!({"taskId": unknown})).await;
        assert_eq!(error_code(&foreign), -32602, "{method}: {foreign}");
        assert_eq!(foreign["error"], missing["error"], "{method}");
    }
    let still = alice.request("tasks/get", json!({"taskId": task})).await;
    assert_eq!(
        still["result"]["status"], "working",
        "bob's cancel did nothing"
    );
    alice.request("tasks/cancel", json!({"taskId": task})).await;
}

#[tokio::test]
async fn both_generations_use_one_layer_and_one_store_at_once() {
    let layered =
        Layered::start_sessions(|layer| layer.threshold(std::time::Duration::from_millis(200)))
            .await;
    let legacy = Session::open(&layered, Some("carol")).await;
    let modern = layered.client();
    let user = [(USER_HEADER, "carol")];

    let legacy_task = legacy
        .start_task("slow_compute", json!({"seconds": 0.6, "label": "old"}))
        .await;
    let created = send(
        &modern,
        modern.next_id(),
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0.6, "label": "new"}}),
        true,
        &user,
    )
    .await
    .into_response();
    let modern_task = task_id(&created);
    assert_eq!(created["result"]["ttlMs"], 3_600_000, "{created}");

    let old = legacy
        .request("tasks/result", json!({"taskId": legacy_task}))
        .await;
    assert_eq!(text(&old["result"]), "old done after 0.6s");
    let new = wait_until("the 2026-07-28 task ends", BOUND, || async {
        let got = get_as(&modern, modern.next_id(), &modern_task, Some("carol"))
            .await
            .into_response();
        (got["result"]["status"] != "working").then_some(got)
    })
    .await;
    assert_eq!(new["result"]["status"], "completed", "{new}");
    assert_eq!(text(&new["result"]["result"]), "new done after 0.6s");

    // The legacy task methods see the 2026-07-28 task of the same principal
    // in their own shape, and listing shows both.
    let seen = legacy
        .request("tasks/get", json!({"taskId": modern_task}))
        .await;
    assert_eq!(seen["result"]["ttl"], 3_600_000, "{seen}");
    let listed = legacy.request("tasks/list", json!({})).await;
    let ids: HashSet<_> = listed["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|task| task["taskId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids, HashSet::from([legacy_task, modern_task]));
    assert_eq!(layered.probe.finished("slow_compute"), 2);
}

#[tokio::test]
async fn a_session_the_registry_forgot_is_still_served_when_it_says_2025_11_25() {
    // Room for one session: opening the second evicts the first.
    let layered = Layered::start_sessions(|layer| {
        layer.legacy_sessions(1, std::time::Duration::from_secs(60))
    })
    .await;
    let first = Session::open(&layered, Some("dora")).await;
    let task = first
        .start_task("slow_compute", json!({"seconds": 0.3}))
        .await;
    let _second = Session::open(&layered, Some("dora")).await;
    let result = first.request("tasks/result", json!({"taskId": task})).await;
    assert_eq!(
        text(&result["result"]),
        "slow_compute done after 0.3s",
        "{result}"
    );
}

#[tokio::test]
async fn an_answer_from_another_session_reaches_the_session_the_tool_asked_from() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let asking = Session::open(&layered, Some("erin")).await;
    let answering = Session::open(&layered, Some("erin")).await;
    let task = asking
        .start_task("confirm_delete", json!({"filename": "d.txt"}))
        .await;
    asking.wait_status(&task, &["input_required"]).await;
    let (stream, asked) = answering.first_relayed(&task).await;
    let accept = json!({"action": "accept", "content": {"confirm": true}});
    let (status, body) = answering.answer(&asked, accept).await;
    assert_eq!(status, 202, "{body}");
    let result = outcome(stream).await;
    assert!(
        text(&result["result"]).starts_with("Deleted d.txt"),
        "{result}"
    );
}

#[tokio::test]
async fn an_answer_that_is_not_a_response_is_refused_and_the_request_stays_open() {
    let layered = Layered::start_sessions(|layer| layer).await;
    let session = Session::open(&layered, None).await;
    let task = session
        .start_task("confirm_delete", json!({"filename": "e.txt"}))
        .await;
    session.wait_status(&task, &["input_required"]).await;
    let relay = format!("mcp-tasks:{task}:1");
    let (status, body) = session
        .post(json!({"jsonrpc": "2.0", "id": relay, "bogus": true}))
        .await;
    assert_eq!(status, 400, "{body}");
    let still = session.request("tasks/get", json!({"taskId": task})).await;
    assert_eq!(still["result"]["status"], "input_required", "{still}");
    let (status, _) = session
        .post(json!({"jsonrpc": "2.0", "id": relay, "result": {"action": "decline"}}))
        .await;
    assert_eq!(status, 202);
    session.wait_status(&task, &["completed"]).await;
}
