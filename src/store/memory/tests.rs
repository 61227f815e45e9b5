//! Unit tests of [`MemoryTaskStore`] that look inside it.

use std::time::Duration;

use super::*;

fn new_task(ttl: Option<Duration>) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        owner: None,
        created_at: Timestamp::now(),
        ttl,
        poll_interval: None,
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    }
}

#[tokio::test]
async fn expired_tasks_are_reclaimed_without_a_manual_sweep() {
    let store = MemoryTaskStore::new();
    for _ in 0..50 {
        store
            .create(new_task(Some(Duration::from_millis(50))))
            .await
            .unwrap();
    }
    store.create(new_task(None)).await.unwrap();
    assert_eq!(store.len(), 51);
    assert_eq!(store.inner.owners.len(), 51);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.len(), 1, "only the task without a TTL is left");
    assert_eq!(
        store.inner.owners.len(),
        1,
        "the reaper keeps the index in step"
    );
}

#[tokio::test]
async fn a_poisoned_lock_is_a_backend_error_not_a_missing_task() {
    let store = MemoryTaskStore::new();
    let task = new_task(None);
    store.create(task.clone()).await.unwrap();
    let shard = store.inner.clone();
    let poisoner = std::thread::spawn(move || {
        let _guard = shard.shards[(task.id.as_u128() as usize) % SHARDS]
            .lock()
            .unwrap();
        panic!("poison the shard");
    });
    assert!(poisoner.join().is_err());
    let read = store.get(task.id, None).await;
    assert!(matches!(read, Err(StoreError::Backend(_))), "got {read:?}");
    let cancel = store.cancel(task.id, None).await;
    assert!(matches!(cancel, Err(StoreError::Backend(_))));
}

#[tokio::test]
async fn the_reaper_takes_reclaimed_tasks_out_of_the_quota_counts() {
    let store = MemoryTaskStore::new();
    let quota = Quota {
        per_owner: Some(100),
        total: None,
    };
    for owner in [None, Some("alice")] {
        let mut task = new_task(Some(Duration::from_millis(50)));
        task.owner = owner.map(str::to_owned);
        task.quota = quota;
        store.create(task).await.unwrap();
    }
    store.create(new_task(None)).await.unwrap();
    assert_eq!(
        store.inner.live.len(),
        (2, 2),
        "only the tasks created under a quota are counted"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.len(), 1);
    assert_eq!(
        store.inner.live.len(),
        (0, 0),
        "the reaper keeps the counts in step"
    );
}

#[tokio::test]
async fn status_changes_are_logged_only_once_someone_reads_them() {
    let store = MemoryTaskStore::new();
    let before = store.create(new_task(None)).await.unwrap().snapshot.id;
    store
        .complete(before, RawValue::from_string("{}".into()).unwrap())
        .await
        .unwrap();
    let entries = |store: &MemoryTaskStore| store.inner.log.len();
    assert_eq!(entries(&store), 0, "no reader yet: nothing kept");

    let start = store.status_events(None, None, 10).await.unwrap();
    let after = store.create(new_task(None)).await.unwrap().snapshot.id;
    store
        .complete(after, RawValue::from_string("{}".into()).unwrap())
        .await
        .unwrap();
    let page = store
        .status_events(None, Some(&start.cursor), 10)
        .await
        .unwrap();
    let ids: Vec<_> = page.events.iter().map(|event| event.task.id).collect();
    assert_eq!(
        ids,
        vec![after, after],
        "its creation and its end, not before's"
    );
    assert!(!page.truncated);
}
