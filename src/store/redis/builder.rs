//! [`RedisTaskStoreBuilder`]: the settings of a store, and connecting it.

use std::sync::Arc;
use std::time::Duration;

use redis::ErrorKind;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::claims::Claims;
use super::conn::{Conn, Replicas};
use super::doubts::{self, Doubts};
use super::interest::Interest;
use super::lease::{self, Lease};
use super::migrate;
use super::sharded;
use super::shards::{MAX_SHARDS, Shards};
use super::stops::{self, Stops, Subscriber};
use super::{Inner, RedisTaskStore, backend};
use crate::backoff::Backoff;
use crate::store::StoreError;

/// The key prefix unless [`RedisTaskStoreBuilder::prefix`] says otherwise.
const DEFAULT_PREFIX: &str = "mcp-tasks";

/// How long `connect` waits for a Redis Cluster that cannot answer yet (a
/// failover under way, a slot that moved) before it gives up.
const CLUSTER_WAIT: Duration = Duration::from_secs(60);

/// `step` until it succeeds; on a Redis Cluster (`cluster`) tried again
/// with backoff (100 ms doubling to 2 s) for up to [`CLUSTER_WAIT`], each
/// failure logged as `what` failing; on one server its first error.
async fn patiently<T, F, Fut>(cluster: bool, what: &str, mut step: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let deadline = tokio::time::Instant::now() + CLUSTER_WAIT;
    let mut pause = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    loop {
        match step().await {
            Ok(done) => return Ok(done),
            Err(error) if cluster && tokio::time::Instant::now() + pause.peek() < deadline => {
                tracing::warn!(%error, "task store: {what} failed on the Redis Cluster; trying again");
                pause.sleep().await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// The shards on a Redis Cluster unless [`RedisTaskStoreBuilder::shards`]
/// says otherwise: enough that owners spread evenly over a handful of
/// primaries, few enough that a lease renewal (one write per shard) stays
/// cheap.
pub const CLUSTER_SHARDS: u16 = 16;

/// Where a [`RedisTaskStore`] connects: one server's URL, or the seed nodes
/// of a Redis Cluster (`redis://host:port`, any of its nodes; the client
/// learns the rest).
///
/// Converts from one URL (`&str`, `String`) or several (`Vec<String>`,
/// `Vec<&str>`, `[&str; N]`). Several URLs always mean a cluster; one URL
/// means a cluster when that server runs in cluster mode (`INFO cluster`),
/// else a single server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisNodes(Vec<String>);

impl From<&str> for RedisNodes {
    fn from(url: &str) -> Self {
        Self(vec![url.to_owned()])
    }
}

impl From<String> for RedisNodes {
    fn from(url: String) -> Self {
        Self(vec![url])
    }
}

impl From<&String> for RedisNodes {
    fn from(url: &String) -> Self {
        Self(vec![url.clone()])
    }
}

impl From<Vec<String>> for RedisNodes {
    fn from(urls: Vec<String>) -> Self {
        Self(urls)
    }
}

impl From<Vec<&str>> for RedisNodes {
    fn from(urls: Vec<&str>) -> Self {
        Self(urls.into_iter().map(str::to_owned).collect())
    }
}

impl<const N: usize> From<[&str; N]> for RedisNodes {
    fn from(urls: [&str; N]) -> Self {
        Self(urls.into_iter().map(str::to_owned).collect())
    }
}

/// Settings of a [`RedisTaskStore`] before it connects.
#[derive(Clone, Debug)]
pub struct RedisTaskStoreBuilder {
    nodes: RedisNodes,
    prefix: String,
    response_timeout: Duration,
    connection_timeout: Duration,
    lease: Duration,
    replicas: Option<Replicas>,
    shards: Option<u16>,
}

impl RedisTaskStoreBuilder {
    pub(super) fn new(nodes: RedisNodes) -> Self {
        Self {
            nodes,
            prefix: DEFAULT_PREFIX.to_owned(),
            response_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(1),
            lease: lease::DEFAULT_LEASE,
            replicas: None,
            shards: None,
        }
    }

    /// The key prefix (default `mcp-tasks`). Instances that share tasks must
    /// use the same one; deployments that share a Redis use different ones.
    /// Every key starts with `{<prefix>}`, a Redis Cluster hash tag, so the
    /// prefix must not contain `{` or `}` (`connect` refuses it).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one Redis call may take before it fails as a backend error
    /// (default 5 s). Bounds every store call, so a stalled Redis never hangs
    /// a request.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long one connection attempt may take (default 1 s).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long this instance stays alive in Redis without renewing its
    /// lease (default 10 s, clamped to 100 ms ..= 1 day). It renews every
    /// third of it (a failed renewal every 200 ms or sixth of it) and sweeps
    /// for lost instances every half of it, taking one whose lease key it
    /// found gone at two sweeps, so the running tasks of a crashed instance
    /// are failed within `2 × lease` of its last renewal (20 s by default);
    /// see the [module docs](super#leases).
    ///
    /// Every instance should use the same lease, longer than the pauses an
    /// instance may take and than the
    /// [`response_timeout`](Self::response_timeout): an instance that misses
    /// its lease is taken for lost, and its running tasks are failed.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.clamp(lease::MIN_LEASE, lease::MAX_LEASE);
        self
    }

    /// After every write, waits up to `timeout` until `count` replicas of
    /// the primary have it (Redis `WAIT`, sent with the write), so that a
    /// failover to one of them keeps every task the store acknowledged.
    /// Off by default: Redis replicates asynchronously, and a failover loses
    /// the writes its new primary had not received yet.
    ///
    /// A write that reaches fewer replicas in time still succeeds (it is on
    /// the primary, and the caller's task is real); the store logs a warning
    /// that says so. A `count` of 0 turns the wait off. Each write costs one
    /// replication round trip more (on loopback, tens of microseconds).
    pub fn wait_for_replicas(mut self, count: u32, timeout: Duration) -> Self {
        self.replicas = (count > 0).then_some(Replicas { count, timeout });
        self
    }

    /// Splits the store into `count` shards (1 to 1024; default 1 on a
    /// single server, [`CLUSTER_SHARDS`] on a Redis Cluster), each under a
    /// hash tag of its own, so that on a cluster the tasks of different
    /// owners spread over the primaries. An owner's tasks all live in one
    /// shard (chosen by a hash of the owner), so per-owner listing and quota
    /// stay exact; the total quota then works by reservation (see the
    /// [module docs](super#shards)). Every instance of a prefix must use
    /// the same count: the first to connect records it, and `connect`
    /// refuses a different one.
    pub fn shards(mut self, count: u16) -> Self {
        self.shards = Some(count.clamp(1, MAX_SHARDS));
        self
    }

    /// Connects, registers this instance with its lease, subscribes to the
    /// end-of-task channel and starts the background tasks (the subscriber,
    /// the deadline timer, and the lease renewer and sweeper), so it must run
    /// inside a Tokio runtime. One URL of a server in cluster mode
    /// (`cluster_enabled:1` in `INFO cluster`), or several URLs, connect to a
    /// Redis Cluster; a server that refuses `INFO` is taken for a single
    /// node. Fails with [`StoreError::Backend`] when Redis cannot be reached
    /// and when the prefix contains `{` or `}`; a Redis Cluster that cannot
    /// answer yet (a failover under way) is waited for, up to 60 s.
    pub async fn connect(self) -> Result<RedisTaskStore, StoreError> {
        if self.prefix.contains(['{', '}']) {
            return Err(StoreError::backend(
                "the Redis key prefix must not contain `{` or `}`: it becomes the keys' hash tag",
            ));
        }
        let seeds = self.nodes.0.len() > 1;
        let (conn, clients) = patiently(seeds, "connecting", || self.open()).await?;
        let count = self
            .shards
            .unwrap_or(if conn.is_cluster() { CLUSTER_SHARDS } else { 1 });
        let shards = Arc::new(Shards::new(self.prefix, count, conn.is_cluster()));
        let cluster = conn.is_cluster();
        patiently(cluster, "reading the key layout", || {
            migrate::run(&conn, &shards)
        })
        .await?;
        let conn = conn.waiting_for(self.replicas);
        let stops = Arc::new(Stops::new(Arc::new(Interest::new(shards.count()))));
        let shutdown = CancellationToken::new();
        // Stops the background tasks unless a store comes out of this call,
        // also when the caller gives up on it half way.
        let abandoned = shutdown.clone().drop_guard();
        let lease = Lease::new(conn.clone(), shards.clone(), stops.clone(), self.lease)?;
        let lease = Arc::new(lease);
        // Registered before anything else: a create needs a live instance.
        let registered = || async { lease.renew().await.map_err(backend) };
        patiently(cluster, "registering this instance", registered).await?;
        let (ready, subscribed) = oneshot::channel();
        let changes = tokio::sync::broadcast::channel(crate::store::CHANGES).0;
        let subscriber = Subscriber {
            changes: changes.clone(),
            clients,
            conn: conn.clone(),
            shards: shards.clone(),
            stops: stops.clone(),
            shutdown: shutdown.clone(),
            timeout: self.response_timeout.max(self.connection_timeout),
        };
        if conn.is_cluster() {
            tokio::spawn(sharded::subscribe(subscriber, ready));
        } else {
            tokio::spawn(stops::subscribe(subscriber, ready));
        }
        let subscribed = match subscribed.await {
            Ok(subscribed) => subscribed.map_err(backend),
            Err(_) => Err(StoreError::backend("the task store subscriber ended")),
        };
        subscribed?;
        tokio::spawn(stops::reap(stops.clone(), shutdown.clone()));
        tokio::spawn(lease::renew(lease.clone(), shutdown.clone()));
        let claims = Arc::new(Claims::default());
        let sweeping = lease::sweep(lease.clone(), shutdown.clone(), claims.clone());
        tokio::spawn(sweeping);
        abandoned.disarm();
        let inner = Arc::new(Inner {
            conn,
            shards,
            stops,
            lease,
            shutdown: shutdown.clone(),
            changes,
            claims,
            doubts: Doubts::default(),
        });
        tokio::spawn(doubts::settle(Arc::downgrade(&inner), shutdown));
        Ok(RedisTaskStore { inner })
    }

    /// The command connection, and a client per seed node for the
    /// subscriber (a `PUBLISH` on a cluster reaches every node, so any one
    /// will do; the next seed is tried when one fails).
    async fn open(&self) -> Result<(Conn, Vec<redis::Client>), StoreError> {
        let clients = self
            .nodes
            .0
            .iter()
            .map(|url| redis::Client::open(url.as_str()).map_err(backend))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = clients.first() else {
            return Err(StoreError::backend("no Redis URL given"));
        };
        if clients.len() == 1 {
            let config = ConnectionManagerConfig::new()
                .set_response_timeout(Some(self.response_timeout))
                .set_connection_timeout(Some(self.connection_timeout))
                .set_number_of_retries(2)
                .set_max_delay(Duration::from_secs(1));
            let mut conn = first
                .get_connection_manager_with_config(config)
                .await
                .map_err(backend)?;
            if !is_cluster_node(&mut conn).await? {
                return Ok((Conn::single(conn), clients));
            }
        }
        let cluster = ClusterClientBuilder::new(self.nodes.0.clone())
            .connection_timeout(self.connection_timeout)
            .response_timeout(self.response_timeout)
            .retries(3)
            .build()
            .map_err(backend)?;
        let conn = tokio::time::timeout(
            self.connection_timeout + self.response_timeout,
            cluster.get_async_connection(),
        )
        .await
        .map_err(|_| StoreError::backend("timed out connecting to the Redis Cluster"))?
        .map_err(backend)?;
        Ok((Conn::cluster(conn), clients))
    }
}

/// Whether the server behind `conn` runs in cluster mode; a server that
/// refuses `INFO` is taken for a single node.
async fn is_cluster_node(conn: &mut ConnectionManager) -> Result<bool, StoreError> {
    match redis::cmd("INFO")
        .arg("cluster")
        .query_async::<String>(conn)
        .await
    {
        Ok(info) => Ok(info.lines().any(|line| line.trim() == "cluster_enabled:1")),
        // Renamed, or denied by an ACL: nothing to go by, so one server.
        Err(error) if matches!(error.kind(), ErrorKind::Server(_) | ErrorKind::Extension) => {
            Ok(false)
        }
        Err(error) => Err(backend(error)),
    }
}
