//! `RedisTaskStore` on a 3+3 Redis Cluster: the store contract, the
//! change feed, the operator's contract and the multi-instance rules
//! (cross-instance read, cancel, delete, resume anywhere, lease loss) hold
//! there as on one server; and the harness (`support/redis_cluster.rs`)
//! forms the cluster and fails a killed primary over to its replica. Each
//! test starts its own cluster.

mod contract;
#[path = "support/redis_pair.rs"]
mod pair;

#[path = "support/redis_cluster.rs"]
mod redis_cluster;

use std::time::{Duration, Instant};

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{TaskStatus, TaskStore};
use pair::{fresh_prefix, new_task};
use redis_cluster::RedisCluster;

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
    pair::racing_instances_get_exactly_one_winner_per_transition(&a, &b).await;
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
    let died = Instant::now();
    let bound = lease + lease / 2 + Duration::from_secs(1);
    let read = loop {
        let read = b.get(running.id, Some("alice")).await.unwrap().unwrap();
        if read.status() != TaskStatus::Working {
            break read;
        }
        assert!(died.elapsed() < bound, "still working after {bound:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(read.status(), TaskStatus::Failed);
    assert!(
        format!("{read:?}").contains("instance running this task was lost"),
        "{read:?}"
    );
}
