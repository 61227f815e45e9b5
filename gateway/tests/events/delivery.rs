//! Task events through `mcp-tasks-gateway --events webhooks` (issue #50):
//! a receiver over HTTPS with a certificate of its own
//! (`tests/upstreams/webhook/receiver.py`) checks every delivery's
//! signature with Python's `hmac`, an implementation independent of the
//! gateway's. The upstream is the rmcp fixture over loopback; each
//! subscription belongs to an OAuth subject.
//!
//! | Case | Expected |
//! |------|----------|
//! | a task runs to its end; the receiver answers 500 twice to each event | `working` then `completed`, each taken at its third try, every try signed |
//! | the receiver is down when the task ends, and the gateway (SQLite) is killed with SIGKILL before it could deliver | after the restart, with the receiver back on its port, each event taken once |
//! | over Redis, the gateway that ran the task is killed before it could deliver | another gateway over the same Redis delivers each event once (after the killed one's claim lapses) |
//! | an upstream with events of its own (`support::events_upstream`), `--events poll-push` | its type listed beside the gateway's, its poll and stream answered by it, its discover settings kept |

use crate::{events, gateway, redis_server, support, tokens};

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use events::{Receiving, gateway_with, receiving};
use redis_server::RedisServer;
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_fixture};
use support::process::Process;
use support::wait::wait_until;
use tokens::{SECRET, TempFile, hs256};
use tokio::process::Command;

/// How long a delivery may take to arrive: the gateway retries after 1,
/// 2 and 4 s, and a lost instance's claim lapses after 10 s.
const DELIVERED: Duration = Duration::from_secs(60);

/// The subscription's signing secret.
fn secret() -> String {
    format!("whsec_{}", STANDARD.encode([7u8; 32]))
}

/// Starts the receiver on `port` (0: a free one), failing the first
/// `fail` tries of each event.
async fn receiver(files: &Receiving, fail: u32, port: u16) -> Process {
    let script = gateway::repo().join("tests/upstreams/webhook/receiver.py");
    let mut command = Command::new("python3");
    command
        .arg(script)
        .args(["--cert", files.cert.path(), "--key", files.key.path()])
        .args(["--secret", &secret(), "--fail", &fail.to_string()])
        .args(["--port", &port.to_string(), "127.0.0.1"]);
    Process::start("webhook receiver", command, Duration::from_secs(30)).await
}

/// The receiver's port, from its URL.
fn port_of(receiver: &Process) -> u16 {
    let authority = receiver.url.trim_start_matches("https://");
    let port = authority.split(['/', ':']).nth(1).expect("a port");
    port.parse().expect("a port number")
}

/// The records the receiver printed.
fn records(receiver: &Process) -> Vec<Value> {
    receiver
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record.get("kind").is_some())
        .collect()
}

/// The statuses of `task` the receiver took (answered 204), each with the
/// tries it took and how many times it was taken.
fn taken(receiver: &Process, task: &str) -> Vec<(String, u64, usize)> {
    let mut taken: Vec<(String, String, u64)> = Vec::new();
    let mut times: HashMap<String, usize> = HashMap::new();
    for record in records(receiver) {
        assert_eq!(
            record["verified"], true,
            "a delivery not signed right: {record}"
        );
        let body = &record["body"];
        if record["kind"] != "event" || record["status"] != 204 || body["data"]["taskId"] != task {
            continue;
        }
        let id = record["id"].as_str().unwrap().to_owned();
        assert_eq!(body["eventId"], id.as_str(), "webhook-id is the event's id");
        *times.entry(id.clone()).or_default() += 1;
        if !taken.iter().any(|(known, _, _)| *known == id) {
            let status = body["data"]["status"].as_str().unwrap().to_owned();
            taken.push((id, status, record["try"].as_u64().unwrap()));
        }
    }
    taken
        .into_iter()
        .map(|(id, status, tries)| (status, tries, times[&id]))
        .collect()
}

/// Subscribes alice's tasks to the receiver on `port`.
async fn subscribe(client: &McpClient, port: u16) {
    let params = json!({
        "name": "mcp-tasks/status",
        "arguments": {},
        "delivery": {"mode": "webhook", "url": format!("https://localhost:{port}/hook"), "secret": secret()},
        "cursor": null,
    });
    let answer = client
        .request("events/subscribe", params, false)
        .await
        .into_response();
    assert!(
        answer["result"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("sub_")),
        "{answer}"
    );
}

/// Starts a short task as alice and waits for its end: its id.
async fn run_task(client: &McpClient) -> String {
    let task = client
        .start_task("slow_compute", json!({"seconds": 0.5}))
        .await;
    client
        .wait_task_status(&task, &["completed"], Duration::from_secs(20))
        .await;
    task
}

#[tokio::test]
async fn each_change_reaches_an_https_receiver_signed_and_on_the_third_try_when_it_fails_twice() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let files = receiving();
    let oauth = TempFile::new("secret", SECRET);
    let hooks = receiver(&files, 2, 0).await;
    let gateway = gateway_with(&upstream.url, &files, &oauth, &[]).await;
    let alice = McpClient::new(&gateway.url).with_bearer(hs256("alice", "mcp"));
    subscribe(&alice, port_of(&hooks)).await;
    let task = run_task(&alice).await;
    let seen = wait_until("both changes are taken", DELIVERED, || async {
        let seen = taken(&hooks, &task);
        (seen.len() == 2).then_some(seen)
    })
    .await;
    assert_eq!(
        seen,
        [("working".to_owned(), 3, 1), ("completed".to_owned(), 3, 1)],
        "{}",
        hooks.log()
    );
    let verification = records(&hooks)
        .into_iter()
        .filter(|record| record["kind"] == "verification")
        .count();
    assert_eq!(verification, 1);
}

#[tokio::test]
async fn an_upstreams_own_events_pass_through_the_gateway() {
    let upstream =
        support::fixture::serve(support::events_upstream::service::<axum::body::Body>()).await;
    let gateway = gateway::start(&upstream.url, &["--events", "poll-push"]).await;
    let client = McpClient::new(&gateway.url);
    let listed = client
        .request("events/list", json!({}), false)
        .await
        .into_response();
    let names: Vec<&str> = listed["result"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|event| event["name"].as_str())
        .collect();
    assert_eq!(names, ["build.finished", "mcp-tasks/status"], "{listed}");
    let discovered = client.discover().await;
    let extensions = &discovered["result"]["capabilities"]["extensions"];
    assert_eq!(
        extensions["io.modelcontextprotocol/events"],
        json!({"listChanged": true})
    );
    let poll = json!({"name": "build.finished", "arguments": {}, "cursor": null});
    let polled = client
        .request("events/poll", poll, false)
        .await
        .into_response();
    assert_eq!(polled["result"]["cursor"], "builds-8", "{polled}");
    assert_eq!(polled["result"]["events"][0]["eventId"], "build-7");
    let stream = json!({"name": "build.finished", "arguments": {}, "cursor": null});
    let streamed = client.request("events/stream", stream, false).await;
    let methods: Vec<&str> = streamed
        .messages
        .iter()
        .filter_map(|message| message["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        ["notifications/events/active", "notifications/events/event"],
        "{}",
        streamed.body
    );
    // The layer's own type is the gateway's.
    let own = json!({"name": "mcp-tasks/status", "arguments": {}, "cursor": null});
    let started = client
        .request("events/poll", own, false)
        .await
        .into_response();
    assert_eq!(started["result"]["events"], json!([]), "{started}");
}

#[tokio::test]
async fn a_gateway_killed_before_it_delivered_delivers_after_its_restart_once() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let files = receiving();
    let oauth = TempFile::new("secret", SECRET);
    let db = TempFile::new("events.db", b"");
    std::fs::remove_file(db.path()).expect("an empty path for the store");
    let first = receiver(&files, 0, 0).await;
    let port = port_of(&first);
    let mut gateway = gateway_with(&upstream.url, &files, &oauth, &["--sqlite", db.path()]).await;
    let alice = McpClient::new(&gateway.url).with_bearer(hs256("alice", "mcp"));
    subscribe(&alice, port).await;
    // The receiver goes away; the task ends while nobody takes its events.
    drop(first);
    let task = run_task(&alice).await;
    gateway.kill().await;

    let hooks = receiver(&files, 0, port).await;
    let mut restarted = gateway_with(&upstream.url, &files, &oauth, &["--sqlite", db.path()]).await;
    let seen = wait_until("the restarted gateway delivers", DELIVERED, || async {
        let seen = taken(&hooks, &task);
        (seen.iter().any(|(status, _, _)| status == "completed")).then_some(seen)
    })
    .await;
    let statuses: Vec<&str> = seen.iter().map(|(status, _, _)| status.as_str()).collect();
    assert_eq!(statuses, ["working", "completed"], "{}", hooks.log());
    assert!(
        seen.iter().all(|(_, _, times)| *times == 1),
        "each once: {seen:?}"
    );
    // Gone before its task file is removed: a process dying after the
    // removal could leave the file's WAL behind in the temp dir.
    restarted.kill().await;
}

#[tokio::test]
async fn over_redis_another_gateway_delivers_what_a_killed_one_could_not() {
    let Some(redis) = RedisServer::start() else {
        panic!("redis-server is needed for this test (.ci/run installs it)");
    };
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let files = receiving();
    let oauth = TempFile::new("secret", SECRET);
    let url = redis.url();
    let first = receiver(&files, 0, 0).await;
    let port = port_of(&first);
    let mut a = gateway_with(&upstream.url, &files, &oauth, &["--redis", &url]).await;
    let alice = McpClient::new(&a.url).with_bearer(hs256("alice", "mcp"));
    subscribe(&alice, port).await;
    drop(first);
    let task = run_task(&alice).await;
    // A holds the subscription's delivery claim (it has been trying); it
    // dies before any try succeeded. B starts only now.
    a.kill().await;
    let hooks = receiver(&files, 0, port).await;
    let b = gateway_with(&upstream.url, &files, &oauth, &["--redis", &url]).await;
    let seen = wait_until("the other gateway delivers", DELIVERED, || async {
        let seen = taken(&hooks, &task);
        (seen.iter().any(|(status, _, _)| status == "completed")).then_some(seen)
    })
    .await;
    let statuses: Vec<&str> = seen.iter().map(|(status, _, _)| status.as_str()).collect();
    assert_eq!(statuses, ["working", "completed"], "{}", hooks.log());
    assert!(
        seen.iter().all(|(_, _, times)| *times == 1),
        "each once: {seen:?}"
    );
    drop(b);
}
