//! Two `mcp-tasks-gateway` replicas over one real `redis-server` (and over a
//! 3+3 Redis Cluster, `--redis-cluster`): a task
//! created through one is read, answered and cancelled through the other,
//! as a load balancer without affinity would send the requests. Once with
//! each gateway in front of its own rmcp fixture replica, once with both in
//! front of one FastMCP server (`scripts/upstream-python.sh`), whose sealed
//! `requestState` only the process that issued it accepts. Then what a
//! replica that dies or drains leaves running: a call that may run again is
//! run by the other.

use crate::{gateway, support};

// The cluster and the server harness both include support/redis_common.rs.
#[allow(dead_code, clippy::duplicate_mod)] // the failover is for tests/redis/cluster.rs
#[path = "../../../tests/support/redis_cluster.rs"]
mod redis_cluster;
#[allow(dead_code)] // restarting is for the outage tests
#[path = "../../../tests/support/redis_server.rs"]
mod redis_server;

use std::time::Duration;

use redis_cluster::RedisCluster;
use redis_server::RedisServer;
use serde_json::{Value, json};
use std::sync::Arc;
use support::client::McpClient;
use support::fixture::{FixtureMode, Probe, Served, serve_fixture};
use support::process::Process;
use support::wait::BOUND;

/// One replica: a fixture and a gateway in front of it, on the shared Redis.
struct Replica {
    _upstream: Served,
    probe: Arc<Probe>,
    _gateway: Process,
    client: McpClient,
}

async fn replica(redis: &RedisServer) -> Replica {
    replica_on(&["--redis", &redis.url()]).await
}

/// A replica on the Redis that `store` (the gateway's Redis flags) names.
async fn replica_on(store: &[&str]) -> Replica {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let mut args = store.to_vec();
    args.extend(["--policy", "confirm_delete=always"]);
    let gateway = gateway::start(&upstream.url, &args).await;
    let client = McpClient::new(&gateway.url);
    Replica {
        _upstream: upstream,
        probe,
        _gateway: gateway,
        client,
    }
}

fn task_id(created: &Value) -> String {
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

#[tokio::test]
async fn a_task_made_through_one_gateway_is_read_answered_and_cancelled_through_another() {
    let Some(redis) = RedisServer::start() else {
        panic!("redis-server is needed for this test (.ci/run installs it)");
    };
    let a = replica(&redis).await;
    let b = replica(&redis).await;
    read_answered_and_cancelled_through_another(&a, &b).await;
}

#[tokio::test]
async fn gateways_over_a_redis_cluster_share_their_tasks() {
    let Some(cluster) = RedisCluster::start() else {
        panic!("redis-server and redis-cli are needed for this test (.ci/run installs them)");
    };
    let seeds = cluster.urls().join(",");
    let a = replica_on(&["--redis-cluster", &seeds, "--redis-wait-replicas", "1"]).await;
    // The other one knows a single node, and finds the cluster from it.
    let b = replica_on(&["--redis", &cluster.urls()[4]]).await;
    read_answered_and_cancelled_through_another(&a, &b).await;
}

/// Created through `a` and answered through `b`; then running on `a` and
/// cancelled through `b`.
async fn read_answered_and_cancelled_through_another(a: &Replica, b: &Replica) {
    // Created through A, waiting for input: B sees it and answers it.
    let created = a
        .client
        .call_tool("confirm_delete", json!({"filename": "shared.txt"}), true)
        .await;
    let task = task_id(&created);
    let waiting = b
        .client
        .wait_task_status(&task, &["input_required"], Duration::from_secs(10))
        .await;
    let keys: Vec<&String> = waiting["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    assert_eq!(keys, ["1.confirm"], "{waiting}");
    let answer = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});
    let ack = b.client.tasks_update(&task, answer).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = a
        .client
        .wait_task_status(&task, &["completed"], Duration::from_secs(10))
        .await;
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("Deleted shared.txt"), "{done}");
    // The answer resumed the call on B's own server.
    assert_eq!(b.probe.started("confirm_delete"), 1);

    // Running on A, cancelled through B: A's tool stops.
    let created = a
        .client
        .call_tool("slow_compute", json!({"seconds": 60}), true)
        .await;
    let task = task_id(&created);
    let ack = b.client.tasks_cancel(&task).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled = a
        .client
        .wait_task_status(&task, &["cancelled"], Duration::from_secs(5))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    assert!(
        a.probe.wait_cancelled("slow_compute", BOUND).await,
        "the tool on A kept running"
    );
}

#[tokio::test]
async fn two_gateways_in_front_of_one_fastmcp_server_share_its_tasks() {
    let Some(redis) = RedisServer::start() else {
        panic!("redis-server is needed for this test (.ci/run installs it)");
    };
    let python = gateway::upstream_script("upstream-python.sh").await;
    let options = [
        "--redis",
        &redis.url(),
        "--policy",
        gateway::FIXTURE_POLICIES,
    ];
    let a = gateway::start(&python.url, &options).await;
    let b = gateway::start(&python.url, &options).await;
    let (a, b) = (McpClient::new(&a.url), McpClient::new(&b.url));

    let task = a
        .start_task("confirm_delete", json!({"filename": "py.txt"}))
        .await;
    let waiting = b
        .wait_task_status(&task, &["input_required"], Duration::from_secs(10))
        .await;
    let keys: Vec<String> = waiting["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 1, "{waiting}");
    let answer = json!({ keys[0].clone(): {"action": "accept", "content": {"confirm": true}} });
    let ack = b.tasks_update(&task, answer).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = a
        .wait_task_status(&task, &["completed"], Duration::from_secs(10))
        .await;
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("py.txt"), "{done}");

    let task = a
        .start_task("slow_compute", json!({"seconds": 60, "label": "shared"}))
        .await;
    assert!(
        python
            .wait_log("slow_compute started", Duration::from_secs(5))
            .await
    );
    let ack = b.tasks_cancel(&task).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(
        python
            .wait_log("slow_compute cancelled", Duration::from_secs(10))
            .await,
        "the Python tool kept running:\n{}",
        python.log()
    );
}

#[tokio::test]
async fn a_rolling_restart_of_two_gateways_fails_no_call_that_may_run_again() {
    let Some(redis) = RedisServer::start() else {
        panic!("redis-server is needed for this test (.ci/run installs it)");
    };
    let (upstream_a, probe_a) = serve_fixture(FixtureMode::Stateless).await;
    let (upstream_b, probe_b) = serve_fixture(FixtureMode::Stateless).await;
    let url = redis.url();
    let options = [
        "--redis",
        &url,
        "--retry",
        "slow_compute=3",
        "--shutdown-grace",
        "200ms",
    ];
    let mut a = gateway::start(&upstream_a.url, &options).await;
    let mut b = gateway::start(&upstream_b.url, &options).await;
    let (on_a, on_b) = (McpClient::new(&a.url), McpClient::new(&b.url));

    // A drains while its call runs: it leaves the call to B, which runs it.
    let first = on_a
        .start_task("slow_compute", json!({"seconds": 1.5}))
        .await;
    assert!(
        probe_a
            .wait_started("slow_compute", Duration::from_secs(10))
            .await
    );
    let seen = on_b.tasks_get(&first).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    a.terminate();
    let exited = a.wait_exit(Duration::from_secs(20)).await;
    assert!(
        exited.is_some_and(|s| s.success()),
        "A drains and exits: {exited:?}"
    );
    let done = on_b
        .wait_task_status(&first, &["completed", "failed"], Duration::from_secs(20))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(probe_b.started("slow_compute"), 1, "B ran it again");

    // A is back; then B drains while its own call runs: A runs it.
    let a = gateway::start(&upstream_a.url, &options).await;
    let on_a = McpClient::new(&a.url);
    let second = on_b
        .start_task("slow_compute", json!({"seconds": 1.5}))
        .await;
    assert!(
        probe_b
            .wait_until(Duration::from_secs(10), |p| p.started("slow_compute") == 2)
            .await
    );
    let seen = on_a.tasks_get(&second).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    b.terminate();
    let exited = b.wait_exit(Duration::from_secs(20)).await;
    assert!(
        exited.is_some_and(|s| s.success()),
        "B drains and exits: {exited:?}"
    );
    let done = on_a
        .wait_task_status(&second, &["completed", "failed"], Duration::from_secs(20))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(probe_a.started("slow_compute"), 2, "A ran it again");
}

#[tokio::test]
async fn a_gateway_killed_mid_call_has_its_idempotent_call_run_again_by_the_other() {
    let Some(redis) = RedisServer::start() else {
        panic!("redis-server is needed for this test (.ci/run installs it)");
    };
    let (upstream_a, probe_a) = serve_fixture(FixtureMode::Stateless).await;
    let (upstream_b, probe_b) = serve_fixture(FixtureMode::Stateless).await;
    // No --retry: the fixture marks `slow_compute` idempotentHint.
    let url = redis.url();
    let options = ["--redis", &url];
    let mut a = gateway::start(&upstream_a.url, &options).await;
    let b = gateway::start(&upstream_b.url, &options).await;
    let (on_a, on_b) = (McpClient::new(&a.url), McpClient::new(&b.url));
    let task = on_a
        .start_task("slow_compute", json!({"seconds": 1.5}))
        .await;
    assert!(
        probe_a
            .wait_started("slow_compute", Duration::from_secs(10))
            .await
    );
    let seen = on_b.tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    a.kill().await;
    // B claims it once A's lease (10 s) has run out, at its next sweep.
    let done = on_b
        .wait_task_status(&task, &["completed", "failed"], Duration::from_secs(30))
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(probe_b.started("slow_compute"), 1, "B ran it again");
    drop(b);
}
