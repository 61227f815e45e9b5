//! Stop signals of one [`RedisTaskStore`](super::RedisTaskStore) instance.
//!
//! The store hands a [`CancellationToken`] to the work it starts (`create`,
//! and an `answer_input` that completes a round). The token lives here, by
//! task id, until the task ends: a terminal transition anywhere is announced
//! on the `<prefix>:ended` channel and fires it ([`subscribe`]), and the
//! task's deadline fires it locally ([`reap`]), since Redis expiry announces
//! nothing (keyspace notifications are off by default and lossy anyway).
//!
//! Registration happens *before* the Redis write that makes the token
//! meaningful, so an announcement that races the write's reply still finds
//! the entry; a registration whose write did not take is released again.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::conn::Conn;
use super::doubts::{Doubts, Write};
use super::interest::{Interest, LINGER};
use super::shards::Shards;
use crate::backoff::Backoff;
use crate::store::TaskChange;
use crate::task::{TaskId, Timestamp};

/// The tokens this instance handed out, by task id, with their deadlines.
pub(super) struct Stops {
    local: Mutex<Local>,
    /// Wakes the reaper when an earlier deadline arrives.
    wake: Notify,
    /// Each held token keeps its shard wanted by the subscriber.
    pub(super) interest: Arc<Interest>,
}

#[derive(Default)]
struct Local {
    tasks: HashMap<u128, Entry>,
    deadlines: BTreeSet<(u64, u128)>,
    /// How many times this instance was fenced out of each shard (absent:
    /// never): the generation of the id it drives that shard's tasks under
    /// (see `lease.rs`).
    generations: HashMap<usize, u32>,
}

struct Entry {
    stop: CancellationToken,
    /// The shard that holds the task.
    shard: usize,
    deadline: Option<u64>,
    /// Registrations whose Redis write has not answered yet.
    pending: u32,
    /// Whether a write took: the entry then stays until the task ends.
    confirmed: bool,
}

impl Stops {
    pub(super) fn new(interest: Arc<Interest>) -> Self {
        Self {
            local: Mutex::default(),
            wake: Notify::new(),
            interest,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Local> {
        // Only tokens and deadlines live here; a panic elsewhere leaves them usable.
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token of `id`, registering one before a write that may hand it
    /// out, and the generation of this instance's id in `shard` that the
    /// write must name as the task's driver: read under the same lock as
    /// [`fence`](Self::fence) takes, so a token held here is either fenced
    /// with its generation or belongs to the new one. Every `hold_in` is
    /// followed by one [`confirm`](Self::confirm) or
    /// [`release`](Self::release).
    pub(super) fn hold_in(&self, id: TaskId, shard: usize) -> (CancellationToken, u32) {
        let mut local = self.lock();
        let generation = local.generations.get(&shard).copied().unwrap_or(0);
        let entry = local.tasks.entry(id.as_u128()).or_insert_with(|| {
            self.interest.add(shard);
            Entry {
                stop: CancellationToken::new(),
                shard,
                deadline: None,
                pending: 0,
                confirmed: false,
            }
        });
        entry.pending += 1;
        (entry.stop.clone(), generation)
    }

    /// The generation of this instance's id in `shard`.
    pub(super) fn generation(&self, shard: usize) -> u32 {
        self.lock().generations.get(&shard).copied().unwrap_or(0)
    }

    /// This instance's lease in `shard` lapsed: fires every token held for
    /// a task there (their drivers stop; another instance, or this one,
    /// takes the tasks once the lapsed lease is swept) and starts the next
    /// generation of its id there. How many tokens fired.
    pub(super) fn fence(&self, shard: usize) -> usize {
        let mut local = self.lock();
        *local.generations.entry(shard).or_insert(0) += 1;
        let fenced: Vec<u128> = local
            .tasks
            .iter()
            .filter(|(_, entry)| entry.shard == shard)
            .map(|(id, _)| *id)
            .collect();
        let stops: Vec<_> = fenced
            .into_iter()
            .filter_map(|id| self.forget(&mut local, id))
            .collect();
        drop(local);
        for stop in &stops {
            stop.cancel();
        }
        stops.len()
    }

    /// [`hold_in`](Self::hold_in), with a guard that releases the token if the
    /// write's call is dropped before it [`settle`](Holding::settle)s.
    pub(super) fn holding(
        &self,
        id: TaskId,
        shard: usize,
    ) -> (CancellationToken, Holding<'_>, u32) {
        let (stop, generation) = self.hold_in(id, shard);
        let holding = Holding {
            stops: self,
            id,
            settled: false,
            doubt: None,
        };
        (stop, holding, generation)
    }

    /// The write took, in `shard`: keep the token until the task ends or
    /// `deadline` passes. The shard is the write's (a concurrent hold by a
    /// caller of another owner may have registered the entry under its own).
    pub(super) fn confirm(&self, id: TaskId, shard: usize, deadline: Option<Timestamp>) {
        let id = id.as_u128();
        let mut local = self.lock();
        let Some(entry) = local.tasks.get_mut(&id) else {
            return; // already fired: the task ended meanwhile
        };
        entry.pending = entry.pending.saturating_sub(1);
        entry.confirmed = true;
        if entry.shard != shard {
            self.interest.remove(entry.shard);
            self.interest.add(shard);
            entry.shard = shard;
        }
        let Some(deadline) = deadline.map(Timestamp::as_millis) else {
            return;
        };
        if entry.deadline.is_some() {
            return;
        }
        entry.deadline = Some(deadline);
        let earliest = local.deadlines.first().is_none_or(|&(at, _)| deadline < at);
        local.deadlines.insert((deadline, id));
        drop(local);
        if earliest {
            self.wake.notify_one();
        }
    }

    /// The write did not take: forget the token unless someone else keeps it.
    pub(super) fn release(&self, id: TaskId) {
        let mut local = self.lock();
        if let Some(entry) = local.tasks.get_mut(&id.as_u128()) {
            entry.pending = entry.pending.saturating_sub(1);
            if entry.pending == 0 && !entry.confirmed {
                let shard = entry.shard;
                local.tasks.remove(&id.as_u128());
                self.interest.remove(shard);
            }
        }
    }

    /// The task ended (or is gone): fire and forget its token, if held here.
    pub(super) fn fire(&self, id: TaskId) {
        let stop = self.forget(&mut self.lock(), id.as_u128());
        if let Some(stop) = stop {
            stop.cancel();
        }
    }

    /// Takes the entry of `id` out of `local` (and its shard's interest
    /// and deadline): its token, to fire once the lock is let go.
    fn forget(&self, local: &mut Local, id: u128) -> Option<CancellationToken> {
        let entry = local.tasks.remove(&id)?;
        self.interest.remove(entry.shard);
        if let Some(deadline) = entry.deadline {
            local.deadlines.remove(&(deadline, id));
        }
        Some(entry.stop)
    }

    /// How many tokens are held.
    pub(super) fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    /// The shard of a task whose write took here. A token still waiting for
    /// its write is not asked: a caller of another owner (who cannot see
    /// the task) may have registered it under that owner's shard.
    pub(super) fn shard_of(&self, id: TaskId) -> Option<usize> {
        let local = self.lock();
        let entry = local.tasks.get(&id.as_u128());
        entry
            .filter(|entry| entry.confirmed)
            .map(|entry| entry.shard)
    }

    /// The tasks whose write took, with their shards. Entries still waiting
    /// for their write are left out: their task may not be in Redis yet.
    fn confirmed(&self) -> Vec<(TaskId, usize)> {
        let local = self.lock();
        let confirmed = local.tasks.iter().filter(|(_, entry)| entry.confirmed);
        confirmed
            .map(|(&id, entry)| (TaskId::from_u128(id), entry.shard))
            .collect()
    }

    /// Takes the tokens due at `now`; returns the next deadline.
    fn take_due(&self, now: Timestamp, due: &mut Vec<CancellationToken>) -> Option<u64> {
        let mut local = self.lock();
        while let Some(&(at, id)) = local.deadlines.first() {
            if at > now.as_millis() {
                return Some(at);
            }
            local.deadlines.pop_first();
            if let Some(entry) = local.tasks.remove(&id) {
                self.interest.remove(entry.shard);
                due.push(entry.stop);
            }
        }
        None
    }
}

/// A held token whose write has not answered yet: released on drop (and
/// the write noted in doubt, when [`doubting`](Self::doubting)), unless it
/// answered (then its caller confirms or releases the token).
pub(super) struct Holding<'a> {
    stops: &'a Stops,
    id: TaskId,
    settled: bool,
    /// Where a write given up on is noted, since it may still run.
    doubt: Option<(&'a Doubts, Write)>,
}

impl<'a> Holding<'a> {
    /// The write answered `written`: on success the caller confirms or
    /// releases the token; an error (the script may have run) is handled
    /// as a dropped call is, released and noted in doubt.
    pub(super) fn answered<T, E>(mut self, written: &Result<T, E>) {
        self.settled = written.is_ok();
    }

    /// If the call is dropped before its write answers, or the write
    /// fails, `write` is noted in `doubts`: it may have run.
    pub(super) fn doubting(mut self, doubts: &'a Doubts, write: Write) -> Self {
        self.doubt = Some((doubts, write));
        self
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.stops.release(self.id);
            if let Some((doubts, write)) = self.doubt {
                doubts.note(self.id, write);
            }
        }
    }
}

/// Fires tokens at their task's deadline, until `shutdown`.
pub(super) async fn reap(stops: Arc<Stops>, shutdown: CancellationToken) {
    let mut due = Vec::new();
    loop {
        let now = Timestamp::now();
        let next = stops.take_due(now, &mut due);
        for stop in due.drain(..) {
            stop.cancel();
        }
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep(Duration::from_millis(at - now.as_millis())).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = stops.wake.notified() => {}
            _ = sleep => {}
        }
    }
}

/// What the subscriber needs.
pub(super) struct Subscriber {
    /// One client per URL given: on a single server the subscription's
    /// connection; on a cluster the seeds of the sharded subscriber's own
    /// cluster connection.
    pub(super) clients: Vec<redis::Client>,
    pub(super) conn: Conn,
    pub(super) shards: Arc<Shards>,
    pub(super) stops: Arc<Stops>,
    pub(super) shutdown: CancellationToken,
    pub(super) timeout: Duration,
    /// Where every id heard on either channel goes (the change feed).
    pub(super) changes: tokio::sync::broadcast::Sender<TaskChange>,
}

const KEEPALIVE: Duration = Duration::from_secs(15);
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// On a single server: listens on every shard's `ended` channel and fires
/// the tokens of ended tasks, and on its `changed` channel, passing every id
/// heard to the change feed, until `shutdown` (a cluster has
/// [`sharded::subscribe`](super::sharded::subscribe)). Reports the first
/// subscription (or its failure) on `ready`.
///
/// A connection lost and made again may have missed announcements, so every
/// resubscription is followed by a check of each held task in Redis: a task
/// that is gone or terminal has its token fired then.
pub(super) async fn subscribe(sub: Subscriber, ready: oneshot::Sender<redis::RedisResult<()>>) {
    let mut ready = Some(ready);
    let mut backoff = Backoff::new(Duration::from_millis(100), MAX_BACKOFF);
    let channel = sub.shards.home().ended_name();
    let interest = sub.stops.interest.clone();
    let mut node = 0;
    loop {
        let client = &sub.clients[node % sub.clients.len()];
        node += 1;
        let attempt = async {
            let pubsub = bounded(sub.timeout, client.get_async_pubsub()).await?;
            let (mut sink, messages) = pubsub.split();
            // The shards wanted now (none at connect).
            adjust(&sub, &mut sink).await?;
            if ready.is_none() {
                reconcile(&sub).await?;
            }
            Ok::<_, redis::RedisError>((sink, messages))
        };
        let attempt = tokio::select! {
            _ = sub.shutdown.cancelled() => return,
            attempt = attempt => attempt,
        };
        let (mut sink, mut messages) = match (attempt, ready.take()) {
            (Ok(pubsub), Some(ready)) => {
                if ready.send(Ok(())).is_err() {
                    return; // `connect` was given up
                }
                pubsub
            }
            (Ok(pubsub), None) => {
                // Announcements may have been lost meanwhile: subscribers
                // read their tasks again.
                let _ = sub.changes.send(TaskChange::Missed);
                pubsub
            }
            (Err(error), Some(ready)) => {
                let _ = ready.send(Err(error));
                return;
            }
            (Err(error), None) => {
                tracing::warn!(%error, "task store: resubscribing to {channel} failed");
                tokio::select! {
                    _ = sub.shutdown.cancelled() => return,
                    _ = backoff.sleep() => {}
                }
                continue;
            }
        };
        backoff.reset();
        let mut keepalive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        let mut linger = tokio::time::interval(LINGER / 6);
        loop {
            tokio::select! {
                _ = sub.shutdown.cancelled() => return,
                message = messages.next() => match message {
                    Some(message) => {
                        heard(&sub, message.get_channel_name(), message.get_payload_bytes());
                    }
                    None => break,
                },
                _ = keepalive.tick() => {
                    if bounded(sub.timeout, sink.ping::<redis::Value>()).await.is_err() {
                        break;
                    }
                }
                // A shard newly wanted, or one no longer wanted.
                _ = interest.wake.notified() => if adjust(&sub, &mut sink).await.is_err() { break },
                _ = linger.tick() => if adjust(&sub, &mut sink).await.is_err() { break },
            }
        }
        interest.clear();
        tracing::warn!("task store: subscription to {channel} lost, resubscribing");
    }
}

/// The shard whose channel is `channel`, if any.
pub(super) fn shard_of_channel(sub: &Subscriber, channel: &[u8]) -> Option<usize> {
    (0..sub.shards.count()).find(|&shard| {
        channel_pair(sub, shard)
            .iter()
            .any(|name| name.as_bytes() == channel)
    })
}

/// A shard's two channels: the end of a task, and its other changes.
pub(super) fn channel_pair(sub: &Subscriber, shard: usize) -> [String; 2] {
    let keys = sub.shards.get(shard);
    [keys.ended_name(), keys.changed_name()]
}

/// Subscribes to the shards newly wanted and leaves those no longer wanted
/// (one shard's pair per command). After a new subscription, what may
/// have been missed before it is made up for: held tasks are checked and
/// the change feed hears [`TaskChange::Missed`] when someone listens there.
async fn adjust(sub: &Subscriber, sink: &mut redis::aio::PubSubSink) -> redis::RedisResult<()> {
    let interest = &sub.stops.interest;
    let (join, leave) = interest.plan();
    for &shard in &leave {
        bounded(sub.timeout, sink.unsubscribe(&channel_pair(sub, shard))).await?;
    }
    for &shard in &join {
        bounded(sub.timeout, sink.subscribe(&channel_pair(sub, shard))).await?;
        interest.set_subscribed(shard, true);
    }
    caught_up(sub, &join).await
}

/// An announcement heard on `channel`: the id's stop signal fires when the
/// task ended, and the change feed hears the id either way.
pub(super) fn heard(sub: &Subscriber, channel: &str, payload: &[u8]) {
    let id = std::str::from_utf8(payload).ok().and_then(TaskId::parse);
    if let Some(id) = id {
        // `<tag>:ended` (see `Keys::ended_name`); the other is `<tag>:changed`.
        if channel.ends_with(":ended") {
            sub.stops.fire(id);
        }
        // Nobody listening is not an error.
        let _ = sub.changes.send(TaskChange::Changed(id));
    }
}

/// After subscribing to the shards `join`, makes up for what may have been
/// missed before: held tokens are checked (the sweeper's claims did not
/// wait for the subscription), and the change feed hears
/// [`TaskChange::Missed`] when someone listens there (a hub's watch starts
/// before its subscription).
pub(super) async fn caught_up(sub: &Subscriber, join: &[usize]) -> redis::RedisResult<()> {
    if join.is_empty() {
        return Ok(());
    }
    reconcile(sub).await?;
    if sub.stops.interest.listened(join) {
        let _ = sub.changes.send(TaskChange::Missed);
    }
    Ok(())
}

/// Fires the tokens of held tasks that are gone or terminal in Redis.
pub(super) async fn reconcile(sub: &Subscriber) -> redis::RedisResult<()> {
    let mut conn = sub.conn.clone();
    let mut held = sub.stops.confirmed();
    // One pipeline stays in one shard, hence in one slot.
    held.sort_unstable_by_key(|&(_, shard)| shard);
    for group in held.chunk_by(|a, b| a.1 == b.1) {
        for ids in group.chunks(256) {
            let keys = sub.shards.get(ids[0].1);
            let mut pipe = redis::pipe();
            for &(id, _) in ids {
                pipe.hget(keys.task(id), "s");
            }
            let statuses: Vec<Option<String>> =
                bounded(sub.timeout, pipe.query_async(&mut conn)).await?;
            for (&(id, _), status) in ids.iter().zip(statuses) {
                let live = matches!(status.as_deref(), Some("working" | "input_required"));
                if !live {
                    sub.stops.fire(id);
                }
            }
        }
    }
    Ok(())
}

/// `future`, failed as timed out past `timeout`.
pub(super) async fn bounded<T>(
    timeout: Duration,
    future: impl Future<Output = redis::RedisResult<T>>,
) -> redis::RedisResult<T> {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| Err(redis::RedisError::from((redis::ErrorKind::Io, "timed out"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_waiting_for_its_write_names_no_shard() {
        let stops = Stops::new(Arc::new(Interest::new(2)));
        let id = TaskId::from_u128(7);
        // A foreign caller's answer holds it under its own shard 1 first.
        let _foreign = stops.hold_in(id, 1);
        assert_eq!(
            stops.shard_of(id),
            None,
            "the task's shard is asked of Redis"
        );
        stops.release(id);
    }

    #[test]
    fn a_token_confirmed_by_the_owners_write_keeps_the_owners_shard() {
        let stops = Stops::new(Arc::new(Interest::new(2)));
        let id = TaskId::from_u128(7);
        // A caller of another owner holds it first, under its own shard 1;
        // the owner's call, in shard 0, holds it too and its write takes.
        let _foreign = stops.hold_in(id, 1);
        let _owners = stops.hold_in(id, 0);
        stops.confirm(id, 0, None);
        stops.release(id);
        assert_eq!(
            stops.shard_of(id),
            Some(0),
            "the driver's calls go to shard 0"
        );
        stops.fire(id);
        assert_eq!(stops.len(), 0);
    }
}
