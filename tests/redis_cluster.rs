//! The Redis Cluster harness (`support/redis_cluster.rs`) forms a 3+3
//! cluster and fails a killed primary over to its replica, and
//! `RedisTaskStore`, a single-node client, refuses a cluster node when it
//! connects instead of failing later on the keys of another node's slots.
//! Each test starts its own cluster.

#[path = "support/redis_cluster.rs"]
mod redis_cluster;

use std::time::{Duration, Instant};

use mcp_tasks::StoreError;
use mcp_tasks::store::RedisTaskStore;
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

#[tokio::test]
async fn the_single_node_store_refuses_a_cluster_node_at_connect() {
    let Some(cluster) = start() else {
        return;
    };
    for (port, url) in cluster.ports().into_iter().zip(cluster.urls()) {
        let refused = RedisTaskStore::builder(url.as_str())
            .connect()
            .await
            .map(|_| ())
            .expect_err("connecting to a cluster node");
        assert!(
            matches!(refused, StoreError::Backend(_)),
            "not a backend error: {refused:?}"
        );
        let message = refused.to_string();
        assert!(
            message.contains("cluster mode") && message.contains("Redis Cluster"),
            "{url}: {message}"
        );
        // Refused before it wrote anything (an instance's lease, say).
        assert_eq!(cluster.command(port, &["DBSIZE"]), "0", "{url}");
    }
}
