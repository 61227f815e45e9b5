//! A store split into shards. On one server `shards(4)` runs every shard's
//! scripts as a cluster would, each under its own hash tag: the contracts
//! hold, owners spread over the shards, the operator's listing merges them
//! in creation order, the total cap is kept by reservation and given back
//! by a refused create, and a prefix keeps the shard count it began with.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{Quota, QuotaScope, StoreError, TaskStore};

use super::redis_server::RedisServer;
use super::wait::{BOUND, wait_until};
use super::{contract, fresh_prefix, new_task, pair, raw_connection};

async fn sharded(server: &RedisServer, prefix: &str, count: u16) -> RedisTaskStore {
    RedisTaskStore::builder(server.url())
        .prefix(prefix)
        .shards(count)
        .connect()
        .await
        .expect("connect to the test redis-server")
}

/// A plain connection to the test server, to look at Redis itself.
#[tokio::test]
async fn the_contracts_hold_with_four_shards() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let make = || async { sharded(&server, &fresh_prefix(), 4).await };
    contract::run(make).await;
    contract::changes::run(make).await;
    contract::admin::run(make).await;
}

#[tokio::test]
async fn two_sharded_instances_share_tasks_and_stop_signals() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let pair = || async {
        let prefix = fresh_prefix();
        let a = sharded(&server, &prefix, 4).await;
        (a, sharded(&server, &prefix, 4).await)
    };
    let (a, b) = pair().await;
    pair::created_on_one_is_readable_on_another(&a, &b).await;
    let (a, b) = pair().await;
    pair::a_cancel_on_one_fires_the_stop_signal_of_another(&a, &b).await;
    let (a, b) = pair().await;
    pair::an_operators_delete_on_one_stops_the_task_on_another(&a, &b).await;
    let (a, b) = pair().await;
    pair::a_round_completed_on_another_returns_the_resume_context(&a, &b).await;
    let (a, b) = pair().await;
    pair::racing_instances_get_exactly_one_winner_per_transition(&a, &b).await;
}

#[tokio::test]
async fn owners_spread_over_the_shards_and_the_operator_sees_them_in_order() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let store = sharded(&server, &prefix, 4).await;
    let mut created = Vec::new();
    for n in 0..16 {
        let task = new_task(Some(&format!("owner-{n}")), Some(Duration::from_secs(60)));
        store.create(task.clone()).await.unwrap();
        created.push(task);
    }
    // Each task key is in exactly one shard, none under the unsharded tag.
    let mut conn = raw_connection(&server).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{prefix}*:task:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut per_shard = BTreeMap::<String, usize>::new();
    for key in &keys {
        let shard = key[..key.find('}').unwrap() + 1].to_owned();
        *per_shard.entry(shard).or_default() += 1;
    }
    assert_eq!(keys.len(), 16, "{keys:?}");
    assert!(
        !per_shard.contains_key(&format!("{{{prefix}}}")),
        "{per_shard:?}"
    );
    assert!(
        per_shard.len() >= 2,
        "16 owners in one shard: {per_shard:?}"
    );

    // Pages of 3 over the merged indexes: every task once, in creation order.
    let mut expected: Vec<_> = created
        .iter()
        .map(|task| (task.created_at.as_millis(), task.id.as_u128()))
        .collect();
    expected.sort_unstable();
    let (mut seen, mut cursor) = (Vec::new(), None);
    loop {
        let page = store.admin_list(cursor.as_deref(), 3).await.unwrap();
        assert!(page.tasks.len() <= 3);
        seen.extend(page.tasks.iter().map(|task| {
            (
                task.snapshot.created_at.as_millis(),
                task.snapshot.id.as_u128(),
            )
        }));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, expected);
    let counts = store.admin_counts().await.unwrap();
    assert_eq!(
        format!("{counts:?}").matches("owner-").count(),
        16,
        "{counts:?}"
    );
}

#[tokio::test]
async fn a_refused_create_gives_back_its_place_under_the_total_cap() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = sharded(&server, &fresh_prefix(), 4).await;
    let quota = Quota {
        per_owner: Some(1),
        total: Some(2),
    };
    let create = |owner: &str| {
        let mut task = new_task(Some(owner), Some(Duration::from_secs(60)));
        task.quota = quota;
        store.create(task)
    };
    create("alice").await.unwrap();
    // Refused by alice's own cap after it had reserved a place in the total.
    assert!(matches!(
        create("alice").await,
        Err(StoreError::QuotaExceeded(QuotaScope::Owner))
    ));
    // That place was given back: bob fits, and then the total is full.
    create("bob").await.unwrap();
    assert!(matches!(
        create("carol").await,
        Err(StoreError::QuotaExceeded(QuotaScope::Total))
    ));
    // Both full: the owner's refusal is reported first, as with one shard.
    assert!(matches!(
        create("alice").await,
        Err(StoreError::QuotaExceeded(QuotaScope::Owner))
    ));
}

#[tokio::test]
async fn a_prefix_keeps_the_shard_count_it_began_with() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let four = sharded(&server, &prefix, 4).await;
    let refused = RedisTaskStore::builder(server.url())
        .prefix(&prefix)
        .shards(2)
        .connect()
        .await
        .expect_err("a different shard count");
    assert!(refused.to_string().contains("shards(4)"), "{refused}");
    drop(four);

    // A prefix of one shard (written before counts were recorded, too).
    let prefix = fresh_prefix();
    let one = sharded(&server, &prefix, 1).await;
    one.create(new_task(None, Some(Duration::from_secs(60))))
        .await
        .unwrap();
    let mut conn = raw_connection(&server).await;
    let _: () = redis::cmd("HDEL")
        .arg(format!("{{{prefix}}}:meta"))
        .arg("n")
        .query_async(&mut conn)
        .await
        .unwrap();
    let refused = RedisTaskStore::builder(server.url())
        .prefix(&prefix)
        .shards(4)
        .connect()
        .await
        .expect_err("a one-shard prefix");
    assert!(refused.to_string().contains("shards(1)"), "{refused}");
    sharded(&server, &prefix, 1).await;
}

#[tokio::test]
async fn a_quiet_instance_subscribes_to_nothing_and_hears_nothing() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let (a, b) = (
        sharded(&server, &prefix, 4).await,
        sharded(&server, &prefix, 4).await,
    );
    let admin = raw_connection(&server).await;
    // Subscribers of each shard's end-of-task channel.
    let tags: Vec<String> = (0..4).map(|k| format!("{{{prefix}:s{k}}}")).collect();
    let subscribers = async || -> Vec<u32> {
        let mut admin = admin.clone();
        let mut ask = redis::cmd("PUBSUB");
        ask.arg("NUMSUB");
        for tag in &tags {
            ask.arg(format!("{tag}:ended"));
        }
        let reply: Vec<redis::Value> = ask.query_async(&mut admin).await.unwrap();
        reply
            .chunks(2)
            .map(|pair| redis::from_redis_value_ref(&pair[1]).unwrap())
            .collect()
    };
    assert_eq!(
        subscribers().await,
        [0, 0, 0, 0],
        "nobody wants anything yet"
    );
    let mut heard_by_b = b.changes().expect("a change feed");

    // A runs a task of alice: A subscribes to her shard, and only to it.
    let task = new_task(Some("alice"), Some(Duration::from_secs(60)));
    let created = a.create(task.clone()).await.unwrap();
    let key = a.task_key(task.id, Some("alice"));
    let alice = tags
        .iter()
        .position(|tag| key.starts_with(tag.as_str()))
        .unwrap();
    let mut expected = [0, 0, 0, 0];
    expected[alice] = 1;
    assert_eq!(subscribers().await, expected);
    // B cancels it: A hears the end, B (which wants nothing) hears nothing.
    b.cancel(task.id, Some("alice")).await.unwrap();
    tokio::time::timeout(BOUND, created.stop.cancelled())
        .await
        .expect("A's stop signal fired");
    // A window for a wrong announcement to reach B: an absence can only be watched for.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(heard_by_b.try_recv().is_err(), "B heard an announcement");
    assert_eq!(subscribers().await, expected, "A lingers, B stays out");

    // Someone on B listens to bob: B subscribes to bob's shard.
    let listening = b.listen(Some("bob")).expect("the store listens");
    let bob_task = new_task(Some("bob"), None);
    let bob = b.task_key(bob_task.id, Some("bob"));
    let bob = tags
        .iter()
        .position(|tag| bob.starts_with(tag.as_str()))
        .unwrap();
    expected[bob] += 1;
    wait_until("B subscribes to bob's shard", BOUND, || async {
        let now = subscribers().await;
        if now == expected { Ok(()) } else { Err(now) }
    })
    .await;
    drop(listening);
}
