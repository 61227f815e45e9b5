//! The console's API as the page uses it: pages and filters, the feed of
//! changed rows, the actions, and values as clients and tools chose them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Console, TOKEN, http};
use crate::support::client::McpClient;
use crate::support::fixture::{FixtureMode, serve_fixture};

#[tokio::test]
async fn pages_follow_the_cursor_and_filters_pick_status_tool_and_owner() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let client = McpClient::new(&console.gateway.url);
    // First, so that a filter on the others skips it within a page.
    let structured = client
        .start_task("slow_structured", json!({"seconds": 60}))
        .await;
    crate::support::wait::next_millisecond().await;
    let started = futures_util::future::join_all((0..5).map(|n| {
        let client = &client;
        async move {
            client
                .start_task(
                    "slow_compute",
                    json!({"seconds": 60, "label": format!("job {n}")}),
                )
                .await
        }
    }))
    .await;

    // Pages of two: every task once, then the end.
    let mut expected = started.clone();
    expected.push(structured.clone());
    expected.sort();
    assert_eq!(every_page(&console, "").await, expected);
    // Filtered, a page never holds more than its limit, though the store's
    // second page of two adds two matches to the first's one; the rest
    // comes on the next page, nothing lost or twice.
    let mut compute = started.clone();
    compute.sort();
    assert_eq!(every_page(&console, "&tool=slow_compute").await, compute);

    let row = console
        .row(&structured, "tool=slow_structured")
        .await
        .expect("listed by its tool");
    assert_eq!(row["tool"], "slow_structured");
    assert_eq!(row["status"], "working");
    assert_eq!(row["attempt"], 1);
    assert!(row["owner"].is_null(), "no principal: {row}");
    assert!(
        console
            .row(&started[0], "tool=slow_structured")
            .await
            .is_none()
    );
    assert!(console.row(&started[0], "status=completed").await.is_none());
    assert!(console.row(&started[0], "owner=someone").await.is_none());

    let (status, refused) = console.get("/tasks?cursor=not-a-cursor").await;
    assert_eq!(status, 400, "{refused}");
}

/// The ids of every page of two rows with `query`, followed to the end,
/// sorted; each page holds at most two and no id comes twice.
async fn every_page(console: &Console, query: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = console
            .get(&format!("/tasks?limit=2&cursor={cursor}{query}"))
            .await;
        assert_eq!(status, 200, "{page}");
        let rows = page["rows"].as_array().unwrap();
        assert!(rows.len() <= 2, "{page}");
        seen.extend(
            rows.iter()
                .map(|row| row["id"].as_str().unwrap().to_owned()),
        );
        match page["next"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "a task twice: {seen:?}");
    sorted
}

/// The next `rows` event of the feed that carries `id` with a status in
/// `statuses`; the events skipped on the way are returned too.
pub async fn feed_until(
    events: &mut reqwest::Response,
    buffer: &mut String,
    id: &str,
    statuses: &[&str],
) -> Value {
    let found = async {
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                let Some(data) = event.lines().find_map(|line| line.strip_prefix("data: ")) else {
                    continue;
                };
                if !event.starts_with("event: rows") {
                    continue;
                }
                let batch: Value = serde_json::from_str(data).expect("rows JSON");
                if let Some(row) = batch["rows"].as_array().unwrap().iter().find(|row| {
                    row["id"] == id && statuses.contains(&row["status"].as_str().unwrap())
                }) {
                    return row.clone();
                }
            }
            let chunk = events
                .chunk()
                .await
                .expect("feed bytes")
                .expect("the feed goes on");
            buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    tokio::time::timeout(Duration::from_secs(20), found)
        .await
        .unwrap_or_else(|_| panic!("no row of {id} in {statuses:?}: {buffer}"))
}

#[tokio::test]
async fn the_feed_sends_each_changed_task_and_actions_are_bounded_and_audited() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let client = McpClient::new(&console.gateway.url);
    let feed = http()
        .get(format!("{}/api/feed", console.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status().as_u16(), 200);
    assert_eq!(feed.headers()["content-type"], "text/event-stream");
    let mut events = feed;
    let mut buffer = String::new();

    let task = client
        .start_task("slow_compute", json!({"seconds": 1.5, "bare": true}))
        .await;
    let working = feed_until(&mut events, &mut buffer, &task, &["working"]).await;
    assert_eq!(working["tool"], "slow_compute");
    let moved = feed_until(&mut events, &mut buffer, &task, &["working"]).await;
    let progress = moved["progress"].as_f64().unwrap_or(-1.0);
    assert!(
        progress > 0.0 && progress < 1.0,
        "the bar is read from the progress: {moved}"
    );
    let done = feed_until(&mut events, &mut buffer, &task, &["completed"]).await;
    assert_eq!(done["progress"], 1.0);
    assert!(done["finished"].as_bool().unwrap());

    // Delete: not while it runs; cancel first, then delete.
    let running = client
        .start_task("slow_compute", json!({"seconds": 60}))
        .await;
    let (status, _) = console.post(&format!("/tasks/{running}/delete")).await;
    assert_eq!(status, 409);
    let (status, cancelled) = console.post(&format!("/tasks/{running}/cancel")).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["row"]["status"], "cancelled");
    assert!(
        probe
            .wait_cancelled("slow_compute", Duration::from_secs(10))
            .await
    );
    feed_until(&mut events, &mut buffer, &running, &["cancelled"]).await;
    let (status, _) = console.post(&format!("/tasks/{running}/cancel")).await;
    assert_eq!(status, 409, "a finished task cannot be cancelled again");
    let (status, deleted) = console.post(&format!("/tasks/{running}/delete")).await;
    assert_eq!(status, 200, "{deleted}");
    let gone = client.tasks_get(&running).await;
    assert!(
        gone.get("error").is_some(),
        "its owner finds nothing: {gone}"
    );
    let (status, _) = console.post(&format!("/tasks/{running}/delete")).await;
    assert_eq!(status, 404);
    let (status, _) = console.post("/tasks/not-a-task/cancel").await;
    assert_eq!(status, 404);
    let log = console.gateway.log();
    for outcome in [
        "outcome=\"refused: running\"",
        "outcome=\"cancelled\"",
        "outcome=\"deleted\"",
        "outcome=\"refused: unknown\"",
    ] {
        assert!(
            log.contains(outcome),
            "no audit line with {outcome}:\n{log}"
        );
    }
}

#[tokio::test]
async fn values_are_kept_as_chosen_and_long_ones_are_cut() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let client = McpClient::new(&console.gateway.url);
    let hostile =
        "<script>window.__pwned=1</script>\"><img src=x onerror=\"window.__pwned=2\">\u{1}\u{7f}é";
    let task = client
        .start_task("slow_compute", json!({"seconds": 60, "label": hostile}))
        .await;
    let long = "x".repeat(1 << 20);
    let big = client
        .start_task("slow_compute", json!({"seconds": 60, "label": long}))
        .await;
    let row = console.row(&task, "").await.expect("listed");
    let message = row["message"].as_str().unwrap();
    assert!(message.starts_with(hostile), "{message:?}");
    let row = console.row(&big, "").await.expect("listed");
    let message = row["message"].as_str().unwrap();
    assert_eq!(message.len(), 4096 + "…".len());
    assert!(message.ends_with('…'));
}

#[tokio::test]
async fn with_oauth_on_each_task_shows_its_subject_and_the_owner_filter_picks_it() {
    use crate::tokens::{SECRET, TempFile, hs256, hs256_options};
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let secret = TempFile::new("secret", SECRET);
    let console = Console::start(&upstream.url, &hs256_options(&secret)).await;
    let alice = McpClient::new(&console.gateway.url).with_bearer(hs256("alice", "mcp"));
    let bob = McpClient::new(&console.gateway.url).with_bearer(hs256("bob", "mcp"));
    let hers = alice
        .start_task("slow_compute", json!({"seconds": 60}))
        .await;
    let his = bob.start_task("slow_compute", json!({"seconds": 60})).await;

    let row = console
        .row(&hers, "owner=alice")
        .await
        .expect("alice's task");
    assert!(row["owner"].as_str().unwrap().contains("alice"), "{row}");
    assert!(console.row(&his, "owner=alice").await.is_none());
    assert!(console.row(&his, "owner=bob").await.is_some());
    // The operator cancels bob's task without bob's token; bob sees it end.
    let (status, _) = console.post(&format!("/tasks/{his}/cancel")).await;
    assert_eq!(status, 200);
    let got = bob.tasks_get(&his).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    // The console's credential is not a token of the MCP endpoint.
    let stranger = McpClient::new(&console.gateway.url).with_bearer(TOKEN);
    let refused = stranger.tasks_get(&hers).await;
    assert!(refused.get("result").is_none(), "{refused}");
}

#[tokio::test]
async fn at_most_sixteen_feeds_are_open_and_a_closed_one_frees_its_place() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let open = || async {
        http()
            .get(format!("{}/api/feed", console.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
    };
    let mut feeds = Vec::new();
    for _ in 0..16 {
        let feed = open().await;
        assert_eq!(feed.status().as_u16(), 200);
        feeds.push(feed);
    }
    let refused = open().await;
    assert_eq!(refused.status().as_u16(), 503);
    let (_, overview) = console.get("/overview").await;
    assert_eq!(overview["consoles"], 16, "{overview}");
    drop(feeds.pop());
    // The place comes back once the server sees the stream dropped: at
    // its next write at the latest, the heartbeat (15 s).
    crate::support::wait::wait_until(
        "a feed's place is free",
        Duration::from_secs(30),
        || async {
            let (_, overview) = console.get("/overview").await;
            overview["consoles"] == 15
        },
    )
    .await;
    assert_eq!(open().await.status().as_u16(), 200);
}
