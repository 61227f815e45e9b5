//! What two instances sharing one Redis (a server or a cluster) must show:
//! each function is the body of a test, run by `tests/redis/store.rs` on one
//! `redis-server` and by `tests/redis/cluster.rs` on a 3+3 cluster.

#![allow(dead_code)]

use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{
    CancelOutcome, InputProgress, InputRound, NewTask, Quota, StoreError, TaskChange, TaskId,
    TaskStatus, TaskStore, Timestamp,
};
use serde_json::value::RawValue;

pub fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

pub fn new_task(owner: Option<&str>, ttl: Option<Duration>) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        owner: owner.map(str::to_owned),
        created_at: Timestamp::now(),
        ttl,
        poll_interval: None,
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    }
}

/// A prefix no other store in this run uses.
pub fn fresh_prefix() -> String {
    format!("test-{}", TaskId::generate().unwrap())
}

pub async fn created_on_one_is_readable_on_another(a: &RedisTaskStore, b: &RedisTaskStore) {
    let mut task = new_task(Some("alice"), Some(Duration::from_secs(60)));
    task.poll_interval = Some(Duration::from_millis(1500));
    task.status_message = Some("starting".into());
    a.create(task.clone()).await.unwrap();
    let read = b.get(task.id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Working);
    assert_eq!(read.created_at, task.created_at);
    assert_eq!(read.ttl, task.ttl);
    assert_eq!(read.poll_interval, task.poll_interval);
    assert_eq!(read.status_message.as_deref(), Some("starting"));
    assert!(b.get(task.id, Some("bob")).await.unwrap().is_none());
    assert!(b.get(task.id, None).await.unwrap().is_none());

    b.set_status_message(task.id, "half way".into())
        .await
        .unwrap();
    b.complete(task.id, raw(r#"{"content":[], "isError":false}"#))
        .await
        .unwrap();
    let read = a.get(task.id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Completed);
    assert_eq!(read.status_message.as_deref(), Some("half way"));
    match read.state {
        mcp_tasks::TaskState::Completed { result } => {
            assert_eq!(
                result.get(),
                r#"{"content":[], "isError":false}"#,
                "byte for byte"
            )
        }
        other => panic!("expected completed, got {other:?}"),
    }
}

pub async fn a_cancel_on_one_fires_the_stop_signal_of_another(
    a: &RedisTaskStore,
    b: &RedisTaskStore,
) {
    let task = new_task(Some("alice"), None);
    let created = a.create(task.clone()).await.unwrap();
    assert_eq!(a.held_stop_signals(), 1);
    let outcome = b.cancel(task.id, Some("alice")).await.unwrap();
    assert!(matches!(outcome, Some(CancelOutcome::Cancelled(_))));
    let fired = tokio::time::timeout(Duration::from_secs(1), created.stop.cancelled()).await;
    assert!(fired.is_ok(), "A's stop signal fired within one second");
    assert_eq!(a.held_stop_signals(), 0, "A forgot the ended task");
    // A's driver finishing late is refused: cancelled stays cancelled.
    let late = a.complete(task.id, raw("{}")).await;
    assert!(
        matches!(
            late,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::Cancelled,
                ..
            })
        ),
        "got {late:?}"
    );
    let read = b.get(task.id, Some("alice")).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Cancelled);
}

pub async fn an_operators_delete_on_one_stops_the_task_on_another(
    a: &RedisTaskStore,
    b: &RedisTaskStore,
) {
    let task = new_task(Some("alice"), None);
    let created = a.create(task.clone()).await.unwrap();
    let removed = b
        .admin_delete(task.id)
        .await
        .unwrap()
        .expect("B finds A's task");
    assert_eq!(removed.snapshot.status(), TaskStatus::Working);
    let fired = tokio::time::timeout(Duration::from_secs(1), created.stop.cancelled()).await;
    assert!(fired.is_ok(), "A's stop signal fired within one second");
    let late = a.complete(task.id, raw("{}")).await;
    assert!(matches!(late, Err(StoreError::NotFound)), "got {late:?}");
    assert_eq!(a.held_stop_signals(), 0, "A forgot the deleted task");
}

pub async fn a_round_completed_on_another_returns_the_resume_context(
    a: &RedisTaskStore,
    b: &RedisTaskStore,
) {
    let task = new_task(Some("alice"), Some(Duration::from_secs(60)));
    let created = a.create(task.clone()).await.unwrap();
    let round = InputRound {
        requests: vec![
            (
                "1.confirm".into(),
                raw(r#"{"method":"elicitation/create"}"#),
            ),
            ("1.roots".into(), raw(r#"{"method":"roots/list"}"#)),
        ],
        resume: raw(r#"{"round":1,"requestState":"opaque"}"#),
    };
    a.require_input(task.id, round).await.unwrap();
    let progress = b
        .answer_input(task.id, Some("alice"), vec![("1.roots".into(), raw("[]"))])
        .await
        .unwrap();
    assert!(matches!(progress, Some(InputProgress::Pending)));
    assert_eq!(
        b.held_stop_signals(),
        0,
        "a pending round hands out nothing"
    );
    let progress = b
        .answer_input(
            task.id,
            Some("alice"),
            vec![("1.confirm".into(), raw(r#"{"action":"accept"}"#))],
        )
        .await
        .unwrap();
    let Some(InputProgress::RoundComplete {
        answers,
        resume,
        stop,
    }) = progress
    else {
        panic!("expected a complete round, got {progress:?}");
    };
    let answers: Vec<_> = answers.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
    assert_eq!(
        answers,
        vec![("1.roots", "[]"), ("1.confirm", r#"{"action":"accept"}"#)]
    );
    assert_eq!(resume.get(), r#"{"round":1,"requestState":"opaque"}"#);
    assert_eq!(
        a.get(task.id, Some("alice"))
            .await
            .unwrap()
            .unwrap()
            .status(),
        TaskStatus::Working
    );
    // The resumed call runs on B now; a cancel on A stops it there.
    a.cancel(task.id, Some("alice")).await.unwrap();
    let fired = tokio::time::timeout(Duration::from_secs(1), stop.cancelled()).await;
    assert!(fired.is_ok(), "B's resumed call is stopped by A's cancel");
    assert!(created.stop.is_cancelled());
    assert_eq!((a.held_stop_signals(), b.held_stop_signals()), (0, 0));
}

pub async fn racing_instances_get_exactly_one_winner_per_transition(
    a: &RedisTaskStore,
    b: &RedisTaskStore,
) {
    for _ in 0..40 {
        // A's driver finishes while B's client cancels.
        let task = new_task(None, None);
        let created = a.create(task.clone()).await.unwrap();
        let (completed, cancelled) =
            tokio::join!(a.complete(task.id, raw("{}")), b.cancel(task.id, None));
        let cancelled = matches!(cancelled.unwrap(), Some(CancelOutcome::Cancelled(_)));
        assert!(completed.is_ok() != cancelled, "exactly one of them wins");
        let status = b.get(task.id, None).await.unwrap().unwrap().status();
        let winner = if cancelled {
            TaskStatus::Cancelled
        } else {
            TaskStatus::Completed
        };
        assert_eq!(status, winner);
        assert!(created.stop.is_cancelled());

        // Two instances answer the last outstanding key at once.
        let task = new_task(None, None);
        a.create(task.clone()).await.unwrap();
        let round = InputRound {
            requests: vec![("1.a".into(), raw("{}"))],
            resume: raw(r#"{"r":1}"#),
        };
        a.require_input(task.id, round).await.unwrap();
        let answer = || vec![("1.a".to_owned(), raw("true"))];
        let (on_a, on_b) = tokio::join!(
            a.answer_input(task.id, None, answer()),
            b.answer_input(task.id, None, answer())
        );
        let completes = [on_a.unwrap(), on_b.unwrap()]
            .iter()
            .filter(|p| matches!(p, Some(InputProgress::RoundComplete { .. })))
            .count();
        assert_eq!(completes, 1, "one round, one resumed call");
        a.complete(task.id, raw("{}")).await.unwrap();
    }
    // Each instance lets go of a stop signal as it learns of the end.
    crate::wait::wait_until(
        "both instances let go of every stop signal",
        crate::wait::BOUND,
        || async {
            match (a.held_stop_signals(), b.held_stop_signals()) {
                (0, 0) => Ok(()),
                held => Err(held),
            }
        },
    )
    .await;
}

/// The next change `watch` hears, within `bound`.
async fn heard(watch: &mut mcp_tasks::AdminWatch, bound: Duration) -> Option<TaskChange> {
    tokio::time::timeout(bound, watch.next())
        .await
        .unwrap_or_else(|_| panic!("the operator's watch heard nothing in {bound:?}"))
}

/// An operator watching on `a` (a quiet instance: it runs no task) hears
/// the tasks `b` runs, whoever owns them and whichever shard holds them,
/// and reads each with its owner and tool.
pub async fn an_operators_watch_on_one_hears_every_task_of_another(
    a: &RedisTaskStore,
    b: &RedisTaskStore,
) {
    let admin = mcp_tasks::TasksLayer::new(a.clone()).admin();
    let mut watch = admin.watch().expect("the Redis store has a feed");
    // Its subscriptions made, the watch is told to read everything again.
    assert_eq!(
        heard(&mut watch, Duration::from_secs(5)).await,
        Some(TaskChange::Missed)
    );
    let owners = [
        Some("alice"),
        Some("bob"),
        Some("carol"),
        Some("dave"),
        None,
    ];
    for owner in owners {
        let mut task = new_task(owner, Some(Duration::from_secs(60)));
        task.tool = Some("slow_compute".into());
        b.create(task.clone()).await.unwrap();
        b.set_status_message(task.id, "half way".into())
            .await
            .unwrap();
        let change = loop {
            // A change of an earlier task may come again (`Missed` after
            // a reconnect, too); this task's comes.
            match heard(&mut watch, Duration::from_secs(2)).await {
                Some(TaskChange::Changed(id)) if id == task.id => break id,
                Some(_) => continue,
                None => panic!("the feed closed"),
            }
        };
        let read = admin.get(change).await.unwrap().expect("A reads B's task");
        assert_eq!(read.owner.as_deref(), owner);
        assert_eq!(read.tool.as_deref(), Some("slow_compute"));
        assert_eq!(read.attempt, 1);
        assert_eq!(read.snapshot.status_message.as_deref(), Some("half way"));
    }
    assert_eq!(a.held_stop_signals(), 0, "A ran none of them");
}
