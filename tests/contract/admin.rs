//! The operator's methods (`admin_*`), for stores that offer them: every
//! owner's tasks listed and counted, one read, cancelled or deleted without
//! the owner. Not part of [`run`](super::run): a store may leave them out.

use std::future::Future;
use std::time::Duration;

use mcp_tasks::store::TaskCounts;
use mcp_tasks::{
    CancelOutcome, NewTask, Quota, QuotaScope, StoreError, TaskId, TaskStatus, TaskStore, Timestamp,
};

use super::EXPIRY;
use super::wait::wait_until;
use super::{new_task, raw};

/// Runs every operator rule against stores built by `make`.
pub async fn run<S, F, Fut>(make: F)
where
    S: TaskStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    admin_list_pages_every_owners_tasks_once_oldest_first(&make().await).await;
    admin_list_rows_carry_the_tool(&make().await).await;
    admin_get_reads_any_owners_task_with_its_tool_and_attempt(&make().await).await;
    admin_get_finds_no_deleted_or_expired_task(&make().await).await;
    admin_counts_live_tasks_per_owner_and_status(&make().await).await;
    admin_cancel_reaches_any_owners_task(&make().await).await;
    admin_delete_removes_a_task_and_frees_its_quota(&make().await).await;
}

/// A task of `owner` created `at` (ms since the epoch), living 60 s.
fn task_at(owner: Option<&str>, at: u64) -> NewTask {
    NewTask {
        created_at: Timestamp::from_millis(at),
        ..new_task(owner, Some(Duration::from_secs(60)))
    }
}

async fn admin_list_pages_every_owners_tasks_once_oldest_first<S: TaskStore>(store: &S) {
    let base = Timestamp::now().as_millis() - 5_000;
    let owners = [
        Some("alice"),
        Some("bob"),
        None,
        Some("alice"),
        Some("carol"),
    ];
    let mut expected = Vec::new();
    for (i, owner) in owners.into_iter().enumerate() {
        let task = task_at(owner, base + i as u64 * 10);
        store.create(task.clone()).await.unwrap();
        expected.push((task.id, owner.map(str::to_owned)));
    }
    // Expired on arrival: never listed.
    let mut expired = task_at(Some("bob"), base - 120_000);
    expired.ttl = Some(Duration::from_secs(1));
    store.create(expired.clone()).await.unwrap();

    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let page = store.admin_list(cursor.as_deref(), 2).await.unwrap();
        assert!(page.tasks.len() <= 2, "rule: admin pages keep the limit");
        seen.extend(page.tasks.into_iter().map(|t| (t.snapshot.id, t.owner)));
        pages += 1;
        assert!(pages < 10, "rule: admin pages end");
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(
        seen, expected,
        "rule: the admin listing shows every owner's live tasks once, oldest first, with owners"
    );
    let refused = store.admin_list(Some("not-a-cursor"), 2).await;
    assert!(
        matches!(refused, Err(StoreError::InvalidCursor)),
        "rule: the admin listing refuses a foreign cursor, got {refused:?}"
    );
}

/// A task of `owner` living 60 s, made by a call of `tool`.
fn task_of(owner: Option<&str>, tool: Option<&str>) -> NewTask {
    NewTask {
        tool: tool.map(str::to_owned),
        ..new_task(owner, Some(Duration::from_secs(60)))
    }
}

async fn admin_list_rows_carry_the_tool<S: TaskStore>(store: &S) {
    let named = task_of(Some("alice"), Some("slow_compute"));
    let unnamed = task_of(None, None);
    for task in [&named, &unnamed] {
        store.create(task.clone()).await.unwrap();
    }
    let page = store.admin_list(None, 10).await.unwrap();
    let mut rows: Vec<_> = page
        .tasks
        .iter()
        .map(|task| (task.snapshot.id, task.tool.as_deref()))
        .collect();
    rows.sort();
    let mut expected = vec![(named.id, Some("slow_compute")), (unnamed.id, None)];
    expected.sort();
    assert_eq!(rows, expected, "rule: admin rows carry the tool");
}

async fn admin_get_reads_any_owners_task_with_its_tool_and_attempt<S: TaskStore>(store: &S) {
    let mut task = task_of(Some("bob"), Some("slow_compute"));
    task.status_message = Some("starting".into());
    store.create(task.clone()).await.unwrap();
    let read = store.admin_get(task.id).await.unwrap();
    let read = read.expect("rule: admin_get finds any owner's task");
    assert_eq!(read.snapshot.id, task.id);
    assert_eq!(
        read.owner.as_deref(),
        Some("bob"),
        "rule: admin_get shows the owner"
    );
    assert_eq!(
        read.tool.as_deref(),
        Some("slow_compute"),
        "rule: admin_get shows the tool"
    );
    assert_eq!(read.attempt, 1, "rule: a first run is attempt 1");
    assert_eq!(read.snapshot.status(), TaskStatus::Working);
    assert_eq!(read.snapshot.status_message.as_deref(), Some("starting"));

    store
        .complete(task.id, raw(r#"{"content":[]}"#))
        .await
        .unwrap();
    let read = store.admin_get(task.id).await.unwrap().unwrap();
    assert_eq!(
        read.snapshot.status(),
        TaskStatus::Completed,
        "rule: admin_get shows the task as it is now"
    );

    let unowned = task_of(None, None);
    store.create(unowned.clone()).await.unwrap();
    let read = store.admin_get(unowned.id).await.unwrap();
    let read = read.expect("rule: admin_get finds an unowned task");
    assert_eq!(
        (read.owner, read.tool),
        (None, None),
        "rule: admin_get shows no owner and no tool where there are none"
    );
    let unknown = store.admin_get(TaskId::generate().unwrap()).await.unwrap();
    assert!(
        unknown.is_none(),
        "rule: admin_get of an unknown id is None"
    );
}

async fn admin_get_finds_no_deleted_or_expired_task<S: TaskStore>(store: &S) {
    let task = task_of(Some("alice"), Some("slow_compute"));
    store.create(task.clone()).await.unwrap();
    let removed = store.admin_delete(task.id).await.unwrap();
    assert_eq!(
        removed.and_then(|removed| removed.tool).as_deref(),
        Some("slow_compute"),
        "rule: admin delete returns the task with its tool"
    );
    assert!(
        store.admin_get(task.id).await.unwrap().is_none(),
        "rule: admin_get of a deleted task is None"
    );
    let short = super::create(store, Some("bob"), Some(Duration::from_millis(50))).await;
    wait_until("the short-lived task expires", EXPIRY, || async {
        store.get(short, Some("bob")).await.unwrap().is_none()
    })
    .await;
    assert!(
        store.admin_get(short).await.unwrap().is_none(),
        "rule: admin_get of an expired task is None"
    );
}

async fn admin_counts_live_tasks_per_owner_and_status<S: TaskStore>(store: &S) {
    let ttl = Some(Duration::from_secs(60));
    let alice = [
        super::create(store, Some("alice"), ttl).await,
        super::create(store, Some("alice"), ttl).await,
        super::create(store, Some("alice"), ttl).await,
    ];
    store.complete(alice[2], raw("{}")).await.unwrap();
    let bob = super::create(store, Some("bob"), ttl).await;
    store.cancel(bob, Some("bob")).await.unwrap();
    let nobody = super::create(store, None, ttl).await;
    store
        .fail(nobody, raw(r#"{"code":-32603,"message":"boom"}"#))
        .await
        .unwrap();
    let short = super::create(store, Some("bob"), Some(Duration::from_millis(50))).await;
    wait_until("the short-lived task expires", EXPIRY, || async {
        store.get(short, Some("bob")).await.unwrap().is_none()
    })
    .await;

    let counts = store.admin_counts().await.unwrap();
    let mut expected = TaskCounts::default();
    for status in [
        TaskStatus::Working,
        TaskStatus::Working,
        TaskStatus::Completed,
    ] {
        expected.add(Some("alice"), status);
    }
    expected.add(Some("bob"), TaskStatus::Cancelled);
    expected.add(None, TaskStatus::Failed);
    assert_eq!(
        counts, expected,
        "rule: admin counts are the live tasks per owner and status"
    );
}

async fn admin_cancel_reaches_any_owners_task<S: TaskStore>(store: &S) {
    let task = new_task(Some("bob"), Some(Duration::from_secs(60)));
    let created = store.create(task.clone()).await.unwrap();
    let outcome = store.admin_cancel(task.id).await.unwrap();
    assert!(
        matches!(&outcome, Some(CancelOutcome::Cancelled(s)) if s.status() == TaskStatus::Cancelled),
        "rule: admin cancel cancels another owner's task, got {outcome:?}"
    );
    let stopped = tokio::time::timeout(Duration::from_secs(2), created.stop.cancelled()).await;
    assert!(stopped.is_ok(), "rule: admin cancel fires the stop signal");
    let seen = store.get(task.id, Some("bob")).await.unwrap().unwrap();
    assert_eq!(seen.status(), TaskStatus::Cancelled);
    assert!(
        store.complete(task.id, raw("{}")).await.is_err(),
        "rule: a late outcome never overwrites an admin cancel"
    );
    let again = store.admin_cancel(task.id).await.unwrap();
    assert!(
        matches!(again, Some(CancelOutcome::AlreadyTerminal(_))),
        "rule: admin cancel leaves a terminal task as it is, got {again:?}"
    );
    let unknown = store
        .admin_cancel(TaskId::generate().unwrap())
        .await
        .unwrap();
    assert!(
        unknown.is_none(),
        "rule: admin cancel of an unknown id is None"
    );
}

async fn admin_delete_removes_a_task_and_frees_its_quota<S: TaskStore>(store: &S) {
    let quota = Quota {
        per_owner: Some(1),
        total: None,
    };
    let mut first = new_task(Some("alice"), Some(Duration::from_secs(60)));
    first.quota = quota;
    let created = store.create(first.clone()).await.unwrap();
    let mut second = new_task(Some("alice"), Some(Duration::from_secs(60)));
    second.quota = quota;
    let refused = store.create(second.clone()).await;
    assert!(
        matches!(refused, Err(StoreError::QuotaExceeded(QuotaScope::Owner))),
        "the quota holds before the delete, got {refused:?}"
    );

    let removed = store.admin_delete(first.id).await.unwrap();
    let removed = removed.expect("rule: admin delete finds another owner's task");
    assert_eq!(removed.owner.as_deref(), Some("alice"));
    assert_eq!(removed.snapshot.id, first.id);
    assert_eq!(removed.snapshot.status(), TaskStatus::Working);
    let stopped = tokio::time::timeout(Duration::from_secs(2), created.stop.cancelled()).await;
    assert!(
        stopped.is_ok(),
        "rule: deleting a running task fires its stop signal"
    );

    assert!(
        store.get(first.id, Some("alice")).await.unwrap().is_none(),
        "rule: a deleted task reads like an unknown one"
    );
    let listed = store.list(Some("alice"), None, 10).await.unwrap();
    assert!(
        listed.tasks.is_empty(),
        "rule: a deleted task leaves the owner's listing"
    );
    let all = store.admin_list(None, 10).await.unwrap();
    assert!(
        all.tasks.is_empty(),
        "rule: a deleted task leaves the admin listing"
    );
    assert!(
        matches!(
            store.complete(first.id, raw("{}")).await,
            Err(StoreError::NotFound)
        ),
        "rule: a deleted task's late outcome has nowhere to go"
    );
    store
        .create(second)
        .await
        .expect("rule: admin delete frees the task's quota place at once");
    assert!(
        store.admin_delete(first.id).await.unwrap().is_none(),
        "rule: a deleted task is unknown to a second delete"
    );
}
