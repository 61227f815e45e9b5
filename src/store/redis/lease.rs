//! Instance leases, and the sweeper that fails the running tasks of lost
//! instances (see the module docs of [`redis`](super#leases)).
//!
//! Each instance keeps `<tag>:instance:<iid>` alive in every shard (`PX` =
//! the lease, renewed every third of it) and is listed in each shard's
//! `<tag>:instances`. Every half lease, each instance looks, shard by
//! shard, for listed instances whose lease key is gone and runs
//! `lua/sweep.lua` on each: it fails the lost instance's `working` tasks
//! of that shard that it still drives, announces them on the shard's
//! end-of-task channel, and forgets the instance there once its driving set
//! is empty. Each shard judges an instance by its own copy of the lease, so
//! the lease check and the sweep stay one atomic step.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::try_join_all;
use redis::Value;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::claims::Claims;
use super::conn::Conn;
use super::scripts::{self, Keys};
use super::shards::Shards;
use super::stops::Stops;
use super::{backend, now_text, reply};
use crate::store::StoreError;
use crate::task::TaskId;

/// The lease unless [`lease`](super::RedisTaskStoreBuilder::lease) says otherwise.
pub(super) const DEFAULT_LEASE: Duration = Duration::from_secs(10);
/// The shortest lease: renewals every third of it must stay meaningful.
pub(super) const MIN_LEASE: Duration = Duration::from_millis(100);
/// The longest lease; far beyond any sensible one, and within what `PX` takes.
pub(super) const MAX_LEASE: Duration = Duration::from_secs(24 * 60 * 60);
/// Tasks one sweep script call handles, so that no call blocks Redis long.
const SWEEP_BATCH: usize = 256;

/// The error a task of a lost instance ends with, and its status message.
const LOST_MESSAGE: &str = "The server instance running this task was lost";
const LOST_ERROR: &str =
    r#"{"code":-32603,"message":"The server instance running this task was lost"}"#;

/// This instance's identity and lease.
pub(super) struct Lease {
    conn: Conn,
    shards: Arc<Shards>,
    id: String,
    lease: Duration,
}

impl Lease {
    /// A fresh random instance id; nothing is written yet.
    pub(super) fn new(
        conn: Conn,
        shards: Arc<Shards>,
        lease: Duration,
    ) -> Result<Self, StoreError> {
        let id = TaskId::generate()
            .map_err(|error| StoreError::backend(format!("no randomness: {error}")))?
            .to_string();
        Ok(Self {
            conn,
            shards,
            id,
            lease,
        })
    }

    /// The random id of this instance.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The lease in milliseconds, as the scripts take it.
    pub(super) fn millis(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// Keeps this instance alive for one more lease, and listed, in every
    /// shard (one transaction per shard, all sent at once).
    pub(super) async fn renew(&self) -> redis::RedisResult<()> {
        let renewals = self.shards.all().map(|(_, keys)| {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("SET")
                .arg(keys.instance(&self.id))
                .arg("1")
                .arg("PX")
                .arg(self.millis())
                .ignore()
                .sadd(keys.instances(), &self.id)
                .ignore();
            let mut conn = self.conn.clone();
            async move { pipe.query_async::<()>(&mut conn).await }
        });
        try_join_all(renewals).await.map(drop)
    }

    /// Drops this instance's lease at once, so that the next sweep of any
    /// other instance fails the tasks this one still drives.
    pub(super) async fn release(&self) -> Result<(), StoreError> {
        let drops = self.shards.all().map(|(_, keys)| {
            let mut conn = self.conn.clone();
            let key = keys.instance(&self.id);
            async move {
                redis::cmd("DEL")
                    .arg(key)
                    .query_async::<()>(&mut conn)
                    .await
            }
        });
        try_join_all(drops).await.map(drop).map_err(backend)
    }

    /// Sweeps every listed instance whose lease is gone, except this one
    /// (whose lease may lapse while Redis is unreachable, but which is alive):
    /// fails its running tasks, or claims those that may run again into
    /// `claims`. Returns how many tasks were failed and claimed, and the
    /// first error: a shard Redis cannot answer for (its primary failing
    /// over) holds up no other shard's sweep.
    async fn sweep_once(&self, claims: &Claims, stops: &Stops) -> (u64, usize, Option<StoreError>) {
        let (mut failed, mut claimed, mut first) = (0, 0, None);
        for (shard, keys) in self.shards.all() {
            match self.sweep_shard(shard, keys, claims, stops).await {
                Ok((f, c)) => (failed, claimed) = (failed + f, claimed + c),
                Err(error) => {
                    first.get_or_insert(error);
                }
            }
        }
        (failed, claimed, first)
    }

    /// [`sweep_once`](Self::sweep_once) in one shard.
    async fn sweep_shard(
        &self,
        shard: usize,
        keys: &Keys,
        claims: &Claims,
        stops: &Stops,
    ) -> Result<(u64, usize), StoreError> {
        let mut conn = self.conn.clone();
        let (mut failed, mut claimed) = (0, 0);
        let instances: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.instances())
            .query_async(&mut conn)
            .await
            .map_err(backend)?;
        for lost in instances.iter().filter(|&iid| *iid != self.id) {
            loop {
                let mut call = scripts::SWEEP.key(keys.instance(lost));
                call.key(keys.driving(lost))
                    .key(keys.instances())
                    .key(keys.driving(&self.id))
                    .arg(lost)
                    .arg(SWEEP_BATCH)
                    .arg(keys.task_head())
                    .arg(keys.round_head())
                    .arg(now_text())
                    .arg(keys.channel())
                    .arg(LOST_ERROR)
                    .arg(LOST_MESSAGE)
                    .arg(&self.id)
                    .arg(keys.changed());
                let reply: Value = call.invoke_async(&mut conn).await.map_err(backend)?;
                let mut items = reply::items(reply)?.into_iter();
                let more = reply::required(items.next(), "sweep state")?;
                let count = reply::required(items.next(), "sweep count")?;
                failed += count.parse::<u64>().unwrap_or(0);
                claimed += claims.add(stops, shard, items.collect())?;
                if more != "1" {
                    break;
                }
            }
        }
        Ok((failed, claimed))
    }
}

/// Renews the lease every third of it, until `shutdown`: after the last
/// clone of the store is dropped, the lease runs out and another instance
/// sweeps this one. Runs apart from [`sweep`], so that a slow sweep never
/// delays a renewal.
pub(super) async fn renew(lease: Arc<Lease>, shutdown: CancellationToken) {
    // `connect` renewed once already.
    let period = lease.lease / 3;
    let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let renewed = tokio::select! {
            _ = shutdown.cancelled() => return,
            renewed = lease.renew() => renewed,
        };
        if let Err(error) = renewed {
            tracing::warn!(%error, instance = lease.id(), "task store: lease renewal failed");
        }
    }
}

/// Sweeps for lost instances every half lease, until `shutdown`. The first
/// sweep runs at once, so that a restarted deployment soon fails the tasks
/// of the instances it lost.
pub(super) async fn sweep(
    lease: Arc<Lease>,
    shutdown: CancellationToken,
    claims: Arc<Claims>,
    stops: Arc<Stops>,
) {
    let mut ticks = tokio::time::interval(lease.lease / 2);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let swept = tokio::select! {
            _ = shutdown.cancelled() => return,
            swept = lease.sweep_once(&claims, &stops) => swept,
        };
        let (failed, claimed, error) = swept;
        if failed + claimed as u64 > 0 {
            tracing::warn!(
                failed,
                claimed,
                "task store: the running tasks of lost server instances were failed, or claimed to run again"
            );
        }
        if let Some(error) = error {
            tracing::warn!(%error, "task store: sweeping lost instances failed in a shard");
        }
    }
}
