//! Task events through `mcp-tasks-gateway --events webhooks` (issue #50),
//! taken by a released third-party Events client: the Vercel AI SDK's
//! `@ai-sdk/mcp` 2.0.99 (`tests/clients/ai-sdk-events/subscribe.mjs`, run by
//! `scripts/client-ai-sdk-events.sh`, which installs it pinned into the
//! git-ignored cache). Its `experimental_events` API lists and subscribes
//! over protocol 2026-07-28, and its own webhook handler, served over HTTPS
//! with a certificate from a private CA the gateway is told to trust,
//! answers the verification challenge and checks every delivery's
//! signature before its `onEvent` sees the event. The upstream is the rmcp
//! fixture over loopback; the subscription belongs to the OAuth subject
//! alice.
//!
//! The SDK holds every events message the gateway sends it to its own zod
//! schemas (`src/tool/mcp-event-types.ts`, `mcp-event-webhook.ts`): the
//! `events/list` result (`ListEventsResultSchema`, each descriptor
//! `MCPEventDefinitionSchema`) and the `events/subscribe` result
//! (`SubscribeEventResultSchema`) are parsed, and a mismatch fails the call
//! (an `error` line); each webhook body is parsed as a verification
//! challenge or an occurrence (`MCPEventSchema`, `name` and `eventId`
//! checked against the subscription and `webhook-id`), and a mismatch is
//! answered 400, where the test wants 200 and 204.
//!
//! | Case | Expected |
//! |------|----------|
//! | the client lists, subscribes, alice runs a task, the client is stopped | the descriptor offers `webhook`; the challenge answered once; `working` then `completed` for that task, each POSTed once and answered 204 after the SDK's checks; the client unsubscribes and exits 0 |

use crate::{events, gateway, support, tokens};

use std::time::Duration;

use events::{Receiving, gateway_with, receiving};
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_fixture};
use support::process::Process;
use support::wait::wait_until;
use tokens::{SECRET, TempFile, hs256};
use tokio::process::Command;

/// How long the client may take to start: the first run installs it (and
/// Node 22 where the machine has none) from npm.
const INSTALL: Duration = Duration::from_secs(600);

/// How long a step over loopback may take on a busy machine.
const STEP: Duration = Duration::from_secs(60);

/// Starts the AI SDK subscriber against `gateway` with `token`; returns
/// once its HTTPS server listens.
async fn subscriber(gateway: &str, files: &Receiving, token: &str) -> Process {
    let repo = gateway::repo();
    let mut command = Command::new("bash");
    command
        .arg(repo.join("scripts/client-ai-sdk-events.sh"))
        .arg(repo.join("tests/clients/ai-sdk-events/subscribe.mjs"))
        .args(["--url", gateway])
        .args(["--cert", files.cert.path(), "--key", files.key.path()])
        .env("MCP_TASKS_TOKEN", token)
        .current_dir(&repo);
    Process::start("AI SDK subscriber", command, INSTALL).await
}

/// The subscriber's JSON lines.
fn lines(subscriber: &Process) -> Vec<Value> {
    subscriber
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect()
}

/// Waits for the line `line`; fails at once with the log when the
/// subscriber reported an error.
async fn wait_line(subscriber: &Process, line: &str) {
    wait_until(&format!("the subscriber prints {line}"), STEP, || async {
        let log = subscriber.log();
        let failed = lines(subscriber)
            .iter()
            .any(|value| value.get("error").is_some() || value.get("webhookError").is_some());
        assert!(!failed, "the subscriber failed:\n{log}");
        if log.lines().any(|seen| seen.trim() == line) {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
}

/// The statuses of `task` the SDK's handler accepted, in order, each with
/// its event.
fn events_of(subscriber: &Process, task: &str) -> Vec<(String, Value)> {
    lines(subscriber)
        .into_iter()
        .filter_map(|line| line.get("event").cloned())
        .filter(|event| event["data"]["taskId"] == task)
        .map(|event| (event["data"]["status"].as_str().unwrap().to_owned(), event))
        .collect()
}

#[tokio::test]
async fn the_ai_sdk_client_subscribes_and_takes_each_change_of_a_task_once() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let files = receiving();
    let oauth = TempFile::new("secret", SECRET);
    let gateway = gateway_with(&upstream.url, &files, &oauth, &[]).await;
    let token = hs256("alice", "mcp");
    let mut node = subscriber(&gateway.url, &files, &token).await;
    wait_line(&node, "ready").await;

    let listed = lines(&node)
        .into_iter()
        .find_map(|line| line.get("listed").cloned())
        .expect("the listed descriptor");
    assert_eq!(listed["name"], "mcp-tasks/status", "{listed}");
    assert!(
        listed["delivery"]
            .as_array()
            .is_some_and(|modes| modes.contains(&json!("webhook"))),
        "{listed}"
    );
    let subscribed = lines(&node)
        .into_iter()
        .find_map(|line| line.get("subscribed").cloned())
        .expect("the subscribe result");
    let id = subscribed["id"].as_str().expect("a subscription id");
    assert!(id.starts_with("sub_"), "{subscribed}");

    let alice = McpClient::new(&gateway.url).with_bearer(token.clone());
    let task = alice
        .start_task("slow_compute", json!({"seconds": 0.5}))
        .await;
    alice
        .wait_task_status(&task, &["completed"], Duration::from_secs(20))
        .await;
    wait_until("both changes reach onEvent", STEP, || async {
        let seen = events_of(&node, &task);
        if seen.iter().any(|(status, _)| status == "completed") {
            Ok(())
        } else {
            Err(node.log())
        }
    })
    .await;

    node.terminate();
    wait_line(&node, "unsubscribed").await;
    let status = node.wait_exit(STEP).await.expect("the subscriber exits");
    assert!(status.success(), "{status:?}\n{}", node.log());

    let seen = events_of(&node, &task);
    let statuses: Vec<&str> = seen.iter().map(|(status, _)| status.as_str()).collect();
    assert_eq!(statuses, ["working", "completed"], "{}", node.log());
    for (_, event) in &seen {
        assert_eq!(event["name"], "mcp-tasks/status", "{event}");
        assert!(
            event["eventId"].as_str().is_some_and(|id| !id.is_empty()),
            "{event}"
        );
    }
    assert_ne!(seen[0].1["eventId"], seen[1].1["eventId"]);
    let all = lines(&node);
    let mut delivered = all.iter().filter(|line| line.get("event").is_some());
    assert!(
        delivered.all(|line| line["subscription"] == id),
        "{}",
        node.log()
    );
    // At the HTTP level: the challenge answered once with 200, and each
    // event's id answered 204 once and never anything else.
    let posts: Vec<&Value> = all.iter().filter_map(|line| line.get("delivery")).collect();
    let verified: Vec<&&Value> = posts
        .iter()
        .filter(|post| post["kind"] == "verification")
        .collect();
    assert_eq!(verified.len(), 1, "{}", node.log());
    assert_eq!(verified[0]["status"], 200, "{}", node.log());
    for (_, event) in &seen {
        let answered: Vec<&Value> = posts
            .iter()
            .filter(|post| post["id"] == event["eventId"])
            .map(|post| &post["status"])
            .collect();
        assert_eq!(answered, [&json!(204)], "{}", node.log());
    }
}
