//! `create`: the task in its owner's shard, and with several shards the
//! total quota by reservation.
//!
//! With one shard, `create.lua` checks both caps and writes the task in one
//! step. With several, the tasks of all owners are in different slots, so
//! the total cap is kept in `{<prefix>}:reserved` (a sorted set of the ids
//! created under a quota, scored by deadline, like a live set): a
//! reservation there comes first, then the shard's script, which checks the
//! per-owner cap and writes the task; a refusal (or a create given up before
//! its write answers) then gives the place back. What this weakens,
//! precisely: a refused create holds its place for one round trip (a
//! concurrent create may be refused meanwhile); a write that errored keeps
//! its place until the task's deadline (the script may have run), as does a
//! crash between the two steps;
//! reservations expire by the clock of the node that holds them, and when
//! both caps are full the per-owner refusal is told from the owner's live
//! set at this instance's clock.

use redis::Script;
use std::sync::LazyLock;

use super::doubts::Write;
use super::interest::SUBSCRIBE_WAIT;
use super::scripts::{self, Keys, cap_arg, owner_args};
use super::{MAX_DEADLINE_MS, RedisTaskStore, backend, reply};
use crate::store::{CreatedTask, NewTask, Quota, QuotaScope, StoreError};
use crate::task::{TaskId, Timestamp};

/// Takes a place under the total cap. KEYS: the reservations. ARGV: cap or
/// `''` (the task is counted, whatever the cap), id, deadline ms or `+inf`.
/// Replies 1 when taken, 0 when the cap is full.
static RESERVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local time = redis.call('TIME')
local now = time[1] .. string.format('%03d', math.floor(tonumber(time[2]) / 1000))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[1] ~= '' and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
",
    )
});

impl RedisTaskStore {
    /// [`TaskStore::create`](crate::TaskStore::create).
    pub(super) async fn create_task(&self, task: NewTask) -> Result<CreatedTask, StoreError> {
        let id = task.id;
        let deadline = task
            .ttl
            .map(|ttl| task.created_at.saturating_add(ttl))
            .filter(|at| at.as_millis() <= MAX_DEADLINE_MS);
        let owner = task.owner.as_deref();
        let shards = &self.inner.shards;
        let (shard, keys) = shards.of(owner);
        let mut quota = task.quota;
        // Every task created under a quota counts in the total, as in one
        // shard's live set, whether or not this create has a total cap.
        let mut reserved = None;
        let doubts = &self.inner.doubts;
        if shards.count() > 1 && quota != Quota::default() {
            if let Err(error) = self.reserve(quota.total, &task, deadline).await {
                if let StoreError::Backend(_) = error {
                    // The place may be taken: given back once the doubt is
                    // settled (the task never appears).
                    doubts.note(id, Write::Create);
                }
                return Err(error);
            }
            reserved = Some(Reserved {
                store: self.clone(),
                id,
                armed: true,
            });
            // The shard checks only the owner's cap (and still counts the
            // task in the owner's live set without one); the place is taken.
            quota.total = None;
            quota.per_owner = quota.per_owner.or(Some(u32::MAX));
        }
        // Held before the write: an announcement may overtake the reply.
        // Released if this call is given up before it answers.
        let (stop, holding, generation) = self.inner.stops.holding(id, shard);
        let call = self.create_call(keys, &task, deadline, quota, generation);
        let holding = holding.doubting(doubts, Write::Create);
        // The shard's channels are heard before anyone can end the task.
        self.inner
            .stops
            .interest
            .subscribed(shard, SUBSCRIBE_WAIT)
            .await;
        let written = call.invoke_async::<i64>(&mut self.conn()).await;
        // An error releases the token and notes the create in doubt.
        holding.answered(&written);
        let refused = match written {
            Ok(1) => None,
            Ok(refusal) => {
                self.inner.stops.release(id);
                Some(match refusal {
                    0 => StoreError::backend("task id collision"),
                    -1 => StoreError::QuotaExceeded(QuotaScope::Owner),
                    -2 => StoreError::QuotaExceeded(QuotaScope::Total),
                    _ => reply::corrupt("an unknown create reply"),
                })
            }
            Err(error) => {
                // The script may have run: the place stays taken rather than
                // letting the cap undercount, and the task is looked for
                // (deleted if it appears, its place given back if not).
                if let Some(reserved) = reserved.take() {
                    reserved.keep();
                }
                Some(backend(error))
            }
        };
        if let Some(error) = refused {
            if let Some(reserved) = reserved {
                reserved.give_back().await;
            }
            return Err(error);
        }
        if let Some(reserved) = reserved {
            reserved.keep();
        }
        self.inner.stops.confirm(id, shard, deadline);
        let snapshot = task.into_working();
        Ok(CreatedTask { snapshot, stop })
    }

    /// `create.lua` for `task` in the shard of `keys`, under `quota`, driven
    /// by this instance's id of `generation` there.
    fn create_call(
        &self,
        keys: &Keys,
        task: &NewTask,
        deadline: Option<Timestamp>,
        quota: Quota,
        generation: u32,
    ) -> redis::ScriptInvocation<'static> {
        let id = task.id;
        let owner = task.owner.as_deref();
        let [has_owner, owner_text] = owner_args(owner);
        let lease = &self.inner.lease;
        let driver = lease.id_in(generation);
        let mut call = scripts::CREATE.key(keys.task(id));
        call.key(keys.index(owner))
            .key(keys.driving(&driver))
            .key(keys.instance(&driver))
            .key(keys.instances())
            .key(keys.all())
            .arg(has_owner)
            .arg(owner_text)
            .arg(task.created_at.as_millis())
            .arg(
                deadline
                    .map(|at| at.as_millis().to_string())
                    .unwrap_or_default(),
            )
            .arg(task.ttl.map(reply::nanos_text).unwrap_or_default())
            .arg(
                task.poll_interval
                    .map(reply::nanos_text)
                    .unwrap_or_default(),
            )
            .arg(if task.status_message.is_some() {
                "1"
            } else {
                "0"
            })
            .arg(task.status_message.as_deref().unwrap_or_default())
            .arg(id.to_string())
            .arg(keys.task_head())
            .arg(&*driver)
            .arg(lease.millis())
            .arg(cap_arg(quota.per_owner))
            .arg(cap_arg(quota.total))
            .arg(task.rerun.as_ref().map_or("", |rerun| rerun.call.get()))
            .arg(task.rerun.as_ref().map_or(1, |rerun| rerun.attempts.max(1)))
            .arg(if task.tool.is_some() { "1" } else { "0" })
            .arg(task.tool.as_deref().unwrap_or_default())
            .arg(keys.changed());
        if quota != Quota::default() {
            call.key(keys.live(owner)).key(keys.live_all());
        }
        call
    }

    /// Takes a place under the total cap for `task`, or refuses: with the
    /// owner's scope when the owner's own cap is full too (the per-owner
    /// refusal is reported first, as with one shard).
    async fn reserve(
        &self,
        cap: Option<u32>,
        task: &NewTask,
        deadline: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let score = deadline.map_or_else(|| "+inf".to_owned(), |at| at.as_millis().to_string());
        let mut call = RESERVE.key(self.inner.shards.home().reserved());
        call.arg(cap_arg(cap)).arg(task.id.to_string()).arg(score);
        let taken: i64 = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        if taken == 1 {
            return Ok(());
        }
        let owner = task.owner.as_deref();
        if let Some(per_owner) = task.quota.per_owner {
            let live = self.inner.shards.of(owner).1.live(owner);
            let now = Timestamp::now().as_millis();
            let held: u64 = redis::cmd("ZCOUNT")
                .arg(live)
                .arg(format!("({now}"))
                .arg("+inf")
                .query_async(&mut self.conn())
                .await
                .map_err(backend)?;
            if held >= u64::from(per_owner) {
                return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
            }
        }
        Err(StoreError::QuotaExceeded(QuotaScope::Total))
    }

    /// Gives back the place of a task that was not created (or was deleted).
    /// Best effort: a place that stays taken is freed at the deadline.
    pub(super) async fn unreserve(&self, id: TaskId) {
        let key = self.inner.shards.home().reserved();
        let freed = redis::cmd("ZREM")
            .arg(key)
            .arg(id.to_string())
            .query_async::<i64>(&mut self.conn())
            .await;
        if let Err(error) = freed {
            tracing::warn!(%error, %id, "task store: a quota reservation was not given back");
        }
    }
}

/// A place taken under the total cap for a create that has not answered:
/// given back if the create is refused, or given up on (dropped) before it
/// answers; kept once the task exists (or may).
struct Reserved {
    store: RedisTaskStore,
    id: TaskId,
    armed: bool,
}

impl Reserved {
    /// The task took (or may have taken) the place.
    fn keep(mut self) {
        self.armed = false;
    }

    /// The create was refused: the place is free again.
    async fn give_back(mut self) {
        self.armed = false;
        self.store.unreserve(self.id).await;
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Given up half way: give the place back in the background.
        let (store, id) = (self.store.clone(), self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { store.unreserve(id).await });
        }
    }
}
