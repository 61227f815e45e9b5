//! Filling a store with tasks for the benchmarks.
#![allow(dead_code)] // each bench binary uses part of it

use std::time::Duration;

use mcp_tasks::{MemoryTaskStore, NewTask, Quota, TaskId, TaskStore, Timestamp};

/// Creates `count` working tasks of `owner` (TTL one hour, poll 1 s) in
/// `store`; returns the id of the last one.
pub async fn fill(store: &MemoryTaskStore, owner: Option<&str>, count: usize) -> TaskId {
    let mut last = None;
    for _ in 0..count {
        let id = TaskId::generate().expect("random");
        let task = NewTask {
            id,
            owner: owner.map(str::to_owned),
            created_at: Timestamp::now(),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Some(Duration::from_secs(1)),
            status_message: None,
            quota: Quota::default(),
            tool: None,
            rerun: None,
        };
        store.create(task).await.expect("create");
        last = Some(id);
    }
    last.expect("count is at least one")
}
