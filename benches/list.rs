//! Cost of listing one owner's tasks (`TaskStore::list`) in
//! `MemoryTaskStore`, against the size of the store.
//!
//! Run: `cargo bench --bench list`. Two stores, built once per process:
//!
//! - **1M**: 1,000,000 tasks; 10,000 belong to the listed owner, the other
//!   990,000 to 990 other owners (1,000 each), all created interleaved so
//!   that the owner's tasks are spread over the whole store;
//! - **10k**: only the owner's 10,000 tasks.
//!
//! Each measures the first page (`list(owner, None, 100)`), a page from the
//! middle (after the owner's 5,000th task, by cursor) and, for reference,
//! one `get`. Listing costs O(log n + page): the two stores should measure
//! alike.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use mcp_tasks::{MemoryTaskStore, NewTask, Quota, TaskId, TaskStore, Timestamp};

const OWNER: &str = "owner-0";
const OWNED: usize = 10_000;
const OTHERS: usize = 990;
const PAGE: usize = 100;

/// A store with the owner's `OWNED` tasks and `OTHERS` × `OWNED / 10` tasks
/// of other owners; returns it with the id of the owner's middle task.
fn build(others: usize) -> (MemoryTaskStore, TaskId) {
    let store = MemoryTaskStore::new();
    let base = Timestamp::now().as_millis() - 10_000_000;
    let per_other = OWNED / 10;
    let total = OWNED + others * per_other;
    let names: Vec<String> = (0..=others).map(|n| format!("owner-{n}")).collect();
    let every = total / OWNED;
    let mut middle = None;
    let mut owned = 0;
    for n in 0..total {
        // Every `every`th task is the owner's, the rest round-robin.
        let owner = if n % every == 0 {
            owned += 1;
            &names[0]
        } else {
            &names[1 + (n - owned) % others]
        };
        let id = TaskId::generate().expect("random id");
        if owner == OWNER && owned == OWNED / 2 {
            middle = Some(id);
        }
        let task = NewTask {
            id,
            owner: Some(owner.clone()),
            // A few tasks per millisecond, as under load.
            created_at: Timestamp::from_millis(base + (n / 4) as u64),
            ttl: None,
            poll_interval: Some(Duration::from_secs(1)),
            status_message: None,
            quota: Quota::default(),
            tool: None,
            rerun: None,
        };
        store
            .create(task)
            .now_or_never()
            .expect("the memory store answers at once")
            .expect("create");
    }
    assert_eq!(owned, OWNED);
    assert_eq!(store.len(), total);
    (store, middle.expect("a middle task"))
}

/// The `next_cursor` after the owner's first `OWNED / 2` tasks.
fn middle_cursor(store: &MemoryTaskStore) -> String {
    let mut cursor: Option<String> = None;
    for _ in 0..OWNED / 2 / PAGE {
        let page = list(store, cursor.as_deref());
        assert_eq!(page.tasks.len(), PAGE);
        cursor = page.next_cursor;
    }
    cursor.expect("a cursor in the middle")
}

fn list(store: &MemoryTaskStore, cursor: Option<&str>) -> mcp_tasks::TaskList {
    store
        .list(Some(OWNER), cursor, PAGE)
        .now_or_never()
        .expect("the memory store answers at once")
        .expect("list")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("list");
    for (label, others) in [("1M", OTHERS), ("10k", 0)] {
        let started = std::time::Instant::now();
        let (store, middle) = build(others);
        eprintln!(
            "{label}: {} tasks built in {:.1?}",
            store.len(),
            started.elapsed()
        );
        let cursor = middle_cursor(&store);
        group.bench_function(BenchmarkId::new("first_page_100", label), |b| {
            b.iter(|| {
                let page = list(&store, None);
                assert_eq!(page.tasks.len(), PAGE);
                page
            })
        });
        group.bench_function(BenchmarkId::new("middle_page_100", label), |b| {
            b.iter(|| {
                let page = list(&store, Some(&cursor));
                assert_eq!(page.tasks.len(), PAGE);
                page
            })
        });
        group.bench_function(BenchmarkId::new("get", label), |b| {
            b.iter(|| {
                store
                    .get(middle, Some(OWNER))
                    .now_or_never()
                    .expect("the memory store answers at once")
                    .expect("get")
                    .expect("found")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
