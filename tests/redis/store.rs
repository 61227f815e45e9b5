//! `RedisTaskStore` keeps the store contract, and several instances on one
//! Redis share tasks and stop signals. Each test starts its own
//! `redis-server` (see `support/redis_server.rs`).

use crate::{contract, pair, redis_server};

/// A broken call of a task that may run again is counted as a run.
mod attempts;
/// A write that ran although its caller saw an error is settled.
mod doubts;
/// Leases: the running tasks of a lost instance are failed by another.
mod leases;
/// A deployment of the first key layout moves to today's at connect.
mod migrate;
/// `get` is one HMGET, its input requests kept rendered in the task.
mod reads;
/// A store split into shards, each under a hash tag of its own.
mod shards;
/// An owner's log past its bound, and a cursor past its end.
mod trim;

use std::future::Future;
use std::time::Duration;

use contract::wait;
use mcp_tasks::store::{ListCursor, RedisTaskStore};
use mcp_tasks::{NewTask, Quota, QuotaScope, StoreError, TaskId, TaskStore, Timestamp};
use pair::{fresh_prefix, new_task, raw};
use redis_server::RedisServer;
use wait::{BOUND, wait_until};

async fn connect(server: &RedisServer, prefix: &str) -> RedisTaskStore {
    RedisTaskStore::builder(server.url())
        .prefix(prefix)
        .connect()
        .await
        .expect("connect to the test redis-server")
}

/// An instance over `prefix` whose lease lasts `lease`.
async fn connect_with_lease(server: &RedisServer, prefix: &str, lease: Duration) -> RedisTaskStore {
    RedisTaskStore::builder(server.url())
        .prefix(prefix)
        .lease(lease)
        .connect()
        .await
        .expect("connect to the test redis-server")
}

/// Deletes `store`'s lease key, as if its instance had stopped renewing it
/// long ago: the next sweep of another instance takes its tasks.
async fn drop_lease(server: &RedisServer, prefix: &str, store: &RedisTaskStore) {
    let mut conn = raw_connection(server).await;
    let lease_key = format!("{{{prefix}}}:instance:{}", store.instance_id());
    let deleted: i64 = redis::cmd("DEL")
        .arg(&lease_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1, "the instance holds its lease under {lease_key}");
}

/// Two instances sharing one Redis and one prefix, as behind a load balancer.
async fn two_instances(server: &RedisServer) -> (RedisTaskStore, RedisTaskStore) {
    let prefix = fresh_prefix();
    (
        connect(server, &prefix).await,
        connect(server, &prefix).await,
    )
}

/// A plain connection to `server`, for looking at Redis itself.
async fn raw_connection(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(server.url()).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// Creates a task of alice's on `store` and has it wait for one answer, key `1.a`.
async fn waiting_task(store: &RedisTaskStore) -> NewTask {
    let task = new_task(Some("alice"), None);
    store.create(task.clone()).await.unwrap();
    let round = mcp_tasks::InputRound {
        requests: vec![("1.a".into(), raw("{}"))],
        resume: raw(r#"{"r":1}"#),
    };
    store.require_input(task.id, round).await.unwrap();
    task
}

/// Bounds a store call, so that a hang fails the test instead of stalling it.
async fn bounded<T>(what: &str, call: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}

#[tokio::test]
async fn the_redis_store_keeps_the_store_contract() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    // A fresh prefix per rule: every rule sees an empty store.
    contract::run(|| async { connect(&server, &fresh_prefix()).await }).await;
}

#[tokio::test]
async fn the_redis_store_announces_its_changes() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    contract::changes::run(|| async { connect(&server, &fresh_prefix()).await }).await;
}

#[tokio::test]
async fn the_redis_store_keeps_the_events_contract() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    contract::events::run(|| async { connect(&server, &fresh_prefix()).await }).await;
}

#[tokio::test]
async fn the_redis_store_keeps_the_operators_contract() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    contract::admin::run(|| async { connect(&server, &fresh_prefix()).await }).await;
}

#[tokio::test]
async fn a_task_created_on_one_instance_is_readable_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    pair::created_on_one_is_readable_on_another(&a, &b).await;
}

#[tokio::test]
async fn a_cancel_on_one_instance_fires_the_stop_signal_of_another_within_a_second() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    pair::a_cancel_on_one_fires_the_stop_signal_of_another(&a, &b).await;
}

#[tokio::test]
async fn an_operators_watch_on_a_quiet_instance_hears_the_tasks_of_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    pair::an_operators_watch_on_one_hears_every_task_of_another(&a, &b).await;
}

#[tokio::test]
async fn an_operators_delete_on_one_instance_stops_the_task_running_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    pair::an_operators_delete_on_one_stops_the_task_on_another(&a, &b).await;
}

#[tokio::test]
async fn an_input_round_completed_on_another_instance_returns_the_resume_context() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    pair::a_round_completed_on_another_returns_the_resume_context(&a, &b).await;
}

#[tokio::test]
async fn racing_instances_get_exactly_one_winner_per_transition() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    pair::racing_instances_get_exactly_one_winner_per_transition(&a, &b).await;
}

#[tokio::test]
async fn the_owner_listing_pages_in_creation_order_and_never_shows_another_owner() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    let mut alice = Vec::new();
    for at in 0..8u64 {
        // Some of alice's tasks expire before the listing; every other one is
        // created on the other instance. Equal creation times test the ties.
        let ttl = if at % 3 == 1 { 50 } else { 60_000 };
        let mut task = new_task(Some("alice"), Some(Duration::from_millis(ttl)));
        task.created_at = Timestamp::from_millis(Timestamp::now().as_millis() + at / 2);
        let store = if at % 2 == 0 { &a } else { &b };
        store.create(task.clone()).await.unwrap();
        if ttl == 60_000 {
            alice.push((task.created_at, task.id));
        }
        a.create(new_task(Some("bob"), None)).await.unwrap();
        b.create(new_task(None, None)).await.unwrap();
    }
    alice.sort();
    let alice: Vec<TaskId> = alice.into_iter().map(|(_, id)| id).collect();

    // Listed page by page until the short-lived tasks have expired.
    let listing = || async {
        let mut listed = Vec::new();
        let mut cursor: Option<ListCursor> = None;
        for _ in 0..10 {
            let page = b.list_owned(Some("alice"), cursor, 2).await.unwrap();
            assert!(page.ids.len() <= 2);
            listed.extend(page.ids);
            // The cursor survives a trip through its text form.
            cursor = page
                .next
                .map(|c| ListCursor::parse(&c.to_string()).unwrap());
            if cursor.is_none() {
                break;
            }
        }
        assert!(cursor.is_none(), "the listing ends");
        if listed == alice { Ok(()) } else { Err(listed) }
    };
    wait_until(
        "alice's live tasks listed, oldest first, each once",
        BOUND,
        listing,
    )
    .await;

    let bob = a.list_owned(Some("bob"), None, 100).await.unwrap();
    assert_eq!(bob.ids.len(), 8);
    assert!(bob.ids.iter().all(|id| !alice.contains(id)));
    let unowned = a.list_owned(None, None, 100).await.unwrap();
    assert_eq!(unowned.ids.len(), 8, "no owner is an owner of its own");
    assert!(unowned.ids.iter().all(|id| !bob.ids.contains(id)));
    let nobody = a.list_owned(Some("mallory"), None, 100).await.unwrap();
    assert!(nobody.ids.is_empty() && nobody.next.is_none());
}

#[tokio::test]
async fn a_listing_cursor_survives_the_expiry_of_the_task_it_names() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    // Four tasks created in the same millisecond: the index orders them by id.
    let created_at = Timestamp::now();
    let mut tasks: Vec<NewTask> = (0..4).map(|_| new_task(Some("alice"), None)).collect();
    tasks.sort_by_key(|task| task.id.to_string());
    for task in &mut tasks {
        task.created_at = created_at;
    }
    tasks[1].ttl = Some(Duration::from_millis(300));
    for task in &tasks {
        store.create(task.clone()).await.unwrap();
    }
    let first = store.list_owned(Some("alice"), None, 2).await.unwrap();
    assert_eq!(first.ids, vec![tasks[0].id, tasks[1].id]);
    // Once it expired, a listing from the start steps over the expired entry
    // and drops it, so the cursor now names an entry the index no longer has.
    wait_until("the expired task is stepped over", BOUND, || async {
        let again = store.list_owned(Some("alice"), None, 10).await.unwrap();
        if again.ids == vec![tasks[0].id, tasks[2].id, tasks[3].id] {
            Ok(())
        } else {
            Err(again.ids)
        }
    })
    .await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut raw_conn = client.get_multiplexed_async_connection().await.unwrap();
    let index = format!("{}:owned:alice", store.prefix());
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(&index)
        .arg(tasks[1].id.to_string())
        .query_async(&mut raw_conn)
        .await
        .unwrap();
    assert_eq!(score, None, "the expired entry left the index");
    let rest = store
        .list_owned(Some("alice"), first.next, 10)
        .await
        .unwrap();
    assert_eq!(rest.ids, vec![tasks[2].id, tasks[3].id]);
    assert!(rest.next.is_none());
}

#[tokio::test]
async fn live_sets_are_written_only_under_a_quota_and_expire_with_their_longest_task() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut raw_conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut pttl = async |name: &str| -> i64 {
        let key = format!("{{{}}}:live:{name}", store.prefix());
        let cmd = redis::cmd("PTTL").arg(key).to_owned();
        cmd.query_async(&mut raw_conn).await.unwrap()
    };
    let hour = Some(Duration::from_secs(3600));
    store.create(new_task(Some("alice"), hour)).await.unwrap();
    assert_eq!(pttl("all").await, -2, "no quota, no live set");
    assert_eq!(pttl("owned:alice").await, -2, "no quota, no live set");

    let quota = Quota {
        per_owner: Some(2),
        total: None,
    };
    let mut task = new_task(Some("alice"), hour);
    task.quota = quota;
    store.create(task).await.unwrap();
    for name in ["all", "owned:alice"] {
        let left = pttl(name).await;
        assert!(
            (3_590_000..=3_600_000).contains(&left),
            "{name} expires with its task, in {left} ms"
        );
    }
    let mut forever = new_task(None, None);
    forever.quota = quota;
    store.create(forever).await.unwrap();
    assert_eq!(
        pttl("all").await,
        -1,
        "kept while it holds a task without TTL"
    );
    assert_eq!(
        pttl("unowned").await,
        -1,
        "kept while it holds a task without TTL"
    );

    let held = store.held_stop_signals();
    let mut refused = new_task(None, None);
    refused.quota = Quota {
        per_owner: None,
        total: Some(2),
    };
    let refused = store.create(refused).await;
    assert!(
        matches!(refused, Err(StoreError::QuotaExceeded(QuotaScope::Total))),
        "got {refused:?}"
    );
    assert_eq!(
        store.held_stop_signals(),
        held,
        "a refused create holds no stop signal"
    );
}

#[tokio::test]
async fn with_redis_down_calls_fail_as_backend_errors_not_as_missing_tasks() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let task = new_task(None, None);
    store.create(task.clone()).await.unwrap();
    server.kill();
    for _ in 0..2 {
        let read = bounded("get", store.get(task.id, None)).await;
        assert!(matches!(read, Err(StoreError::Backend(_))), "get: {read:?}");
        let cancel = bounded("cancel", store.cancel(task.id, None)).await;
        assert!(
            matches!(cancel, Err(StoreError::Backend(_))),
            "cancel: {cancel:?}"
        );
        let complete = bounded("complete", store.complete(task.id, raw("{}"))).await;
        assert!(
            matches!(complete, Err(StoreError::Backend(_))),
            "complete: {complete:?}"
        );
    }
    let created = bounded("create", store.create(new_task(None, None))).await;
    assert!(matches!(created, Err(StoreError::Backend(_))));
    assert_eq!(
        store.held_stop_signals(),
        1,
        "a failed create keeps nothing"
    );
    let connected = bounded("connect", RedisTaskStore::connect(&server.url())).await;
    assert!(matches!(connected, Err(StoreError::Backend(_))));
}

#[tokio::test]
async fn stop_signals_are_dropped_when_tasks_end_anywhere_or_expire() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two_instances(&server).await;
    let mut stops = Vec::new();
    let mut ids = Vec::new();
    for at in 0..12 {
        let ttl = (at % 4 == 3).then(|| Duration::from_millis(100));
        let created = a.create(new_task(None, ttl)).await.unwrap();
        ids.push(created.snapshot.id);
        stops.push(created.stop);
    }
    assert_eq!(a.held_stop_signals(), 12);
    for (at, &id) in ids.iter().enumerate() {
        match at % 4 {
            0 => a.complete(id, raw("{}")).await.unwrap(),
            1 => b
                .fail(id, raw(r#"{"code":-32603,"message":"x"}"#))
                .await
                .unwrap(),
            2 => assert!(b.cancel(id, None).await.unwrap().is_some()),
            _ => {} // expires
        }
    }
    let all_fired = async {
        for stop in &stops {
            stop.cancelled().await;
        }
    };
    let fired = tokio::time::timeout(Duration::from_secs(2), all_fired).await;
    assert!(
        fired.is_ok(),
        "every ended or expired task fired its signal"
    );
    assert_eq!(a.held_stop_signals(), 0, "nothing is kept for ended tasks");
    assert_eq!(b.held_stop_signals(), 0);
}

#[tokio::test]
async fn after_a_redis_restart_held_signals_of_lost_tasks_fire() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let created = store.create(new_task(None, None)).await.unwrap();
    // The restart loses the task (no persistence) and any announcement made
    // while the subscriber was away; resubscribing checks what it holds.
    server.restart();
    let fired = tokio::time::timeout(Duration::from_secs(10), created.stop.cancelled()).await;
    assert!(
        fired.is_ok(),
        "the lost task's signal fired after resubscribing"
    );
    let read = bounded("get", store.get(created.snapshot.id, None)).await;
    assert!(matches!(read, Ok(None)), "got {read:?}");
    assert_eq!(store.held_stop_signals(), 0);
}
