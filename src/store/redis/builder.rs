//! [`RedisTaskStoreBuilder`]: the settings of a store, and connecting it.

use std::sync::Arc;
use std::time::Duration;

use redis::ErrorKind;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::claims::Claims;
use super::lease::{self, Lease};
use super::scripts::Keys;
use super::stops::{self, Stops, Subscriber};
use super::{Inner, RedisTaskStore, backend};
use crate::store::StoreError;

/// The key prefix unless [`RedisTaskStoreBuilder::prefix`] says otherwise.
const DEFAULT_PREFIX: &str = "mcp-tasks";

/// Settings of a [`RedisTaskStore`] before it connects.
#[derive(Clone, Debug)]
pub struct RedisTaskStoreBuilder {
    url: String,
    prefix: String,
    response_timeout: Duration,
    connection_timeout: Duration,
    lease: Duration,
}

impl RedisTaskStoreBuilder {
    pub(super) fn new(url: String) -> Self {
        Self {
            url,
            prefix: DEFAULT_PREFIX.to_owned(),
            response_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(1),
            lease: lease::DEFAULT_LEASE,
        }
    }

    /// The key prefix (default `mcp-tasks`). Instances that share tasks must
    /// use the same one; deployments that share a Redis use different ones.
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
    /// third of it and sweeps for lost instances every half of it, so the
    /// running tasks of a crashed instance are failed within
    /// `lease + lease / 2` of its last renewal (15 s by default); see the
    /// [module docs](super#leases).
    ///
    /// Every instance should use the same lease, longer than the pauses an
    /// instance may take and than the
    /// [`response_timeout`](Self::response_timeout): an instance that misses
    /// its lease is taken for lost, and its running tasks are failed.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.clamp(lease::MIN_LEASE, lease::MAX_LEASE);
        self
    }

    /// Connects, registers this instance with its lease, subscribes to the
    /// end-of-task channel and starts the background tasks (the subscriber,
    /// the deadline timer, and the lease renewer and sweeper), so it must run
    /// inside a Tokio runtime. Fails with [`StoreError::Backend`] when Redis
    /// cannot be reached, and when the server is a Redis Cluster node
    /// (`cluster_enabled:1` in `INFO cluster`), before writing anything: this
    /// store speaks to one server, and on a cluster it would fail later on
    /// every key of another node's slots (`MOVED`). A server that refuses
    /// `INFO` is taken for a single node.
    pub async fn connect(self) -> Result<RedisTaskStore, StoreError> {
        let client = redis::Client::open(self.url.as_str()).map_err(backend)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(self.response_timeout))
            .set_connection_timeout(Some(self.connection_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(1));
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(backend)?;
        refuse_cluster(&mut conn.clone()).await?;
        let keys = Arc::new(Keys::new(self.prefix));
        let stops = Arc::new(Stops::default());
        let shutdown = CancellationToken::new();
        // Stops the background tasks unless a store comes out of this call,
        // also when the caller gives up on it half way.
        let abandoned = shutdown.clone().drop_guard();
        let lease = Arc::new(Lease::new(conn.clone(), keys.clone(), self.lease)?);
        // Registered before anything else: a create needs a live instance.
        lease.renew().await.map_err(backend)?;
        let (ready, subscribed) = oneshot::channel();
        let changes = tokio::sync::broadcast::channel(crate::store::CHANGES).0;
        let subscriber = Subscriber {
            changes: changes.clone(),
            client,
            conn: conn.clone(),
            keys: keys.clone(),
            stops: stops.clone(),
            shutdown: shutdown.clone(),
            timeout: self.response_timeout.max(self.connection_timeout),
        };
        tokio::spawn(stops::subscribe(subscriber, ready));
        let subscribed = match subscribed.await {
            Ok(subscribed) => subscribed.map_err(backend),
            Err(_) => Err(StoreError::backend("the task store subscriber ended")),
        };
        subscribed?;
        tokio::spawn(stops::reap(stops.clone(), shutdown.clone()));
        tokio::spawn(lease::renew(lease.clone(), shutdown.clone()));
        let claims = Arc::new(Claims::default());
        let sweeping = lease::sweep(
            lease.clone(),
            shutdown.clone(),
            claims.clone(),
            stops.clone(),
        );
        tokio::spawn(sweeping);
        abandoned.disarm();
        Ok(RedisTaskStore {
            inner: Arc::new(Inner {
                conn,
                keys,
                stops,
                lease,
                shutdown,
                changes,
                claims,
            }),
        })
    }
}

/// Fails when the server runs in cluster mode; see
/// [`RedisTaskStoreBuilder::connect`].
async fn refuse_cluster(conn: &mut ConnectionManager) -> Result<(), StoreError> {
    let info: String = match redis::cmd("INFO").arg("cluster").query_async(conn).await {
        Ok(info) => info,
        // Renamed, or denied by an ACL: nothing to go by.
        Err(error) if matches!(error.kind(), ErrorKind::Server(_) | ErrorKind::Extension) => {
            return Ok(());
        }
        Err(error) => return Err(backend(error)),
    };
    if info.lines().any(|line| line.trim() == "cluster_enabled:1") {
        return Err(StoreError::backend(
            "this Redis server runs in cluster mode; RedisTaskStore does not support \
             Redis Cluster yet (it needs a standalone Redis, or a primary with replicas)",
        ));
    }
    Ok(())
}
