//! `RedisTaskStore` on a 3+3 Redis Cluster: the store contract, the
//! change feed, the operator's contract and the multi-instance rules
//! (cross-instance read, cancel, delete, resume anywhere, lease loss) hold
//! there as on one server; and the harness (`support/redis_cluster.rs`)
//! forms the cluster and fails a killed primary over to its replica. Each
//! test starts its own cluster.

use crate::{contract, pair, redis_cluster};

use std::time::{Duration, Instant};

use contract::wait;
use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{TaskStatus, TaskStore};
use pair::{fresh_prefix, new_task, raw};
use redis_cluster::RedisCluster;
use wait::{BOUND, wait_until};

/// Every hash slot of a Redis Cluster.
const SLOTS: usize = 16_384;

/// Starts a cluster, saying how long it took.
fn start() -> Option<RedisCluster> {
    let started = Instant::now();
    let cluster = RedisCluster::start()?;
    eprintln!("a 3+3 cluster started in {:?}", started.elapsed());
    Some(cluster)
}

#[test]
fn a_three_plus_three_cluster_forms_with_every_slot_covered() {
    let Some(cluster) = start() else {
        return;
    };
    let primaries = cluster.primaries();
    assert_eq!(primaries.len(), 3, "primaries: {:?}", cluster.nodes());
    assert_eq!(
        cluster.replicas().len(),
        3,
        "replicas: {:?}",
        cluster.nodes()
    );
    for &primary in &primaries {
        assert_eq!(
            cluster.replicas_of(primary).len(),
            1,
            "the replicas of {primary}: {:?}",
            cluster.nodes()
        );
    }
    let served: usize = cluster
        .nodes()
        .iter()
        .filter(|node| node.primary)
        .map(|node| node.slots)
        .sum();
    assert_eq!(served, SLOTS);
    for port in cluster.ports() {
        assert_eq!(cluster.cluster_info(port, "cluster_state"), "ok");
        assert_eq!(
            cluster.cluster_info(port, "cluster_slots_assigned"),
            SLOTS.to_string()
        );
        assert_eq!(cluster.cluster_info(port, "cluster_known_nodes"), "6");
        assert_eq!(cluster.cluster_info(port, "cluster_size"), "3");
    }
    assert_eq!(cluster.urls().len(), 6);
}

#[test]
fn killing_a_primary_promotes_its_replica() {
    let Some(mut cluster) = start() else {
        return;
    };
    let old_primary = cluster.primaries()[0];
    let replica = cluster.replicas_of(old_primary)[0];
    cluster.kill(old_primary);
    let killed = Instant::now();
    let new_primary = cluster.wait_for_failover(old_primary, Duration::from_secs(30));
    eprintln!("the replica took over in {:?}", killed.elapsed());
    assert_eq!(new_primary, replica);
    let primaries = cluster.primaries();
    assert_eq!(primaries.len(), 3, "{:?}", cluster.nodes());
    assert!(primaries.contains(&replica), "{:?}", cluster.nodes());
    assert!(!primaries.contains(&old_primary), "{:?}", cluster.nodes());
    assert_eq!(cluster.cluster_info(replica, "cluster_state"), "ok");
    assert_eq!(
        cluster.cluster_info(replica, "cluster_slots_assigned"),
        SLOTS.to_string()
    );
}

/// A store on `cluster` under `prefix`, given every node as a seed.
async fn connect(cluster: &RedisCluster, prefix: &str, lease: Duration) -> RedisTaskStore {
    RedisTaskStore::builder(cluster.urls())
        .prefix(prefix)
        .lease(lease)
        .connect()
        .await
        .expect("connect to the test cluster")
}

const LEASE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn the_store_keeps_its_contracts_on_a_cluster() {
    let Some(cluster) = start() else {
        return;
    };
    let make = || async { connect(&cluster, &fresh_prefix(), LEASE).await };
    contract::run(make).await;
    contract::changes::run(make).await;
    contract::admin::run(make).await;
    contract::events::run(make).await;
}

#[tokio::test]
async fn a_log_written_by_one_instance_is_read_by_another_and_one_delivers() {
    let Some(cluster) = start() else {
        return;
    };
    let prefix = fresh_prefix();
    let (a, b) = (
        connect(&cluster, &prefix, LEASE).await,
        connect(&cluster, &prefix, LEASE).await,
    );
    let mut starts = Vec::new();
    let owners: Vec<String> = (0..6).map(|n| format!("owner-{n}")).collect();
    for owner in &owners {
        starts.push(b.status_events(Some(owner), None, 10).await.unwrap().cursor);
    }
    for owner in &owners {
        let task = new_task(Some(owner), None);
        a.create(task.clone()).await.unwrap();
        a.complete(task.id, raw("{}")).await.unwrap();
    }
    for (owner, start) in owners.iter().zip(&starts) {
        let page = b.status_events(Some(owner), Some(start), 10).await.unwrap();
        let seen: Vec<_> = page.events.iter().map(|e| e.task.status()).collect();
        assert_eq!(
            seen,
            [TaskStatus::Working, TaskStatus::Completed],
            "{owner}'s changes, logged on its shard by one instance, are read by another"
        );
    }
    let hook = mcp_tasks::store::Hook {
        id: format!("sub_{:032x}", 1),
        owner: Some("owner-0".into()),
        url: "https://example.com/hook".into(),
        name: "task.status".into(),
        arguments: "{}".into(),
        secret: "whsec_x".into(),
        expires_at: None,
        cursor: starts[0].clone(),
    };
    a.put_hook(hook.clone(), 10, 10).await.unwrap();
    assert_eq!(b.hooks().await.unwrap(), vec![hook.clone()]);
    assert!(a.claim_hook(&hook.id, LEASE).await.unwrap());
    assert!(
        !b.claim_hook(&hook.id, LEASE).await.unwrap(),
        "one instance at a time delivers a subscription"
    );
    assert!(
        a.claim_hook(&hook.id, LEASE).await.unwrap(),
        "its holder renews it"
    );
}

#[tokio::test]
async fn two_instances_share_tasks_and_stop_signals_on_a_cluster() {
    let Some(cluster) = start() else {
        return;
    };
    let pair = || async {
        let prefix = fresh_prefix();
        let a = connect(&cluster, &prefix, LEASE).await;
        // The other instance knows one node only, and finds the cluster
        // from it (`INFO cluster`).
        let b = RedisTaskStore::builder(cluster.urls()[5].as_str())
            .prefix(prefix)
            .connect()
            .await
            .expect("connect through one node");
        (a, b)
    };
    let (a, b) = pair().await;
    pair::created_on_one_is_readable_on_another(&a, &b).await;
    pair::a_cancel_on_one_fires_the_stop_signal_of_another(&a, &b).await;
    pair::an_operators_delete_on_one_stops_the_task_on_another(&a, &b).await;
    pair::a_round_completed_on_another_returns_the_resume_context(&a, &b).await;
    let (a, b) = pair().await;
    pair::an_operators_watch_on_one_hears_every_task_of_another(&a, &b).await;
    let (a, b) = pair().await;
    pair::racing_instances_get_exactly_one_winner_per_transition(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_signals_cross_instances_again_after_the_shards_primary_fails_over() {
    let Some(mut cluster) = start() else {
        return;
    };
    let prefix = fresh_prefix();
    // A knows one node only; B every seed.
    let a = RedisTaskStore::builder(redis_cluster::url(cluster.primaries()[0]))
        .prefix(&prefix)
        .connect()
        .await
        .expect("connect through one node");
    let b = connect(&cluster, &prefix, LEASE).await;
    // The primary of alice's shard, where A's sharded subscription to the
    // shard's channels lives.
    let probe = new_task(Some("alice"), None);
    a.create(probe.clone()).await.unwrap();
    let holder = holder_of(&cluster, &a, probe.id);
    tokio::task::block_in_place(|| {
        cluster.kill(holder);
        cluster.wait_for_failover(holder, Duration::from_secs(30));
    });
    // The cluster client subscribes again on the promoted replica: a cancel
    // on B reaches a task running on A.
    let (failed_over, bound) = (Instant::now(), Duration::from_secs(20));
    loop {
        assert!(
            failed_over.elapsed() < bound,
            "A's stop signals stayed deaf for {bound:?} after the failover"
        );
        let task = new_task(Some("alice"), None);
        let Ok(created) = a.create(task.clone()).await else {
            continue; // the client may still be finding the new primary
        };
        if b.cancel(task.id, Some("alice")).await.is_err() {
            continue;
        }
        let fired = tokio::time::timeout(Duration::from_secs(1), created.stop.cancelled()).await;
        if fired.is_ok() {
            eprintln!(
                "cross-instance stop {:?} after the failover",
                failed_over.elapsed()
            );
            break;
        }
    }
}

#[tokio::test]
async fn tasks_of_different_owners_land_on_different_primaries() {
    let Some(cluster) = start() else {
        return;
    };
    let store = connect(&cluster, &fresh_prefix(), LEASE).await;
    let primaries = cluster.primaries();
    let mut per_primary = std::collections::BTreeMap::<u16, usize>::new();
    for n in 0..48 {
        let owner = format!("owner-{n}");
        let task = new_task(Some(&owner), Some(Duration::from_secs(60)));
        store.create(task.clone()).await.unwrap();
        let key = store.task_key(task.id, Some(&owner));
        let slot = cluster.command(primaries[0], &["CLUSTER", "KEYSLOT", &key]);
        let holder = primaries
            .iter()
            .copied()
            .find(|&port| cluster.command(port, &["CLUSTER", "COUNTKEYSINSLOT", &slot]) != "0")
            .unwrap_or_else(|| panic!("no primary holds {key}"));
        *per_primary.entry(holder).or_default() += 1;
        assert!(store.get(task.id, Some(&owner)).await.unwrap().is_some());
    }
    eprintln!("tasks of 48 owners per primary: {per_primary:?}");
    assert!(
        per_primary.len() >= 2,
        "every owner's tasks on one primary: {per_primary:?}"
    );
}

#[tokio::test]
async fn the_running_tasks_of_a_lost_instance_are_failed_on_a_cluster() {
    let Some(cluster) = start() else {
        return;
    };
    let prefix = fresh_prefix();
    let lease = Duration::from_millis(600);
    let a = connect(&cluster, &prefix, lease).await;
    let b = connect(&cluster, &prefix, lease).await;
    let running = new_task(Some("alice"), Some(Duration::from_secs(60)));
    a.create(running.clone()).await.unwrap();
    drop(a);
    // How soon is not asserted: on a loaded machine the sweeper runs late.
    let read = wait_until("B fails the task of the lost instance", BOUND, || async {
        let read = b.get(running.id, Some("alice")).await.unwrap().unwrap();
        (read.status() != TaskStatus::Working).then_some(read)
    })
    .await;
    assert_eq!(read.status(), TaskStatus::Failed);
    assert!(
        format!("{read:?}").contains("instance running this task was lost"),
        "{read:?}"
    );
}

/// What the writer of the failover test had acknowledged for a task.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Acked {
    Created,
    Completed,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_keeps_every_task_the_store_acknowledged() {
    let Some(mut cluster) = start() else {
        return;
    };
    let urls = cluster.urls();
    let prefix = fresh_prefix();
    let connect = || {
        RedisTaskStore::builder(urls.clone())
            .prefix(&prefix)
            .wait_for_replicas(1, Duration::from_millis(200))
            .connect()
    };
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());

    // A writer creates and completes tasks one after another, noting what
    // each acknowledged call wrote, and carries on through the failover
    // until it has 20 more tasks (after the failover the new primary has no
    // replica left, so each write waits the whole 200 ms for none).
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let wanted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX));
    let writer = {
        let (acked, wanted) = (acked.clone(), wanted.clone());
        tokio::spawn(async move {
            let (mut refused, deadline) = (0, Instant::now() + Duration::from_secs(60));
            while acked.lock().unwrap().len() < wanted.load(std::sync::atomic::Ordering::SeqCst)
                && Instant::now() < deadline
            {
                let task = new_task(Some("alice"), Some(Duration::from_secs(600)));
                if a.create(task.clone()).await.is_err() {
                    refused += 1;
                    // The scenario: a writer's pause before it tries again during the failover.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                acked.lock().unwrap().push((task.id, Acked::Created));
                if a.complete(task.id, pair::raw("{}")).await.is_ok() {
                    acked.lock().unwrap().last_mut().unwrap().1 = Acked::Completed;
                }
            }
            refused
        })
    };
    wait_until("the writer has 100 tasks acknowledged", BOUND, || async {
        acked.lock().unwrap().len() >= 100
    })
    .await;
    let killed_after = acked.lock().unwrap().len();
    // The primary that serves alice's shard: the one with her task keys.
    let first = acked.lock().unwrap()[0].0;
    let holder = holder_of(&cluster, &b, first);
    // Each acknowledged write waited for the replica (one WAIT per script).
    let stats = cluster.command(holder, &["INFO", "commandstats"]);
    let waits: usize = stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_wait:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap());
    assert!(
        waits >= killed_after,
        "{waits} WAITs for {killed_after} tasks"
    );
    let killed = Instant::now();
    tokio::task::block_in_place(|| {
        cluster.kill(holder);
        cluster.wait_for_failover(holder, Duration::from_secs(30));
    });
    let failed_over = killed.elapsed();
    let after = acked.lock().unwrap().len();
    wanted.store(after + 20, std::sync::atomic::Ordering::SeqCst);
    let refused = writer.await.unwrap();
    let acked = acked.lock().unwrap().clone();
    eprintln!(
        "{} tasks acknowledged ({killed_after} before the kill, {after} when the replica had \
         taken over after {failed_over:?}), {refused} creates refused during the failover",
        acked.len()
    );
    assert!(
        acked.len() >= after + 20,
        "the writer carried on after the failover: {} acknowledged",
        acked.len()
    );
    for (id, what) in acked {
        let read = b.get(id, Some("alice")).await.unwrap();
        let read = read.unwrap_or_else(|| panic!("acknowledged task {id} was lost ({what:?})"));
        if what == Acked::Completed {
            assert_eq!(read.status(), TaskStatus::Completed, "{id}");
        }
    }
}

/// The store's warnings and steps in the test's output (shown when it fails).
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("mcp_tasks=debug")
        .with_test_writer()
        .try_init();
}

/// The primary of `cluster` that holds the shard of alice's task `id`.
fn holder_of(cluster: &RedisCluster, store: &RedisTaskStore, id: mcp_tasks::TaskId) -> u16 {
    let key = store.task_key(id, Some("alice"));
    let primaries = cluster.primaries();
    let slot = cluster.command(primaries[0], &["CLUSTER", "KEYSLOT", &key]);
    *primaries
        .iter()
        .find(|&&port| cluster.command(port, &["CLUSTER", "COUNTKEYSINSLOT", &slot]) != "0")
        .expect("a primary holds alice's shard")
}

/// An instance that is alive keeps the tasks it runs through a failover of
/// their shard's primary: its lease renewals follow the slots to the
/// promoted replica, and another instance's sweep does not take it for
/// lost, though its lease there ran out while the shard had no primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_instance_keeps_its_running_tasks_through_a_failover_of_their_shard() {
    let Some(mut cluster) = start() else {
        return;
    };
    logs();
    let prefix = fresh_prefix();
    // Longer than a failover here (about 2 s) and a renewal period: A's
    // lease does not lapse, and A is not fenced out of the shard.
    let lease = Duration::from_secs(6);
    let (a, b) = (
        connect(&cluster, &prefix, lease).await,
        connect(&cluster, &prefix, lease).await,
    );
    let running = new_task(Some("alice"), Some(Duration::from_secs(600)));
    a.create(running.clone()).await.unwrap();
    let holder = holder_of(&cluster, &a, running.id);
    let killed = Instant::now();
    tokio::task::block_in_place(|| {
        // The task is on the replica before its primary dies: what an
        // asynchronous replica may lose is another test's point.
        cluster.wait_for_replication(holder, BOUND);
        cluster.kill(holder);
        cluster.wait_for_failover(holder, Duration::from_secs(30));
    });
    eprintln!("failed over in {:?}", killed.elapsed());
    // B sweeps every half lease: over two leases it looks four times, and
    // A's lease in the shard had run out had A's renewals not followed the
    // slot to the promoted replica.
    let watched = Instant::now();
    while watched.elapsed() < lease * 2 {
        if let Ok(Some(read)) = b.get(running.id, Some("alice")).await {
            assert_eq!(
                read.status(),
                TaskStatus::Working,
                "A's task was taken from it {:?} after the failover: {read:?}",
                watched.elapsed()
            );
        }
        // The watch is the point: nothing may take the task over two leases.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A still drives it, and its outcome lands.
    wait_until("A completes its task", BOUND, || {
        a.complete(running.id, pair::raw("{}"))
    })
    .await;
    let read = b.get(running.id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Completed, "{read:?}");
}

/// An instance cut off from a shard for longer than its lease (its
/// primary failing over takes longer here) stops the calls it runs there
/// before another instance takes their tasks, and joins the shard again
/// under a new id: a task it creates there afterwards is its own, and kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_cut_off_from_a_shard_stops_its_calls_there_before_another_takes_them() {
    let Some(mut cluster) = start() else {
        return;
    };
    logs();
    let prefix = fresh_prefix();
    let lease = Duration::from_millis(600);
    let (a, b) = (
        connect(&cluster, &prefix, lease).await,
        connect(&cluster, &prefix, lease).await,
    );
    let running = new_task(Some("alice"), Some(Duration::from_secs(600)));
    let created = a.create(running.clone()).await.unwrap();
    let stopped = tokio::spawn(async move {
        created.stop.cancelled().await;
        Instant::now()
    });
    let holder = holder_of(&cluster, &a, running.id);
    tokio::task::block_in_place(|| {
        cluster.wait_for_replication(holder, BOUND);
        cluster.kill(holder);
        cluster.wait_for_failover(holder, Duration::from_secs(30));
    });
    let (taken, read) = wait_until("B takes the task", BOUND, || async {
        let read = b.get(running.id, Some("alice")).await.ok().flatten();
        let taken = read.filter(|read| read.status() != TaskStatus::Working);
        taken.map(|read| (Instant::now(), read))
    })
    .await;
    assert_eq!(read.status(), TaskStatus::Failed, "{read:?}");
    let stopped = tokio::time::timeout(Duration::from_secs(1), stopped)
        .await
        .expect("A stopped the call it ran")
        .unwrap();
    assert!(
        stopped <= taken,
        "A stopped its call {:?} after B took the task",
        stopped - taken
    );
    // A is back in the shard under a new id: its new task is not swept.
    let again = new_task(Some("alice"), Some(Duration::from_secs(600)));
    wait_until("A creates a task in the shard again", BOUND, || {
        a.create(again.clone())
    })
    .await;
    let watched = Instant::now();
    while watched.elapsed() < lease * 4 {
        let read = b.get(again.id, Some("alice")).await.unwrap().unwrap();
        assert_eq!(read.status(), TaskStatus::Working, "{read:?}");
        // The watch is the point: nothing may sweep the new task over four leases.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.complete(again.id, pair::raw("{}")).await.unwrap();
}
