//! Tasks this instance claimed from a lost one, to run their calls again
//! ([`TaskStore::orphans`](crate::TaskStore::orphans)).
//!
//! A sweep (`lua/sweep.lua`) claims a lost instance's `working` task that
//! has a re-run record and attempts left: it counts the attempt, makes the
//! sweeper its driver, and returns what a re-run needs. The claims wait
//! here, each with its stop signal held, until the layer takes them; the
//! signal wakes the layer's recovery when new ones arrive.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::Value;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::reply;
use super::stops::Stops;
use crate::store::{Orphan, Rerun, StoreError};
use crate::task::{TaskId, Timestamp};

/// Claimed tasks not yet taken by the layer.
#[derive(Default)]
pub(super) struct Claims {
    pending: Mutex<Vec<Orphan>>,
    /// Notified when claims arrive.
    pub(super) signal: Arc<Notify>,
}

impl Claims {
    /// Every claim waiting, once.
    pub(super) fn take(&self) -> Vec<Orphan> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many claims wait.
    pub(super) fn held(&self) -> usize {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Reads the claims of one sweep reply (after its state and count) and
    /// holds their stop signals (the tasks are in `shard`, claimed for this
    /// instance's id of `generation` there); how many. A claim made for a
    /// generation fenced since is left to the sweep of that one.
    pub(super) fn add(
        &self,
        stops: &Stops,
        shard: usize,
        generation: u32,
        items: Vec<Value>,
    ) -> Result<usize, StoreError> {
        let mut claimed = Vec::new();
        let mut items = items.into_iter();
        loop {
            let Some(first) = items.next() else { break };
            let mut next = |what| reply::required(items.next(), what);
            let id = reply::required(Some(first), "claimed id")?;
            let has_owner = next("claimed owner flag")?;
            let owner = next("claimed owner")?;
            let created = next("claimed creation")?;
            let ttl = next("claimed ttl")?;
            let call = next("claimed record")?;
            let attempt = next("claimed attempt")?;
            let attempts = next("claimed attempts")?;
            let (Some(id), Ok(call)) = (TaskId::parse(&id), RawValue::from_string(call)) else {
                tracing::warn!(task = id, "a claimed task's re-run record is unreadable");
                continue;
            };
            let created_at = Timestamp::from_millis(created.parse().unwrap_or(0));
            let ttl = ttl.parse().ok().map(Duration::from_nanos);
            let (stop, now) = stops.hold_in(id, shard);
            if now != generation {
                stops.release(id);
                continue;
            }
            stops.confirm(id, shard, ttl.map(|ttl| created_at.saturating_add(ttl)));
            claimed.push(Orphan {
                id,
                owner: (has_owner == "1").then_some(owner),
                created_at,
                ttl,
                rerun: Rerun {
                    call,
                    attempts: attempts.parse().unwrap_or(1),
                },
                attempt: attempt.parse().unwrap_or(2),
                stop,
            });
        }
        let count = claimed.len();
        if count > 0 {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(claimed);
            self.signal.notify_one();
        }
        Ok(count)
    }
}
