//! The store card's count over a store whose count does not end until the
//! test lets it: the overview never waits for it, one count runs at a time,
//! and a fresh count is kept until it is stale.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks::store::{
    AdminPage, CancelOutcome, CreatedTask, InputProgress, StoreFuture, TaskCounts, TaskList,
};
use mcp_tasks::{
    InputRound, MemoryTaskStore, NewTask, TaskId, TaskSnapshot, TaskStore, TasksLayer, Timestamp,
};
use serde_json::value::RawValue;
use tokio::sync::Semaphore;

use super::{Overview, StoreKind};

/// A memory store whose counts each wait for a permit of `gate`.
struct Stalled {
    inner: MemoryTaskStore,
    counts: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

impl TaskStore for Stalled {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        self.inner.create(task)
    }
    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        self.inner.get(id, owner)
    }
    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        self.inner.set_status_message(id, message)
    }
    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        self.inner.complete(id, result)
    }
    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        self.inner.fail(id, error)
    }
    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        self.inner.cancel(id, owner)
    }
    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        self.inner.require_input(id, round)
    }
    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        self.inner.answer_input(id, owner, answers)
    }
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        self.inner.list(owner, cursor, limit)
    }
    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        self.inner.admin_list(cursor, limit)
    }
    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        self.counts.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let _permit = self.gate.acquire().await.expect("the gate stays open");
            self.inner.admin_counts().await
        })
    }
}

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

#[tokio::test]
async fn the_overview_never_waits_for_a_count_and_counts_once_at_a_time() {
    let (counts, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Semaphore::new(0)));
    let store = Stalled {
        inner: MemoryTaskStore::new(),
        counts: counts.clone(),
        gate: gate.clone(),
    };
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
        assert!(overview.counted().is_none(), "no count has ended yet");
    }
    tokio::task::yield_now().await;
    assert_eq!(counts.load(Ordering::SeqCst), 1, "one count at a time");

    gate.add_permits(1);
    let counted = first_count(&overview).await;
    assert!(counted.reachable);
    assert_eq!(counted.total, 2);
    assert_eq!(counted.counts["working"], 2);
    // Fresh: read again without counting again.
    assert_eq!(overview.counted().expect("kept").total, 2);
    assert_eq!(counts.load(Ordering::SeqCst), 1, "not stale yet");
}

/// The first count that ends, once the task counting has run.
async fn first_count(overview: &Overview) -> Arc<super::Counted> {
    loop {
        if let Some(counted) = overview.counted() {
            return counted;
        }
        // The spawned count runs on this test's runtime: let it.
        tokio::task::yield_now().await;
    }
}
