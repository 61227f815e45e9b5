//! `MemoryTaskStore` keeps the store contract.

mod contract;

use mcp_tasks::MemoryTaskStore;

#[tokio::test]
async fn the_memory_store_keeps_the_store_contract() {
    contract::run(|| async { MemoryTaskStore::new() }).await;
}
