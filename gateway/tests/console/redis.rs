//! The console of one gateway over a Redis store that another gateway
//! shares: the tasks the other one runs appear on its feed as they are
//! made, and its cancel stops their tool on the other gateway's upstream.

use std::time::Duration;

use serde_json::json;

use crate::gateway;
use crate::harness::{Console, TOKEN, http};
use crate::live::feed_until;
use crate::redis_server::RedisServer;
use crate::support::client::McpClient;
use crate::support::fixture::{FixtureMode, serve_fixture};

#[tokio::test]
async fn another_gateways_task_appears_on_the_feed_and_is_cancelled_from_here() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let url = redis.url();
    let (upstream_a, _) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream_a.url, &["--redis", &url]).await;
    let (upstream_b, probe_b) = serve_fixture(FixtureMode::Stateless).await;
    let other = gateway::start(&upstream_b.url, &["--redis", &url]).await;

    let mut feed = http()
        .get(format!("{}/api/feed", console.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    // The feed says it is ready once its watch holds every shard.
    let ready = tokio::time::timeout(Duration::from_secs(10), feed.chunk())
        .await
        .expect("the feed's first event")
        .unwrap()
        .unwrap();
    buffer.push_str(&String::from_utf8_lossy(&ready));

    let client = McpClient::new(&other.url);
    let task = client
        .start_task(
            "slow_compute",
            json!({"seconds": 120, "label": "elsewhere"}),
        )
        .await;
    let row = feed_until(&mut feed, &mut buffer, &task, &["working"]).await;
    assert_eq!(row["tool"], "slow_compute");

    let (status, cancelled) = console.post(&format!("/tasks/{task}/cancel")).await;
    assert_eq!(status, 200, "{cancelled}");
    assert!(
        probe_b
            .wait_cancelled("slow_compute", Duration::from_secs(20))
            .await,
        "the other gateway's tool stopped"
    );
    feed_until(&mut feed, &mut buffer, &task, &["cancelled"]).await;
}
