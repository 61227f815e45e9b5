//! `MemoryTaskStore` keeps the store contract.

use crate::contract;

use std::sync::Arc;

use mcp_tasks::{MemoryTaskStore, NewTask, Quota, StoreError, TaskId, TaskStore, Timestamp};
use tokio::sync::Barrier;

#[tokio::test]
async fn the_memory_store_keeps_the_store_contract() {
    contract::run(|| async { MemoryTaskStore::new() }).await;
}

#[tokio::test]
async fn the_memory_store_announces_its_changes() {
    contract::changes::run(|| async { MemoryTaskStore::new() }).await;
}

#[tokio::test]
async fn the_memory_store_keeps_the_operators_contract() {
    contract::admin::run(|| async { MemoryTaskStore::new() }).await;
}

#[tokio::test]
async fn the_memory_store_keeps_the_events_contract() {
    contract::events::run(|| async { MemoryTaskStore::new() }).await;
}

/// The contract runs on one thread, where a create of this store never
/// interleaves with another; here creates race on several threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_racing_on_several_threads_never_overshoot_a_quota() {
    let store = MemoryTaskStore::new();
    let quota = Quota {
        per_owner: Some(10),
        total: Some(15),
    };
    let start = Arc::new(Barrier::new(100));
    let creates: Vec<_> = (0..100)
        .map(|i| {
            let (store, start) = (store.clone(), start.clone());
            let owner = if i % 2 == 0 { "alice" } else { "bob" };
            tokio::spawn(async move {
                let task = NewTask {
                    id: TaskId::generate().unwrap(),
                    owner: Some(owner.to_owned()),
                    created_at: Timestamp::now(),
                    ttl: None,
                    poll_interval: None,
                    status_message: None,
                    quota,
                    tool: None,
                    rerun: None,
                };
                start.wait().await;
                match store.create(task).await {
                    Ok(_) => true,
                    Err(StoreError::QuotaExceeded(_)) => false,
                    Err(other) => panic!("a refusal is QuotaExceeded, got {other:?}"),
                }
            })
        })
        .collect();
    let mut admitted = 0;
    for create in creates {
        admitted += usize::from(create.await.unwrap());
    }
    assert_eq!(admitted, 15, "the total cap holds exactly");
    for owner in ["alice", "bob"] {
        let held = store
            .list(Some(owner), None, 100)
            .await
            .unwrap()
            .tasks
            .len();
        assert!(held <= 10, "{owner} holds {held}, past the per-owner cap");
    }
    assert_eq!(store.len(), 15, "refused tasks are not stored");
}
