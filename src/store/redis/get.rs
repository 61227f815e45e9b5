//! `get`: one `HMGET` of the task hash, checked here, no script.
//!
//! A read costs Redis what a plain `GET` costs, and `tasks/get` is the call
//! clients repeat most. The scripts that change a task keep everything a
//! snapshot needs in its hash, the outstanding requests of an input round
//! included (field `q`, rendered by `require_input` and `answer_input`).

use redis::Value;

use super::{RedisTaskStore, backend, reply, scripts};
use crate::store::StoreError;
use crate::task::{TaskId, TaskSnapshot};

/// The fields read, in the order `reply::snapshot` takes them, then the
/// owner.
const FIELDS: [&str; 9] = ["s", "c", "u", "t", "p", "m", "r", "q", "w"];

impl RedisTaskStore {
    /// The task as `owner` may see it: `None` when it does not exist, has
    /// expired, or belongs to someone else (plain equality on the owner, as
    /// in `MemoryTaskStore`).
    pub(super) async fn read(
        &self,
        id: TaskId,
        owner: Option<&str>,
    ) -> Result<Option<TaskSnapshot>, StoreError> {
        let mut fields: Vec<Value> = redis::cmd("HMGET")
            .arg(self.inner.shards.of(owner).1.task(id))
            .arg(&FIELDS)
            .query_async(&mut self.conn())
            .await
            .map_err(backend)?;
        if fields.len() != FIELDS.len() {
            return Err(reply::corrupt("an HMGET reply of the wrong length"));
        }
        let stored_owner = reply::text(fields.pop().unwrap_or(Value::Nil))?;
        let status = reply::text(fields[0].clone())?;
        if status.is_none() || stored_owner.as_deref() != owner {
            return Ok(None);
        }
        if status.as_deref() == Some("input_required") && reply::is_absent(&fields[7]) {
            // A round opened by an instance that predates `q`.
            return self.read_by_script(id, owner).await;
        }
        reply::snapshot(id, fields).map(Some)
    }

    /// `get.lua`, which renders the requests from the round itself.
    async fn read_by_script(
        &self,
        id: TaskId,
        owner: Option<&str>,
    ) -> Result<Option<TaskSnapshot>, StoreError> {
        let keys = self.inner.shards.of(owner).1;
        let [has_owner, owner] = scripts::owner_args(owner);
        let mut call = scripts::GET.key(keys.task(id));
        call.key(keys.round(id)).arg(has_owner).arg(owner);
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        if reply::is_absent(&reply) {
            return Ok(None);
        }
        reply::snapshot(id, reply::items(reply)?).map(Some)
    }
}
