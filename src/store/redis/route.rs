//! Which shard holds a task when the call names no owner.
//!
//! The calls that carry an owner (`get`, `cancel`, `answer_input`, `list`)
//! go straight to the owner's shard. The driver's calls (`complete`,
//! `fail`, `set_status_message`, `require_input`) and the operator's carry
//! only the id: the instance that drives a task holds its stop signal,
//! which remembers the shard; any other call asks every shard at once
//! whether the task is there (one `EXISTS` each, sent concurrently).

use futures_util::future::try_join_all;

use super::{RedisTaskStore, backend};
use crate::store::StoreError;
use crate::task::TaskId;

impl RedisTaskStore {
    /// The shard that holds task `id`; shard 0 when none does (the scripts
    /// then find no task there, as they would anywhere).
    pub(super) async fn locate(&self, id: TaskId) -> Result<usize, StoreError> {
        let shards = &self.inner.shards;
        if shards.count() == 1 {
            return Ok(0);
        }
        if let Some(shard) = self.inner.stops.shard_of(id) {
            return Ok(shard);
        }
        let probes = shards.all().map(|(index, keys)| {
            let mut conn = self.conn();
            let key = keys.task(id);
            async move {
                let found: bool = redis::cmd("EXISTS").arg(key).query_async(&mut conn).await?;
                Ok::<_, redis::RedisError>((index, found))
            }
        });
        let found = try_join_all(probes).await.map_err(backend)?;
        Ok(found
            .into_iter()
            .find_map(|(index, found)| found.then_some(index))
            .unwrap_or(0))
    }
}
