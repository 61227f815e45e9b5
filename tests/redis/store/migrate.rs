//! A deployment of the first key layout (`<prefix>:task:{<id>}`, …) keeps
//! its tasks when this version connects: the keys move under the hash tag
//! `{<prefix>}` once, the tasks read, list, answer and expire as before, and
//! the tasks its stopped instances were running are swept as after a crash.
//! While an instance of the old layout holds its lease, connecting is
//! refused and nothing moves.
//!
//! The layout-1 image is made by this version's store and then renamed back
//! key by key: the fields inside the keys are the same in both layouts, and
//! the one field layout 1 lacks (`q`, the rendered requests) is removed.

use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{InputProgress, InputRound, Quota, QuotaScope, StoreError, TaskStatus, TaskStore};
use redis::aio::MultiplexedConnection;

use super::redis_server::RedisServer;
use super::wait::{BOUND, wait_until};
use super::{fresh_prefix, new_task, raw};

const LOST: &str = "The server instance running this task was lost";

/// The layout-1 name of a layout-2 key `{<prefix>}:<rest>`.
fn v1_name(prefix: &str, key: &str) -> String {
    let rest = key
        .strip_prefix(&format!("{{{prefix}}}:"))
        .unwrap_or_else(|| panic!("{key} is not under the prefix"));
    for kind in ["task:", "round:", "instance:", "driving:"] {
        if let Some(id) = rest.strip_prefix(kind) {
            return format!("{prefix}:{kind}{{{id}}}");
        }
    }
    format!("{prefix}:{rest}")
}

async fn keys(conn: &mut MultiplexedConnection, pattern: &str) -> Vec<String> {
    let mut found: Vec<String> = redis::cmd("KEYS")
        .arg(pattern)
        .query_async(conn)
        .await
        .unwrap();
    found.sort();
    found
}

/// Turns the prefix's keys back into layout 1: renames them, drops `q`,
/// the logs of status changes (layout 1 had none) and the layout marker.
async fn downgrade(conn: &mut MultiplexedConnection, prefix: &str) {
    let _: () = redis::cmd("DEL")
        .arg(format!("{{{prefix}}}:meta"))
        .query_async(conn)
        .await
        .unwrap();
    for key in keys(conn, &format!("{{{prefix}}}:*")).await {
        if key.starts_with(&format!("{{{prefix}}}:events:")) {
            let _: () = redis::cmd("DEL").arg(&key).query_async(conn).await.unwrap();
            continue;
        }
        if key.contains(":task:") {
            let _: () = redis::cmd("HDEL")
                .arg(&key)
                .arg("q")
                .query_async(conn)
                .await
                .unwrap();
        }
        let _: () = redis::cmd("RENAME")
            .arg(&key)
            .arg(v1_name(prefix, &key))
            .query_async(conn)
            .await
            .unwrap();
    }
}

async fn connect(server: &RedisServer, prefix: &str) -> Result<RedisTaskStore, StoreError> {
    RedisTaskStore::builder(server.url())
        .prefix(prefix)
        .lease(Duration::from_millis(400))
        .connect()
        .await
}

#[tokio::test]
async fn a_layout_one_deployment_keeps_its_tasks_across_the_upgrade() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();

    // The old deployment: one instance, four tasks in four states.
    let old = connect(&server, &prefix).await.unwrap();
    let running = new_task(Some("alice"), Some(Duration::from_secs(600)));
    old.create(running.clone()).await.unwrap();
    let mut capped = new_task(Some("alice"), Some(Duration::from_secs(600)));
    capped.quota = Quota {
        per_owner: Some(2),
        total: Some(10),
    };
    old.create(capped.clone()).await.unwrap();
    old.complete(capped.id, raw(r#"{"done":true}"#))
        .await
        .unwrap();
    let waiting = new_task(None, Some(Duration::from_secs(600)));
    old.create(waiting.clone()).await.unwrap();
    let round = InputRound {
        requests: vec![
            ("1.a".into(), raw(r#"{"q":"a/b"}"#)),
            ("1.b".into(), raw("{}")),
        ],
        resume: raw(r#"{"r":1}"#),
    };
    old.require_input(waiting.id, round).await.unwrap();
    let before_waiting = old.get(waiting.id, None).await.unwrap().unwrap();
    let before_capped = old.get(capped.id, Some("alice")).await.unwrap().unwrap();
    let iid = old.instance_id().to_owned();
    drop(old);
    // The old instance's background work stops with its connections: ours
    // is the only one left before anything is renamed under it.
    wait_until("the old instance lets go of Redis", BOUND, || {
        let mut conn = conn.clone();
        async move {
            let clients: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut conn)
                .await
                .unwrap();
            if clients.lines().count() == 1 {
                Ok(())
            } else {
                Err(clients)
            }
        }
    })
    .await;
    downgrade(&mut conn, &prefix).await;
    let v1_keys = keys(&mut conn, &format!("{prefix}:*")).await;
    assert!(
        v1_keys.contains(&format!("{prefix}:task:{{{}}}", running.id)),
        "{v1_keys:?}"
    );
    assert!(
        v1_keys.contains(&format!("{prefix}:live:owned:alice")),
        "{v1_keys:?}"
    );

    // The old instance still holds its lease: refused, nothing moved.
    let lease = format!("{prefix}:instance:{{{iid}}}");
    let _: () = redis::cmd("SET")
        .arg(&lease)
        .arg("1")
        .arg("PX")
        .arg(60_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let refused = connect(&server, &prefix).await.map(|_| ()).unwrap_err();
    assert!(
        refused.to_string().contains("previous mcp-tasks version"),
        "{refused}"
    );
    assert_eq!(keys(&mut conn, &format!("{prefix}:*")).await, v1_keys);
    assert!(
        keys(&mut conn, &format!("{{{prefix}}}:task:*"))
            .await
            .is_empty()
    );

    // It stops (its lease runs out): two new instances connect at once.
    let _: () = redis::cmd("DEL")
        .arg(&lease)
        .query_async(&mut conn)
        .await
        .unwrap();
    let (a, b) = tokio::join!(connect(&server, &prefix), connect(&server, &prefix));
    let (a, b) = (a.unwrap(), b.unwrap());
    let left: Vec<String> = keys(&mut conn, &format!("{prefix}:*"))
        .await
        .into_iter()
        .filter(|key| !key.starts_with(&format!("{prefix}:instance:")))
        .collect();
    assert!(left.is_empty(), "layout-1 keys left behind: {left:?}");

    // Everything reads as before; the listing and the quota still count.
    let read = a.get(capped.id, Some("alice")).await.unwrap();
    assert_eq!(format!("{read:?}"), format!("{:?}", Some(before_capped)));
    let read = b.get(waiting.id, None).await.unwrap();
    assert_eq!(format!("{read:?}"), format!("{:?}", Some(before_waiting)));
    let ids = a.list_owned(Some("alice"), None, 10).await.unwrap().ids;
    assert!(
        ids.contains(&running.id) && ids.contains(&capped.id),
        "{ids:?}"
    );
    let mut over = new_task(Some("alice"), Some(Duration::from_secs(600)));
    over.quota = Quota {
        per_owner: Some(1),
        total: None,
    };
    let refusal = a.create(over).await.unwrap_err();
    assert!(
        matches!(refusal, StoreError::QuotaExceeded(QuotaScope::Owner)),
        "the migrated running task counts against alice's cap: {refusal:?}"
    );

    // The round answers on the new layout and hands back its resume context.
    let answered = b
        .answer_input(
            waiting.id,
            None,
            vec![("1.a".into(), raw("1")), ("1.b".into(), raw("2"))],
        )
        .await
        .unwrap();
    assert!(
        matches!(answered, Some(InputProgress::RoundComplete { .. })),
        "{answered:?}"
    );

    // The task the old instance was running is failed by the sweep.
    let failed = wait_until("the sweep of the old instance", BOUND, || async {
        let read = a.get(running.id, Some("alice")).await.unwrap().unwrap();
        (read.status() != TaskStatus::Working).then_some(read)
    })
    .await;
    assert_eq!(failed.status(), TaskStatus::Failed);
    assert!(
        format!("{failed:?}").contains(LOST),
        "failed for another reason: {failed:?}"
    );
}
