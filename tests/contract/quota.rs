//! The quota rules of the store contract: live tasks per owner (unowned
//! tasks together) and in total, checked and stored in one step.

use std::future::Future;
use std::time::Duration;

use futures_util::future::join_all;
use mcp_tasks::{NewTask, Quota, QuotaScope, StoreError, TaskId, TaskStore};

use super::EXPIRY;
use super::wait::wait_until;
use super::{new_task, raw};

/// Runs every quota rule against stores built by `make`.
pub async fn run<S, F, Fut>(make: &F)
where
    S: TaskStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    the_per_owner_quota_refuses_one_task_too_many(&make().await).await;
    the_per_owner_quota_counts_each_owner_apart(&make().await).await;
    unowned_tasks_count_together_as_one_owner(&make().await).await;
    the_total_quota_counts_every_owner(&make().await).await;
    an_expired_task_no_longer_counts(&make().await).await;
    a_terminal_task_counts_until_it_expires(&make().await).await;
    concurrent_creates_never_overshoot_a_quota(&make().await).await;
}

fn quota(per_owner: Option<u32>, total: Option<u32>) -> Quota {
    Quota { per_owner, total }
}

fn under(owner: Option<&str>, ttl: Option<Duration>, quota: Quota) -> NewTask {
    let mut task = new_task(owner, ttl);
    task.quota = quota;
    task
}

/// Creates a task of `owner` under `quota`: its id, and whether it was
/// admitted (`None`) or which quota refused it.
async fn try_create<S: TaskStore>(
    store: &S,
    owner: Option<&str>,
    ttl: Option<Duration>,
    quota: Quota,
) -> (TaskId, Option<QuotaScope>) {
    let task = under(owner, ttl, quota);
    let id = task.id;
    match store.create(task).await {
        Ok(_) => (id, None),
        Err(StoreError::QuotaExceeded(scope)) => (id, Some(scope)),
        Err(other) => panic!("rule: a quota refuses with QuotaExceeded, got {other:?}"),
    }
}

/// Creates `n` tasks of `owner` that `quota` must admit.
async fn fill<S: TaskStore>(
    store: &S,
    owner: Option<&str>,
    ttl: Option<Duration>,
    quota: Quota,
    n: usize,
) -> Vec<TaskId> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let (id, refused) = try_create(store, owner, ttl, quota).await;
        assert_eq!(
            refused, None,
            "rule: a quota admits tasks up to its cap, as {owner:?}"
        );
        ids.push(id);
    }
    ids
}

/// Waits until each of `tasks` (owner, id) reads as unknown: expired.
async fn expired<S: TaskStore>(store: &S, tasks: &[(Option<&str>, TaskId)]) {
    wait_until("the short-lived tasks expire", EXPIRY, || async {
        for &(owner, id) in tasks {
            if store.get(id, owner).await.unwrap().is_some() {
                return false;
            }
        }
        true
    })
    .await;
}

async fn the_per_owner_quota_refuses_one_task_too_many<S: TaskStore>(store: &S) {
    let cap = quota(Some(3), None);
    fill(store, Some("alice"), None, cap, 3).await;
    let (id, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(
        refused,
        Some(QuotaScope::Owner),
        "rule: the per-owner cap refuses one task too many"
    );
    assert!(
        store.get(id, Some("alice")).await.unwrap().is_none(),
        "rule: a refused task is not stored"
    );
    let listed = store.list(Some("alice"), None, 100).await.unwrap();
    assert_eq!(listed.tasks.len(), 3, "rule: a refused task is not listed");
    let mut again = under(Some("alice"), None, Quota::default());
    again.id = id;
    let again = store.create(again).await;
    assert!(
        again.is_ok(),
        "rule: a refused task leaves nothing behind (its id is free), got {:?}",
        again.err()
    );
}

async fn the_per_owner_quota_counts_each_owner_apart<S: TaskStore>(store: &S) {
    let cap = quota(Some(2), None);
    fill(store, Some("alice"), None, cap, 2).await;
    for other in [Some("bob"), Some(""), None] {
        let (_, refused) = try_create(store, other, None, cap).await;
        assert_eq!(
            refused, None,
            "rule: another owner's tasks do not count, as {other:?}"
        );
    }
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(refused, Some(QuotaScope::Owner));
}

async fn unowned_tasks_count_together_as_one_owner<S: TaskStore>(store: &S) {
    let cap = quota(Some(2), None);
    fill(store, None, None, cap, 2).await;
    let (_, refused) = try_create(store, None, None, cap).await;
    assert_eq!(
        refused,
        Some(QuotaScope::Owner),
        "rule: unowned tasks count together as one owner"
    );
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(refused, None, "rule: unowned tasks are not alice's");
}

async fn the_total_quota_counts_every_owner<S: TaskStore>(store: &S) {
    let cap = quota(Some(2), Some(3));
    fill(store, Some("alice"), None, cap, 2).await;
    fill(store, None, None, cap, 1).await;
    for owner in [Some("carol"), None] {
        let (id, refused) = try_create(store, owner, None, cap).await;
        assert_eq!(
            refused,
            Some(QuotaScope::Total),
            "rule: the total cap refuses one task too many, as {owner:?}"
        );
        assert!(
            store.get(id, owner).await.unwrap().is_none(),
            "rule: a task refused by the total cap is not stored"
        );
    }
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(
        refused,
        Some(QuotaScope::Owner),
        "rule: when both caps are reached, the per-owner one is reported"
    );
}

async fn an_expired_task_no_longer_counts<S: TaskStore>(store: &S) {
    let cap = quota(Some(2), Some(4));
    let short = Duration::from_millis(500);
    let mut expiring = Vec::new();
    // Each owner keeps a long-lived task beside the one that expires.
    for owner in [Some("alice"), Some("bob")] {
        let ids = fill(store, owner, Some(short), cap, 1).await;
        expiring.extend(ids.into_iter().map(|id| (owner, id)));
        fill(store, owner, Some(Duration::from_secs(60)), cap, 1).await;
    }
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(refused, Some(QuotaScope::Owner));
    let (_, refused) = try_create(store, Some("carol"), None, cap).await;
    assert_eq!(refused, Some(QuotaScope::Total));
    expired(store, &expiring).await;
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(
        refused, None,
        "rule: an expired task no longer counts (per owner)"
    );
    let (_, refused) = try_create(store, Some("carol"), None, cap).await;
    assert_eq!(
        refused, None,
        "rule: an expired task no longer counts (in total)"
    );
}

async fn a_terminal_task_counts_until_it_expires<S: TaskStore>(store: &S) {
    let cap = quota(Some(3), Some(3));
    let ttl = Duration::from_secs(1);
    let ids = fill(store, Some("alice"), Some(ttl), cap, 3).await;
    store.complete(ids[0], raw("{}")).await.unwrap();
    store
        .fail(ids[1], raw(r#"{"code":-1,"message":"x"}"#))
        .await
        .unwrap();
    store.cancel(ids[2], Some("alice")).await.unwrap();
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(
        refused,
        Some(QuotaScope::Owner),
        "rule: a terminal task still counts until it expires"
    );
    let (_, refused) = try_create(store, Some("bob"), None, cap).await;
    assert_eq!(
        refused,
        Some(QuotaScope::Total),
        "rule: a terminal task still counts until it expires (in total)"
    );
    let alices: Vec<_> = ids.iter().map(|&id| (Some("alice"), id)).collect();
    expired(store, &alices).await;
    let (_, refused) = try_create(store, Some("alice"), None, cap).await;
    assert_eq!(
        refused, None,
        "rule: a terminal task stops counting when it expires"
    );
}

async fn concurrent_creates_never_overshoot_a_quota<S: TaskStore>(store: &S) {
    let cap = quota(Some(10), None);
    let tries = (0..50).map(|_| try_create(store, Some("alice"), None, cap));
    let outcomes = join_all(tries).await;
    let admitted = outcomes.iter().filter(|(_, r)| r.is_none()).count();
    assert_eq!(
        admitted, 10,
        "rule: concurrent creates never overshoot a quota (per owner)"
    );
    let listed = store.list(Some("alice"), None, 100).await.unwrap();
    assert_eq!(listed.tasks.len(), 10, "rule: refused tasks are not stored");

    let cap = quota(None, Some(20));
    let owners: Vec<String> = (0..50).map(|i| format!("owner-{i}")).collect();
    let tries = owners
        .iter()
        .map(|owner| try_create(store, Some(owner), None, cap));
    let outcomes = join_all(tries).await;
    let admitted = outcomes.iter().filter(|(_, r)| r.is_none()).count();
    assert_eq!(
        admitted, 10,
        "rule: concurrent creates never overshoot a quota (in total)"
    );
}
