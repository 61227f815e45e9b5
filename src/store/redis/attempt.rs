//! A run counted for a task whose call broke off while this instance ran
//! it ([`TaskStore::count_attempt`](crate::TaskStore::count_attempt)):
//! `lua/count_attempt.lua` counts it in the task's re-run record (`at` of
//! `am`) in one atomic step, so that a run this instance starts again and
//! one another instance starts after a crash share one count.

use redis::Value;

use super::{RedisTaskStore, backend, now_text, scripts};
use crate::store::StoreError;
use crate::task::TaskId;

impl RedisTaskStore {
    /// [`TaskStore::count_attempt`](crate::TaskStore::count_attempt).
    pub(super) async fn count_attempt_task(
        &self,
        id: TaskId,
        why: String,
    ) -> Result<Option<(u32, u32)>, StoreError> {
        let keys = self.inner.shards.get(self.locate(id).await?);
        let mut call = scripts::COUNT_ATTEMPT.key(keys.task(id));
        call.arg(now_text())
            .arg(why)
            .arg(keys.changed())
            .arg(id.to_string());
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        let counted: Option<(u32, u32)> = redis::from_redis_value(reply)
            .map_err(|error| StoreError::backend(format!("a count_attempt reply: {error}")))?;
        Ok(counted)
    }
}
