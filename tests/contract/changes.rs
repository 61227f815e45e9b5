//! The change feed ([`TaskStore::changes`]), for stores that offer one:
//! every change a status subscriber sees announces the task's id.

use std::future::Future;
use std::time::Duration;

use mcp_tasks::{InputRound, TaskChange, TaskId, TaskStore};
use tokio::sync::broadcast::Receiver;

use super::{create, raw};

/// Runs every change-feed rule against a store built by `make`.
pub async fn run<S, F, Fut>(make: F)
where
    S: TaskStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    every_visible_change_announces_the_task(&make().await).await;
}

/// The next id the feed gives within a second.
async fn next(feed: &mut Receiver<TaskChange>, step: &str) -> TaskId {
    let change = tokio::time::timeout(Duration::from_secs(1), feed.recv())
        .await
        .unwrap_or_else(|_| panic!("rule: the change feed announces {step}"))
        .expect("the feed is open");
    match change {
        TaskChange::Changed(id) => id,
        TaskChange::Missed => panic!("rule: nothing is missed on a healthy store ({step})"),
    }
}

async fn every_visible_change_announces_the_task<S: TaskStore>(store: &S) {
    let mut feed = store
        .changes()
        .expect("rule: the store offers a change feed");
    let id = create(store, Some("alice"), Some(Duration::from_secs(60))).await;
    assert_eq!(next(&mut feed, "a new task").await, id);
    store
        .set_status_message(id, "half way".into())
        .await
        .unwrap();
    assert_eq!(next(&mut feed, "a status message").await, id);
    let round = InputRound {
        requests: vec![("1.a".into(), raw(r#"{"method":"elicitation/create"}"#))],
        resume: raw("{}"),
    };
    store.require_input(id, round).await.unwrap();
    assert_eq!(next(&mut feed, "input asked for").await, id);
    let answers = vec![("1.a".into(), raw("1"))];
    store
        .answer_input(id, Some("alice"), answers)
        .await
        .unwrap();
    assert_eq!(next(&mut feed, "a resumed task").await, id);
    store.complete(id, raw("{}")).await.unwrap();
    assert_eq!(next(&mut feed, "a completed task").await, id);
    // A refused write changes nothing and announces nothing.
    assert!(store.complete(id, raw("{}")).await.is_err());
    let other = create(store, None, Some(Duration::from_secs(60))).await;
    assert_eq!(
        next(&mut feed, "a new task").await,
        other,
        "rule: nothing is announced for a refused write"
    );
    store.cancel(other, None).await.unwrap();
    assert_eq!(
        next(&mut feed, "a cancelled task").await,
        other,
        "rule: nothing is announced for a refused write"
    );
}
