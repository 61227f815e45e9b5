//! 2025-11-25 tasks over `RedisTaskStore`: two layer instances, each in front
//! of its own fixture replica in session mode, sharing one real
//! `redis-server`. A 2025-11-25 session lives on one instance (sessions need
//! sticky routing); its tasks are in Redis, so a session of the same
//! principal on the other instance reads, lists and cancels them.

use crate::{redis_server, support};

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{TaskId, TasksLayer};
use redis_server::RedisServer;
use serde_json::json;
use support::fixture::{self, FixtureMode, Probe, Served};
use support::layered::{CLIENT_TIMEOUT, principal_from_header, text};
use support::session::{Session, outcome};
use support::wait::{BOUND, next_millisecond};
use tower::ServiceBuilder;

struct Instance {
    served: Served,
    probe: Arc<Probe>,
}

async fn instance(redis: &RedisServer, prefix: &str) -> Instance {
    let store = RedisTaskStore::builder(redis.url())
        .prefix(prefix)
        .connect()
        .await
        .expect("connect to the test redis-server");
    let layer = TasksLayer::new(store)
        .ttl(Some(Duration::from_secs(60)))
        .list_page_size(2);
    let probe = Probe::new();
    let app = ServiceBuilder::new()
        .map_request(principal_from_header)
        .layer(layer)
        .service(fixture::service(FixtureMode::Session, probe.clone()));
    Instance {
        served: fixture::serve(app).await,
        probe,
    }
}

async fn session(instance: &Instance, user: &str) -> Session {
    let client = support::client::McpClient::new(&instance.served.url).with_timeout(CLIENT_TIMEOUT);
    Session::open_with(client, Some(user), "2025-11-25").await
}

#[tokio::test]
async fn legacy_tasks_live_in_redis_and_are_read_from_either_instance() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let prefix = format!("legacy-{}", TaskId::generate().expect("an id"));
    let a = instance(&redis, &prefix).await;
    let b = instance(&redis, &prefix).await;
    let on_a = session(&a, "alice").await;
    let on_b = session(&b, "alice").await;
    let mallory = session(&b, "mallory").await;

    // Three tasks on A: one finishes, one asks for input, one runs long.
    let quick = on_a.start_task("greet", json!({"name": "r"})).await;
    next_millisecond().await;
    let asking = on_a
        .start_task("confirm_delete", json!({"filename": "r.txt"}))
        .await;
    next_millisecond().await;
    let long = on_a
        .start_task("slow_compute", json!({"seconds": 30}))
        .await;

    // B's session lists them in two pages; mallory sees none of them.
    let first = on_b.request("tasks/list", json!({})).await;
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("page 2")
        .to_owned();
    let second = on_b.request("tasks/list", json!({"cursor": cursor})).await;
    let ids: Vec<String> = [&first, &second]
        .iter()
        .flat_map(|page| {
            page["result"]["tasks"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|task| task["taskId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids, [quick.clone(), asking.clone(), long.clone()]);
    let theirs = mallory.request("tasks/list", json!({})).await;
    assert_eq!(theirs["result"]["tasks"], json!([]), "{theirs}");

    // The outcome of A's task through B.
    let greeted = on_b.request("tasks/result", json!({"taskId": quick})).await;
    assert_eq!(text(&greeted["result"]), "Hello, r!");

    // The input request, relayed through Redis, answered in A's session
    // (the tool's session is A's, so the answer goes there).
    on_a.wait_status(&asking, &["input_required"]).await;
    let (stream, asked) = on_a.first_relayed(&asking).await;
    let accept = json!({"action": "accept", "content": {"confirm": true}});
    let (status, body) = on_a.answer(&asked, accept).await;
    assert_eq!(status, 202, "{body}");
    let result = outcome(stream).await;
    assert!(
        text(&result["result"]).starts_with("Deleted r.txt"),
        "{result}"
    );

    // A cancel on B stops the call running on A's replica.
    assert!(a.probe.wait_started("slow_compute", BOUND).await);
    let cancelled = on_b.request("tasks/cancel", json!({"taskId": long})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(a.probe.wait_cancelled("slow_compute", BOUND).await);
    assert_eq!(b.probe.started("slow_compute"), 0);
}
