//! Writes whose outcome this instance never learnt.
//!
//! A script can run although its caller saw an error: the reply was lost
//! to the response timeout or a dropped connection, or the command waited
//! in Redis (behind a slow script, a `CLIENT PAUSE`) and ran after the
//! caller gave up. A `create` or a round-completing `answer_input` that
//! ran so leaves a task `working`, driven by this live instance, with no
//! call behind it: no sweep fails it (the lease is alive), so it would stay
//! `working` until its TTL and hold its quota place.
//!
//! Each such write is noted here, and [`settle`] checks it in Redis a few
//! times over about a minute (the script may run late): a task created by a
//! doubtful `create` is deleted (its client never got the handle, and its
//! id is this call's own), a task resumed by a doubtful `answer_input` is
//! failed (`lua/orphan.lua`: the task records the ticket of the call that
//! resumed it, so a task this instance drives, or one a retried answer
//! resumed, is left alone). A check that finds
//! nothing to do yet waits for the next; one Redis cannot answer is tried
//! again without counting.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Inner, RedisTaskStore, backend, now_text, reply, scripts};
use crate::store::StoreError;
use crate::task::TaskId;

/// Doubts kept at most; more are logged and dropped (each is one failed
/// write, so this many means Redis is failing everything anyway).
const MAX_DOUBTS: usize = 10_000;
/// When a doubt is checked, after it was noted: a script held up in Redis
/// runs within one of these, or (after the last) is taken never to run.
const CHECKS: [Duration; 7] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
    Duration::from_secs(16),
    Duration::from_secs(32),
    Duration::from_secs(64),
];
/// How often the due doubts are looked at.
const TICK: Duration = Duration::from_millis(500);

/// The error of a task whose resumed call was lost (its message becomes
/// the status message).
const LOST_ERROR: &str = r#"{"code":-32603,"message":"The task store did not confirm resuming this task, so its call was not run again"}"#;

/// Which write is in doubt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Write {
    /// A `create`: the task, if it exists, is known to nobody.
    Create,
    /// An `answer_input` that may have completed the round, with its ticket
    /// (the task records which call resumed it).
    Resume(u64),
}

/// When a doubt is checked next, and how many checks were made.
struct Doubt {
    due: Instant,
    checks: usize,
}

/// The doubtful writes of one store instance, by task id and write (two
/// failed answers to one task are two doubts: either may have run).
#[derive(Default)]
pub(super) struct Doubts {
    pending: Mutex<HashMap<(u128, Write), Doubt>>,
    tickets: AtomicU64,
}

impl Doubts {
    /// A ticket for one `answer_input` call, unique in this instance.
    pub(super) fn ticket(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(u128, Write), Doubt>> {
        // Doubts only: a panic elsewhere leaves them usable.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `write` of `id` failed in a way that may have run it.
    pub(super) fn note(&self, id: TaskId, write: Write) {
        let mut pending = self.lock();
        if pending.len() >= MAX_DOUBTS {
            tracing::warn!(%id, "task store: too many writes in doubt; this one is not checked");
            return;
        }
        let due = Instant::now() + CHECKS[0];
        pending.insert((id.as_u128(), write), Doubt { due, checks: 0 });
    }

    /// The doubts due at `now`.
    fn due(&self, now: Instant) -> Vec<(TaskId, Write)> {
        let pending = self.lock();
        let due = pending.iter().filter(|(_, doubt)| doubt.due <= now);
        due.map(|(&(id, write), _)| (TaskId::from_u128(id), write))
            .collect()
    }

    /// The check of `write` of `id` found nothing to do yet: the next one is
    /// due later. Returns `true` when this was the last (the doubt is gone).
    fn checked(&self, id: TaskId, write: Write) -> bool {
        let mut pending = self.lock();
        let key = (id.as_u128(), write);
        let Some(doubt) = pending.get_mut(&key) else {
            return false;
        };
        doubt.checks += 1;
        match CHECKS.get(doubt.checks) {
            Some(after) => {
                doubt.due = Instant::now() + (*after - CHECKS[doubt.checks - 1]);
                false
            }
            None => {
                pending.remove(&key);
                true
            }
        }
    }

    /// `write` of `id` is settled: no more checks.
    fn settled(&self, id: TaskId, write: Write) {
        self.lock().remove(&(id.as_u128(), write));
    }

    /// Every doubt about `id` is settled: a later call resumed the task.
    pub(super) fn forget(&self, id: TaskId) {
        let id = id.as_u128();
        self.lock().retain(|&(doubted, _), _| doubted != id);
    }

    /// How many writes are in doubt.
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// What one check did.
enum Checked {
    /// The task was deleted or failed, or is out of this instance's hands.
    Settled,
    /// Nothing yet (the write may still run).
    NotYet,
}

/// Checks the due doubts every [`TICK`], until `shutdown` or until the
/// store is dropped (it holds the store only while it checks).
pub(super) async fn settle(store: Weak<Inner>, shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let Some(inner) = store.upgrade() else {
            return;
        };
        let store = RedisTaskStore { inner };
        let doubts = &store.inner.doubts;
        for (id, write) in doubts.due(Instant::now()) {
            let checked = tokio::select! {
                _ = shutdown.cancelled() => return,
                checked = store.check(id, write) => checked,
            };
            match checked {
                Ok(Checked::Settled) => doubts.settled(id, write),
                Ok(Checked::NotYet) => {
                    if doubts.checked(id, write)
                        && write == Write::Create
                        && store.inner.shards.count() > 1
                    {
                        // The create never ran: its place under the total cap is free.
                        store.unreserve(id).await;
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, %id, "task store: a write in doubt could not be checked");
                }
            }
        }
    }
}

impl RedisTaskStore {
    /// One check of the doubtful `write` of `id`.
    async fn check(&self, id: TaskId, write: Write) -> Result<Checked, StoreError> {
        match write {
            Write::Create => match self.admin_remove(id).await? {
                Some(_) => {
                    tracing::warn!(%id, "task store: a task whose creation was not confirmed was deleted");
                    Ok(Checked::Settled)
                }
                None => Ok(Checked::NotYet),
            },
            Write::Resume(ticket) => self.fail_orphan(id, ticket).await,
        }
    }

    /// Fails `id` if the call with `ticket` resumed it: its call was never
    /// issued again.
    async fn fail_orphan(&self, id: TaskId, ticket: u64) -> Result<Checked, StoreError> {
        let shard = self.locate(id).await?;
        let keys = self.inner.shards.get(shard);
        let mut call = scripts::ORPHAN.key(keys.task(id));
        call.key(keys.round(id))
            .arg(&*self.inner.lease.id_in(self.inner.stops.generation(shard)))
            .arg(LOST_ERROR)
            .arg(now_text())
            .arg(keys.channel())
            .arg(id.to_string())
            .arg(keys.driving_head())
            .arg(ticket);
        let seen: String = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        match seen.as_str() {
            "orphan" => {
                tracing::warn!(%id, "task store: a task whose resume was not confirmed was failed");
                Ok(Checked::Settled)
            }
            // The round may not be answered yet (the write may still run).
            "input_required" => Ok(Checked::NotYet),
            "gone" | "other" => Ok(Checked::Settled),
            _ => Err(reply::corrupt("an unknown orphan reply")),
        }
    }
}
