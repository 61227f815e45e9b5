//! The store card's count, started by a count that does not end until the
//! test lets it: the overview never waits for it, one count runs at a time,
//! and a fresh count is kept until it is stale.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks::{MemoryTaskStore, NewTask, TaskId, TaskStore, TasksLayer, Timestamp};
use tokio::sync::Semaphore;

use super::{Counted, Overview, StoreKind, count};

fn task() -> NewTask {
    NewTask {
        id: TaskId::generate().expect("a task id"),
        owner: Some("alice".to_owned()),
        created_at: Timestamp::now(),
        ttl: Some(Duration::from_secs(600)),
        poll_interval: None,
        status_message: None,
        quota: Default::default(),
        rerun: None,
        tool: Some("job".to_owned()),
    }
}

/// The overview's counts over `admin`, each started (counted in
/// `started`) and then held until `gate` gives it a permit.
fn gated(
    overview: &Overview,
    started: &Arc<AtomicUsize>,
    gate: &Arc<Semaphore>,
) -> Option<Arc<Counted>> {
    let (admin, started, gate) = (overview.admin.clone(), started.clone(), gate.clone());
    overview.counted_by(move || {
        started.fetch_add(1, Ordering::SeqCst);
        async move {
            let _permit = gate.acquire().await.expect("the gate stays open");
            count(&admin).await
        }
    })
}

#[tokio::test]
async fn the_overview_never_waits_for_a_count_and_counts_once_at_a_time() {
    let (counts, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Semaphore::new(0)));
    let store = MemoryTaskStore::new();
    store.create(task()).await.unwrap();
    store.create(task()).await.unwrap();
    let overview = Overview::new(
        TasksLayer::new(store).admin(),
        StoreKind::Memory,
        None,
        None,
    );

    // The count hangs; every overview answers at once, without one.
    for _ in 0..3 {
        assert!(
            gated(&overview, &counts, &gate).is_none(),
            "no count has ended yet"
        );
    }
    tokio::task::yield_now().await;
    assert_eq!(counts.load(Ordering::SeqCst), 1, "one count at a time");

    gate.add_permits(1);
    let counted = loop {
        if let Some(counted) = gated(&overview, &counts, &gate) {
            break counted;
        }
        // The spawned count runs on this test's runtime: let it.
        tokio::task::yield_now().await;
    };
    assert!(counted.reachable);
    assert_eq!(counted.total, 2);
    assert_eq!(counted.counts["working"], 2);
    // Fresh: read again without counting again.
    assert_eq!(gated(&overview, &counts, &gate).expect("kept").total, 2);
    assert_eq!(counts.load(Ordering::SeqCst), 1, "not stale yet");
}
