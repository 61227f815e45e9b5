//! The operator's view over a served layer: two principals' parked calls
//! counted and listed across owners (with the tool each called), one
//! cancelled and one deleted without its owner's credentials, what each
//! owner then reads, and what the metrics recorded (terminal counts by
//! status, the live gauge). Then the operator's watch: any owner's change
//! heard and read again, a watch fallen behind told so, a watch ending
//! with its store.
//!
//! The recorder is local to this thread; the test builds a current-thread
//! runtime inside it, so the layer's background tasks record here too.

use crate::support;

use mcp_tasks::observe::metrics as m;
use mcp_tasks::{
    Admin, AdminWatch, CancelOutcome, MemoryTaskStore, NewTask, Quota, TaskChange, TaskId,
    TaskStatus, TaskStore, TasksLayer, Timestamp,
};
use serde_json::{Value, json};
use support::layered::{Layered, USER_HEADER, error_of, get_as, ms, send, task_id};
use support::recorded::{counter, gauge, record};
use support::wait::{BOUND, wait_until};

/// A 30 s `slow_compute` parked as `user`; its task id.
async fn park_as(layered: &Layered, id: u64, user: &str) -> String {
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 30}});
    let created = send(
        &layered.client(),
        id,
        "tools/call",
        call,
        true,
        &[(USER_HEADER, user)],
    )
    .await;
    task_id(&created.into_response())
}

async fn status_as(layered: &Layered, id: u64, task: &str, user: &str) -> Value {
    get_as(&layered.client(), id, task, Some(user))
        .await
        .into_response()
}

/// Runs the scenario; returns nothing, asserts on the way.
async fn scenario() {
    let mut admin: Option<Admin> = None;
    let mut drain = None;
    let layered = Layered::start_over(MemoryTaskStore::new(), |layer| {
        admin = Some(layer.admin());
        drain = Some(layer.drain());
        layer.threshold(ms(100))
    })
    .await;
    let admin = admin.expect("the layer was configured");
    let drain = drain.expect("the layer was configured");

    let alice = park_as(&layered, 1, "alice").await;
    let bob = park_as(&layered, 2, "bob").await;

    let counts = admin.counts().await.unwrap();
    assert_eq!(counts.owner(Some("alice")).working, 1, "{counts:?}");
    assert_eq!(counts.owner(Some("bob")).working, 1, "{counts:?}");
    assert_eq!(counts.total(), 2);
    let page = admin.list(None, 10).await.unwrap();
    let listed: Vec<(String, Option<String>, Option<&str>)> = page
        .tasks
        .iter()
        .map(|t| {
            (
                t.snapshot.id.to_string(),
                t.owner.clone(),
                t.tool.as_deref(),
            )
        })
        .collect();
    let tool = Some("slow_compute");
    assert_eq!(
        listed,
        vec![
            (alice.clone(), Some("alice".to_owned()), tool),
            (bob.clone(), Some("bob".to_owned()), tool)
        ],
        "every owner's tasks, oldest first, with the tool each called"
    );

    // Bob's task, cancelled by the operator: bob reads `cancelled`.
    let bob_id = TaskId::parse(&bob).unwrap();
    let cancelled = admin.cancel(bob_id).await.unwrap();
    assert!(
        matches!(cancelled, Some(CancelOutcome::Cancelled(_))),
        "{cancelled:?}"
    );
    let read = status_as(&layered, 3, &bob, "bob").await;
    assert_eq!(read["result"]["status"], "cancelled", "{read}");

    // Alice's task, deleted: alice no longer finds it.
    let alice_id = TaskId::parse(&alice).unwrap();
    let removed = admin.delete(alice_id).await.unwrap().expect("found");
    assert_eq!(removed.snapshot.status(), TaskStatus::Working);
    let read = status_as(&layered, 4, &alice, "alice").await;
    error_of(&read, -32602);
    assert!(admin.delete(alice_id).await.unwrap().is_none());

    let live = admin.record_live().await.unwrap();
    assert_eq!(live.total(), 1, "only bob's cancelled task is left");
    // Both drivers drop their calls (and leave the running gauge) as they end.
    wait_until("both drivers end", BOUND, || async { drain.running() == 0 }).await;
}

#[test]
fn the_operator_counts_lists_cancels_and_deletes_across_owners() {
    let readings = record(scenario());
    assert_eq!(counter(&readings, m::TERMINAL, "status=cancelled"), 1);
    assert_eq!(counter(&readings, m::TERMINAL, "status=deleted"), 1);
    assert_eq!(gauge(&readings, m::LIVE, "status=cancelled"), Some(1.0));
    assert_eq!(gauge(&readings, m::LIVE, "status=working"), Some(0.0));
    assert_eq!(
        gauge(&readings, m::RUNNING, ""),
        Some(0.0),
        "the stopped calls are no longer running"
    );
}

#[tokio::test]
async fn an_overlong_tool_name_is_kept_cut_to_its_first_1024_bytes() {
    let mut admin: Option<Admin> = None;
    let layered = Layered::start_over(MemoryTaskStore::new(), |layer| {
        admin = Some(layer.admin());
        layer.threshold(ms(0))
    })
    .await;
    let admin = admin.expect("the layer was configured");
    // Long, but within what an `Mcp-Name` header may carry.
    let name = "x".repeat(8 * 1024);
    let call = json!({"name": name, "arguments": {}});
    let created = send(&layered.client(), 1, "tools/call", call, true, &[]).await;
    let id = TaskId::parse(&task_id(&created.into_response())).unwrap();
    let read = admin
        .get(id)
        .await
        .unwrap()
        .expect("the parked call's task");
    assert_eq!(read.tool, Some(format!("{}…", "x".repeat(1024))));
}

/// A task of `owner` made by a call of `slow_compute`, living a minute.
fn task_of(owner: Option<&str>) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        owner: owner.map(str::to_owned),
        created_at: Timestamp::now(),
        ttl: Some(std::time::Duration::from_secs(60)),
        poll_interval: None,
        status_message: None,
        quota: Quota::default(),
        tool: Some("slow_compute".into()),
        rerun: None,
    }
}

/// The next change of `watch`, within a second.
async fn next_change(watch: &mut AdminWatch) -> Option<TaskChange> {
    tokio::time::timeout(std::time::Duration::from_secs(1), watch.next())
        .await
        .expect("the watch answers within a second")
}

#[tokio::test]
async fn the_operators_watch_hears_any_owners_task_change_and_get_reads_it() {
    let store = MemoryTaskStore::new();
    let admin = TasksLayer::new(store.clone()).admin();
    let mut watch = admin.watch().expect("the memory store has a feed");
    let task = task_of(Some("alice"));
    store.create(task.clone()).await.unwrap();
    store
        .set_status_message(task.id, "half way".into())
        .await
        .unwrap();
    assert_eq!(
        next_change(&mut watch).await,
        Some(TaskChange::Changed(task.id))
    );
    let read = admin
        .get(task.id)
        .await
        .unwrap()
        .expect("the task is there");
    assert_eq!(read.owner.as_deref(), Some("alice"));
    assert_eq!(read.tool.as_deref(), Some("slow_compute"));
    assert_eq!(read.attempt, 1);
    assert_eq!(read.snapshot.status_message.as_deref(), Some("half way"));
    admin.delete(task.id).await.unwrap();
    assert_eq!(
        next_change(&mut watch).await,
        Some(TaskChange::Changed(task.id)),
        "a deleted task is announced"
    );
    assert!(admin.get(task.id).await.unwrap().is_none(), "and is gone");
}

#[tokio::test]
async fn a_watch_that_falls_behind_the_feed_hears_that_it_missed_changes() {
    let store = MemoryTaskStore::new();
    let admin = TasksLayer::new(store.clone()).admin();
    let mut watch = admin.watch().unwrap();
    let task = task_of(None);
    store.create(task.clone()).await.unwrap();
    // More changes than the feed keeps for a slow receiver (4,096).
    for n in 0..5_000 {
        store
            .set_status_message(task.id, format!("step {n}"))
            .await
            .unwrap();
    }
    assert_eq!(next_change(&mut watch).await, Some(TaskChange::Missed));
    assert_eq!(
        next_change(&mut watch).await,
        Some(TaskChange::Changed(task.id)),
        "the changes kept follow"
    );
}

#[tokio::test]
async fn a_watch_ends_when_its_store_is_gone() {
    let store = MemoryTaskStore::new();
    let layer = TasksLayer::new(store.clone());
    let admin = layer.admin();
    let mut watch = admin.watch().unwrap();
    drop((layer, admin, store));
    assert_eq!(next_change(&mut watch).await, None);
}
