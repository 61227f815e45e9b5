//! Instance leases, and the sweeper that fails the running tasks of lost
//! instances (see the module docs of [`redis`](super#leases)).
//!
//! Each instance keeps `<tag>:instance:<iid>` alive in every shard (`PX` =
//! the lease, renewed every third of it by `lua/renew.lua`) and is listed
//! in each shard's `<tag>:instances`. Every half lease, each instance
//! looks, shard by shard, for listed instances whose lease key is gone and,
//! once one has been found gone for a while (see below), runs `lua/sweep.lua` on
//! it: it fails the lost instance's `working` tasks of that shard that it
//! still drives, announces them on the shard's end-of-task channel, and
//! forgets the instance there once its driving set is empty. Each shard
//! judges an instance by its own copy of the lease, so the last lease check
//! and the sweep stay one atomic step.
//!
//! | What happens | What the lease does |
//! |--------------|---------------------|
//! | a renewal fails in a shard (its primary failing over, Redis unreachable), or hangs for a third of the lease | tried again every [`retry`](Lease::retry) (at most 200 ms) instead of a third of the lease later; warned once, and when it takes again |
//! | no renewal has taken in a shard for a whole lease | fenced: the tasks this instance drives there are stopped ([`Stops::fence`]) before any other instance may take them (`0.4 × lease` later at the earliest), and it joins the shard again under its next id (`<id>-<n>`), leaving the old one to be swept like a lost instance's |
//! | a shard's slot moved to a promoted replica | the renewal is a script, which follows the slot as any command does (a MULTI/EXEC transaction was aborted with MOVED and failed until the next one) |
//! | an instance's lease key gone at one sweep | noted, not swept: a live instance whose lease ran out while its shard had no primary renews within a few retries once the shard has one again |
//! | gone still at a sweep [`GONE_FOR`] of a lease later or more (the next regular sweep, half a lease later) | swept |
//! | given up ([`release`](Lease::release): the key holds `released`) | swept at the first sweep that finds it |

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{join_all, try_join_all};
use redis::Value;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::claims::Claims;
use super::conn::Conn;
use super::scripts::{self, Keys};
use super::shards::Shards;
use super::stops::{self, Stops};
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

/// What the lease key of an instance that gave its lease up holds (a live
/// one holds `1`): swept at the first sweep that finds it.
const RELEASED: &str = "released";

/// How long, as a share of the lease, another instance's lease key must
/// have been found gone before it is swept: a little less than the half
/// lease between two sweeps, so that the next regular sweep takes it, and a
/// sweep run late right after another (the one before was held up by a
/// shard without a primary) does not.
const GONE_FOR: f64 = 0.4;

/// The longest wait before a failed renewal is tried again.
const MAX_RETRY: Duration = Duration::from_millis(200);

/// This instance's identity and lease.
pub(super) struct Lease {
    conn: Conn,
    shards: Arc<Shards>,
    /// The stop signals of the tasks this instance drives, and the
    /// generation of its id in each shard.
    stops: Arc<Stops>,
    id: String,
    lease: Duration,
    /// When the last renewal that took in each shard was sent; `None`
    /// after a fence, until one takes again.
    renewed: Mutex<Vec<Option<Instant>>>,
    /// Other instances whose lease key a sweep of a shard found gone, and
    /// when it first did, by shard.
    gone: Mutex<HashMap<usize, Vec<(String, Instant)>>>,
}

impl Lease {
    /// A fresh random instance id; nothing is written yet.
    pub(super) fn new(
        conn: Conn,
        shards: Arc<Shards>,
        stops: Arc<Stops>,
        lease: Duration,
    ) -> Result<Self, StoreError> {
        let id = TaskId::generate()
            .map_err(|error| StoreError::backend(format!("no randomness: {error}")))?
            .to_string();
        let renewed = Mutex::new(vec![None; shards.count()]);
        Ok(Self {
            conn,
            shards,
            stops,
            id,
            lease,
            renewed,
            gone: Mutex::default(),
        })
    }

    /// The random id of this instance.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// This instance's id of `generation` in a shard: the random id, then
    /// `<id>-<generation>` after each fence there.
    pub(super) fn id_in(&self, generation: u32) -> Cow<'_, str> {
        if generation == 0 {
            Cow::Borrowed(&self.id)
        } else {
            Cow::Owned(format!("{}-{generation}", self.id))
        }
    }

    /// This instance's id in `shard` now.
    fn id_now(&self, shard: usize) -> Cow<'_, str> {
        self.id_in(self.stops.generation(shard))
    }

    /// The lease in milliseconds, as the scripts take it.
    pub(super) fn millis(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// How soon a failed renewal is tried again: a sixth of the lease, at
    /// most [`MAX_RETRY`].
    fn retry(&self) -> Duration {
        (self.lease / 6).min(MAX_RETRY)
    }

    /// Keeps this instance alive for one more lease, and listed, in every
    /// shard (one script per shard, all sent at once, each let finish);
    /// the first error, if a shard failed.
    pub(super) async fn renew(&self) -> redis::RedisResult<()> {
        let sent = Instant::now();
        // A shard whose renewal hangs (a primary that stopped answering)
        // fails alone, after a renewal period, and holds up no other.
        let bound = self.lease / 3;
        let renewals = self.shards.all().map(|(shard, keys)| {
            let id = self.id_now(shard);
            let mut call = scripts::RENEW.key(keys.instance(&id));
            call.key(keys.instances()).arg(&*id).arg(self.millis());
            let mut conn = self.conn.clone();
            async move {
                let renewed = stops::bounded(bound, call.invoke_async::<()>(&mut conn)).await;
                (shard, renewed)
            }
        });
        let renewed = join_all(renewals).await;
        let mut times = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        let mut first = Ok(());
        for (shard, result) in renewed {
            match result {
                Ok(()) => times[shard] = Some(sent),
                Err(error) if first.is_ok() => first = Err(error),
                Err(_) => {}
            }
        }
        first
    }

    /// Fences this instance out of every shard where no renewal has taken
    /// for a whole lease: its key there may be gone, and another instance
    /// may take its tasks there from `GONE_FOR` of a lease later. The
    /// tasks it drives there are stopped first
    /// ([`Stops::fence`]), so that a call never runs here and again
    /// elsewhere at once; it joins the shard again under its next id.
    fn fence_lapsed(&self) {
        let mut times = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        let (mut shards, mut stopped) = (Vec::new(), 0);
        for (shard, renewed) in times.iter_mut().enumerate() {
            if renewed.is_some_and(|at| at.elapsed() >= self.lease) {
                *renewed = None;
                stopped += self.stops.fence(shard);
                shards.push(shard);
            }
        }
        if !shards.is_empty() {
            tracing::warn!(
                instance = self.id(),
                ?shards,
                stopped,
                "task store: no lease renewal took in these shards for a whole lease: the tasks this instance ran there are stopped, for another instance to take"
            );
        }
    }

    /// Of the other instances listed in `shard`, and what their lease key
    /// holds (`leases`), the ones to sweep: a lease given up, or one found
    /// gone by a sweep at least [`GONE_FOR`] of the lease ago and gone still.
    /// Remembers when each gone one was first found so.
    fn due<'a>(
        &self,
        shard: usize,
        others: &[&'a String],
        leases: &[Option<String>],
    ) -> Vec<&'a String> {
        let now = Instant::now();
        let long_enough = self.lease.mul_f64(GONE_FOR);
        let mut gone = self.gone.lock().unwrap_or_else(|p| p.into_inner());
        let before = gone.remove(&shard).unwrap_or_default();
        let mut due = Vec::new();
        let mut still = Vec::new();
        for (iid, lease) in others.iter().zip(leases) {
            match lease.as_deref() {
                Some(RELEASED) => due.push(*iid),
                Some(_) => {}
                None => {
                    let first = before
                        .iter()
                        .find(|(seen, _)| seen == *iid)
                        .map_or(now, |(_, at)| *at);
                    if now.duration_since(first) >= long_enough {
                        due.push(*iid);
                    } else {
                        still.push(((*iid).clone(), first));
                    }
                }
            }
        }
        if !still.is_empty() {
            gone.insert(shard, still);
        }
        due
    }

    /// Gives this instance's lease up at once (its key says
    /// [`RELEASED`] until the lease would have run out), so that the next
    /// sweep of any other instance fails the tasks this one still drives.
    pub(super) async fn release(&self) -> Result<(), StoreError> {
        let drops = self.shards.all().map(|(shard, keys)| {
            let mut conn = self.conn.clone();
            let key = keys.instance(&self.id_now(shard));
            let millis = self.millis();
            async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(RELEASED)
                    .arg("PX")
                    .arg(millis)
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
    async fn sweep_once(&self, claims: &Claims) -> (u64, usize, Option<StoreError>) {
        let (mut failed, mut claimed, mut first) = (0, 0, None);
        for (shard, keys) in self.shards.all() {
            match self.sweep_shard(shard, keys, claims).await {
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
    ) -> Result<(u64, usize), StoreError> {
        let mut conn = self.conn.clone();
        // Claims go to this instance's id now; its older ids in the shard,
        // fenced, are swept like any other's.
        let generation = self.stops.generation(shard);
        let me = self.id_in(generation);
        let (mut failed, mut claimed) = (0, 0);
        let instances: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.instances())
            .query_async(&mut conn)
            .await
            .map_err(backend)?;
        let others: Vec<&String> = instances.iter().filter(|&iid| **iid != *me).collect();
        let leases: Vec<Option<String>> = if others.is_empty() {
            Vec::new()
        } else {
            let mut pipe = redis::pipe();
            for iid in &others {
                pipe.get(keys.instance(iid));
            }
            pipe.query_async(&mut conn).await.map_err(backend)?
        };
        for lost in self.due(shard, &others, &leases) {
            loop {
                let mut call = scripts::SWEEP.key(keys.instance(lost));
                call.key(keys.driving(lost))
                    .key(keys.instances())
                    .key(keys.driving(&me))
                    .arg(lost)
                    .arg(SWEEP_BATCH)
                    .arg(keys.task_head())
                    .arg(keys.round_head())
                    .arg(now_text())
                    .arg(keys.channel())
                    .arg(LOST_ERROR)
                    .arg(LOST_MESSAGE)
                    .arg(&*me)
                    .arg(keys.changed());
                let reply: Value = call.invoke_async(&mut conn).await.map_err(backend)?;
                let mut items = reply::items(reply)?.into_iter();
                let more = reply::required(items.next(), "sweep state")?;
                let count = reply::required(items.next(), "sweep count")?;
                failed += count.parse::<u64>().unwrap_or(0);
                claimed += claims.add(&self.stops, shard, generation, items.collect())?;
                if more != "1" {
                    break;
                }
            }
        }
        Ok((failed, claimed))
    }
}

/// Renews the lease every third of it, and a failed renewal every
/// [`retry`](Lease::retry), until `shutdown`: after the last clone of the
/// store is dropped, the lease runs out and another instance sweeps this
/// one. Runs apart from [`sweep`], so that a slow sweep never delays a
/// renewal.
pub(super) async fn renew(lease: Arc<Lease>, shutdown: CancellationToken) {
    let period = lease.lease / 3;
    // `connect` renewed once already.
    let mut failing: Option<Instant> = None;
    loop {
        let wait = if failing.is_some() {
            lease.retry()
        } else {
            period
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let renewed = tokio::select! {
            _ = shutdown.cancelled() => return,
            renewed = lease.renew() => renewed,
        };
        lease.fence_lapsed();
        let instance = lease.id();
        match (renewed, &mut failing) {
            (Ok(()), None) => {}
            (Ok(()), Some(since)) => {
                let after = since.elapsed();
                tracing::info!(instance, ?after, "task store: lease renewed again");
                failing = None;
            }
            (Err(error), None) => {
                tracing::warn!(%error, instance, "task store: lease renewal failed; trying again");
                failing = Some(Instant::now());
            }
            (Err(error), Some(_)) => {
                tracing::debug!(%error, instance, "task store: lease renewal failed again");
            }
        }
    }
}

/// Sweeps for lost instances every half lease, until `shutdown`. The first
/// sweep runs at once, so that a restarted deployment soon fails the tasks
/// of the instances it lost.
pub(super) async fn sweep(lease: Arc<Lease>, shutdown: CancellationToken, claims: Arc<Claims>) {
    let mut ticks = tokio::time::interval(lease.lease / 2);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let swept = tokio::select! {
            _ = shutdown.cancelled() => return,
            swept = lease.sweep_once(&claims) => swept,
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
