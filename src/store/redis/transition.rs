//! The scripts that move a task's status from this instance: `complete`,
//! `fail`, `cancel`, a status message and a request for input. Each is one
//! Lua script (see the module docs, "Atomicity"), and each fires the local
//! stop signal once its answer says the work is over.
//!
//! | Answer of the script                       | Stop signal | Why                                                  |
//! |--------------------------------------------|-------------|------------------------------------------------------|
//! | `complete` / `fail` written                | fired       | the work is over; firing frees the entry             |
//! | any write: the task gone or terminal       | fired       | nobody will announce it again                        |
//! | `cancel`: cancelled now or terminal before | fired       | the work is over either way, before the call returns |
//! | a status message or an input round written | kept        | the work goes on                                     |

use redis::Value;
use serde_json::value::RawValue;

use super::{RedisTaskStore, backend, now_text, reply, scripts};
use crate::store::{CancelOutcome, InputRound, StoreError};
use crate::task::{TaskId, TaskStatus};

/// Whether a write's answer means the task is over: gone, or terminal.
fn ended(result: &Result<(), StoreError>) -> bool {
    match result {
        Err(StoreError::NotFound) => true,
        Err(StoreError::InvalidTransition { from, .. }) => from.is_terminal(),
        _ => false,
    }
}

impl RedisTaskStore {
    /// `cancel` under the script's owner arguments (`ANY_OWNER` for the
    /// operator's).
    pub(super) async fn cancel_as(
        &self,
        id: TaskId,
        shard: usize,
        [has_owner, owner]: [&str; 2],
    ) -> Result<Option<CancelOutcome>, StoreError> {
        let keys = self.inner.shards.get(shard);
        let mut call = scripts::CANCEL.key(keys.task(id));
        call.key(keys.round(id))
            .arg(has_owner)
            .arg(owner)
            .arg(now_text())
            .arg(keys.channel())
            .arg(id.to_string())
            .arg(keys.driving_head());
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        if reply::is_absent(&reply) {
            return Ok(None);
        }
        let mut items = reply::items(reply)?.into_iter();
        let tag = reply::required(items.next(), "cancel tag")?;
        let snapshot = reply::snapshot(id, items)?;
        // Cancelled now or terminal before: the work is over either way,
        // and the local token fires before this call returns.
        self.inner.stops.fire(id);
        match tag.as_str() {
            "cancelled" => Ok(Some(CancelOutcome::Cancelled(snapshot))),
            "terminal" => Ok(Some(CancelOutcome::AlreadyTerminal(snapshot))),
            _ => Err(reply::corrupt("an unknown cancel tag")),
        }
    }

    /// `complete` and `fail`: one script, announcing the end.
    pub(super) async fn finish(
        &self,
        id: TaskId,
        to: TaskStatus,
        payload: Box<RawValue>,
    ) -> Result<(), StoreError> {
        let keys = self.inner.shards.get(self.locate(id).await?);
        let mut call = scripts::FINISH.key(keys.task(id));
        call.key(keys.round(id))
            .arg(to.as_str())
            .arg(payload.get())
            .arg(now_text())
            .arg(keys.channel())
            .arg(id.to_string())
            .arg(keys.driving_head());
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let result = reply::written(reply, |_| to);
        if result.is_ok() || ended(&result) {
            self.inner.stops.fire(id);
        }
        result
    }

    /// `set_status_message`: refused once the task is terminal.
    pub(super) async fn set_message(&self, id: TaskId, message: String) -> Result<(), StoreError> {
        let keys = self.inner.shards.get(self.locate(id).await?);
        let mut call = scripts::SET_MESSAGE.key(keys.task(id));
        call.arg(message)
            .arg(now_text())
            .arg(keys.changed())
            .arg(id.to_string());
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let result = reply::written(reply, |from| from);
        if ended(&result) {
            self.inner.stops.fire(id);
        }
        result
    }

    /// `require_input`: the round's requests in order, the resume context.
    pub(super) async fn ask_input(&self, id: TaskId, round: InputRound) -> Result<(), StoreError> {
        let keys = self.inner.shards.get(self.locate(id).await?);
        let mut call = scripts::REQUIRE_INPUT.key(keys.task(id));
        call.key(keys.round(id))
            .arg(now_text())
            .arg(round.resume.get())
            .arg(id.to_string())
            .arg(keys.driving_head())
            .arg(keys.changed());
        for (key, request) in &round.requests {
            call.arg(key.as_str()).arg(request.get());
        }
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let result = reply::written(reply, |_| TaskStatus::InputRequired);
        if ended(&result) {
            self.inner.stops.fire(id);
        }
        result
    }
}
