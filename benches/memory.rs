//! Memory per parked task, two ways: live heap bytes (a counting global
//! allocator) and resident set growth (`/proc/self/statm`, after returning
//! freed pages to the OS with `malloc_trim`).
//!
//! Run: `cargo bench --bench memory`. Prints, per task, for
//! (a) 100k tasks created directly in `MemoryTaskStore`,
//! (b) 100k `tools/call`s parked through `TasksLayer` whose inner calls are
//!     still running (store entry + background driver + pending inner call),
//! (c) the same 100k inner calls pending without the layer, to subtract:
//!     (b) − (c) is what the layer itself holds per parked task.
//!
//! Then, for (b) and (c), the live allocations that grew by about one per
//! task or more, by size class: (b)'s classes that (c) lacks are the
//! layer's, and a change that grows one shows which allocation it grew.

#[path = "support/counting.rs"]
mod counting;
#[path = "support/inner.rs"]
mod inner;

use std::sync::atomic::Ordering;
use std::time::Duration;

use http_body_util::BodyExt;
use mcp_tasks::{MemoryTaskStore, NewTask, Quota, TaskId, TaskStore, TasksLayer, Timestamp};
use tower::{Layer, ServiceExt};

const TASKS: usize = 100_000;

/// Live heap bytes and resident bytes at one moment, and the live
/// allocations by size class.
#[derive(Clone)]
struct Reading {
    heap: isize,
    resident: isize,
    classes: Vec<isize>,
}

fn read() -> Reading {
    // Give freed pages back so that the resident set shows live memory, not
    // the allocator's high-water mark.
    unsafe { libc::malloc_trim(0) };
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: isize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("rss");
    Reading {
        heap: counting::LIVE.load(Ordering::Relaxed),
        resident: pages * 4096,
        classes: counting::by_size(),
    }
}

/// Per-task growth between two readings.
fn per_task(before: Reading, after: Reading) -> Reading {
    let classes = (after.classes.iter().zip(&before.classes))
        .map(|(a, b)| a - b)
        .collect();
    Reading {
        heap: (after.heap - before.heap) / TASKS as isize,
        resident: (after.resident - before.resident) / TASKS as isize,
        classes,
    }
}

/// The size classes that grew by at least half an allocation per task, as
/// `allocations per task × up to N bytes`.
fn breakdown(r: &Reading) -> String {
    let per = TASKS as f64;
    let rows: Vec<String> = (r.classes.iter().enumerate())
        .filter(|(_, grew)| **grew as f64 >= per / 2.0)
        .map(|(i, grew)| {
            format!(
                "{:.1} x <={} B",
                *grew as f64 / per,
                counting::class_bytes(i)
            )
        })
        .collect();
    rows.join(", ")
}

/// Lets every spawned task run until it waits: a sleep parks the runtime,
/// which first polls everything that is ready (a few `yield_now`s would
/// leave most of 100k freshly spawned tasks unpolled).
async fn settle() {
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn store_only() -> Reading {
    let store = MemoryTaskStore::new();
    let before = read();
    for _ in 0..TASKS {
        let task = NewTask {
            id: TaskId::generate().expect("random"),
            owner: Some("user-0001".to_owned()),
            created_at: Timestamp::now(),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Some(Duration::from_secs(1)),
            status_message: None,
            quota: Quota::default(),
            tool: None,
            rerun: None,
        };
        store.create(task).await.expect("create");
    }
    settle().await;
    let after = read();
    assert_eq!(store.len(), TASKS);
    per_task(before, after)
}

fn call(id: usize) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let params = r#""name":"job","arguments":{}"#;
    inner::request(id as u64, "tools/call", params, Some("job"), true)
}

async fn parked_through_layer() -> Reading {
    let store = MemoryTaskStore::new();
    // A zero threshold parks each call at once; its driver then starts the
    // inner call, which never answers.
    // The caps (10 000 live tasks, 1 000 running) lifted: over them a call
    // stays synchronous, and this inner call never answers.
    let layered = TasksLayer::new(store.clone())
        .threshold(Duration::ZERO)
        .max_tasks(None)
        .max_tasks_per_principal(None)
        .max_running(TASKS)
        .layer(inner::Inner {
            answers: inner::Answers::Never,
        });
    let before = read();
    for id in 0..TASKS {
        let response = layered.clone().oneshot(call(id)).await.expect("call");
        let body = response.into_body().collect().await.expect("body");
        assert!(body.to_bytes().starts_with(br#"{"jsonrpc":"2.0","id":"#));
    }
    settle().await;
    let after = read();
    assert_eq!(store.len(), TASKS);
    for id in store.ids() {
        let task = store.get(id, None).await.expect("store").expect("task");
        assert_eq!(
            task.status(),
            mcp_tasks::TaskStatus::Working,
            "every call is still parked"
        );
    }
    per_task(before, after)
}

async fn pending_without_layer() -> Reading {
    let before = read();
    let mut calls = Vec::with_capacity(TASKS);
    for id in 0..TASKS {
        let service = inner::Inner {
            answers: inner::Answers::Never,
        };
        calls.push(tokio::spawn(service.oneshot(call(id))));
    }
    settle().await;
    let after = read();
    for call in &calls {
        call.abort();
    }
    per_task(before, after)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = rt.block_on(store_only());
    let parked = rt.block_on(parked_through_layer());
    let bare = rt.block_on(pending_without_layer());
    let line = |name: &str, r: &Reading, what: &str| {
        println!(
            "{name}: {} heap bytes, {} resident bytes per task ({what})",
            r.heap, r.resident
        );
    };
    line(
        "memory_store_entry",
        &store,
        "100k tasks in MemoryTaskStore",
    );
    line(
        "parked_through_layer",
        &parked,
        "100k parked calls: store entry + driver + pending inner call",
    );
    line(
        "pending_without_layer",
        &bare,
        "100k pending inner calls, no layer",
    );
    let share = Reading {
        heap: parked.heap - bare.heap,
        resident: parked.resident - bare.resident,
        classes: Vec::new(),
    };
    println!("parked_through_layer allocations: {}", breakdown(&parked));
    println!("pending_without_layer allocations: {}", breakdown(&bare));
    line(
        "layer_share",
        &share,
        "parked_through_layer - pending_without_layer",
    );
}
