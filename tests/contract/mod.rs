//! The contract every [`TaskStore`] must keep, as one reusable suite.
//!
//! `run(make)` calls each rule with a fresh store from `make` and panics with
//! the rule's name on the first violation. Store tests call it once per store.
//! The quota rules are in `quota`; the operator's methods, which a store
//! may leave out, have their own suite in `admin`; so do the log of status
//! changes and the webhook subscriptions (`events`).

pub mod admin;
pub mod changes;
pub mod events;
mod quota;
#[path = "../support/wait.rs"]
pub mod wait;

use std::future::Future;
use std::time::Duration;

use mcp_tasks::{
    CancelOutcome, InputProgress, InputRound, NewTask, Quota, StoreError, TaskId, TaskList,
    TaskState, TaskStatus, TaskStore, Timestamp,
};
use serde_json::value::RawValue;
use wait::wait_until;

/// How long an expired task may still read as live: far more than a store
/// takes, yet a store that never expires fails in seconds (`tests/stores/teeth.rs`).
const EXPIRY: Duration = Duration::from_secs(5);

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

fn new_task(owner: Option<&str>, ttl: Option<Duration>) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        owner: owner.map(str::to_owned),
        created_at: Timestamp::now(),
        ttl,
        poll_interval: Some(Duration::from_millis(250)),
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    }
}

async fn create<S: TaskStore>(store: &S, owner: Option<&str>, ttl: Option<Duration>) -> TaskId {
    store
        .create(new_task(owner, ttl))
        .await
        .unwrap()
        .snapshot
        .id
}

/// Runs every rule against stores built by `make`.
pub async fn run<S, F, Fut>(make: F)
where
    S: TaskStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    a_created_task_is_readable_at_once(&make().await).await;
    terminal_states_never_change(&make().await).await;
    a_late_outcome_never_overwrites_cancelled(&make().await).await;
    cancelling_a_terminal_task_changes_nothing(&make().await).await;
    a_failed_task_reports_its_error_message(&make().await).await;
    ownership_is_plain_equality(&make().await).await;
    an_expired_task_reads_like_an_unknown_one(&make().await).await;
    the_ttl_runs_from_creation(&make().await).await;
    input_rounds_record_only_outstanding_keys(&make().await).await;
    status_messages_change_only_live_tasks(&make().await).await;
    input_is_asked_only_of_working_tasks(&make().await).await;
    a_resumed_call_is_stopped_by_cancel(&make().await).await;
    list_shows_only_the_owners_tasks(&make().await).await;
    list_pages_visit_every_task_once_in_creation_order(&make().await).await;
    list_refuses_a_cursor_it_did_not_give_out(&make().await).await;
    list_never_shows_expired_tasks(&make().await).await;
    quota::run(&make).await;
}

async fn a_created_task_is_readable_at_once<S: TaskStore>(store: &S) {
    let task = new_task(Some("alice"), Some(Duration::from_secs(60)));
    let created = store.create(task.clone()).await.unwrap();
    assert_eq!(created.snapshot.status(), TaskStatus::Working);
    let read = store.get(task.id, Some("alice")).await.unwrap();
    let read = read.expect("rule: a created task is readable at once");
    assert_eq!(read.id, task.id);
    assert_eq!(read.created_at, task.created_at);
    assert_eq!(read.ttl, Some(Duration::from_secs(60)));
}

async fn terminal_states_never_change<S: TaskStore>(store: &S) {
    let id = create(store, None, None).await;
    store.complete(id, raw(r#"{"content":[]}"#)).await.unwrap();
    let again = store.fail(id, raw(r#"{"code":1,"message":"late"}"#)).await;
    assert!(
        matches!(
            again,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::Completed,
                ..
            })
        ),
        "rule: terminal states never change, got {again:?}"
    );
    let again = store.complete(id, raw(r#"{"content":["other"]}"#)).await;
    assert!(again.is_err(), "rule: a second outcome is refused");
    let read = store.get(id, None).await.unwrap().unwrap();
    match read.state {
        TaskState::Completed { result } => assert_eq!(result.get(), r#"{"content":[]}"#),
        other => panic!("rule: terminal states never change, now {other:?}"),
    }
}

async fn a_late_outcome_never_overwrites_cancelled<S: TaskStore>(store: &S) {
    let task = new_task(None, None);
    let created = store.create(task.clone()).await.unwrap();
    let outcome = store.cancel(task.id, None).await.unwrap();
    assert!(matches!(outcome, Some(CancelOutcome::Cancelled(_))));
    assert!(
        created.stop.is_cancelled(),
        "rule: cancel fires the stop signal"
    );
    let late = store.complete(task.id, raw("{}")).await;
    assert!(
        late.is_err(),
        "rule: a late outcome never overwrites cancelled, got {late:?}"
    );
    let read = store.get(task.id, None).await.unwrap().unwrap();
    assert_eq!(
        read.status(),
        TaskStatus::Cancelled,
        "rule: cancelled stays cancelled"
    );
}

async fn a_failed_task_reports_its_error_message<S: TaskStore>(store: &S) {
    let id = create(store, None, None).await;
    store
        .fail(id, raw(r#"{"code":-32603,"message":"the disk is full"}"#))
        .await
        .unwrap();
    let read = store.get(id, None).await.unwrap().unwrap();
    assert_eq!(
        read.status_message.as_deref(),
        Some("the disk is full"),
        "rule: a failed task's status message is its error's message"
    );
}

async fn cancelling_a_terminal_task_changes_nothing<S: TaskStore>(store: &S) {
    let id = create(store, None, None).await;
    store
        .fail(id, raw(r#"{"code":-1,"message":"x"}"#))
        .await
        .unwrap();
    let outcome = store.cancel(id, None).await.unwrap();
    assert!(
        matches!(outcome, Some(CancelOutcome::AlreadyTerminal(ref t)) if t.status() == TaskStatus::Failed),
        "rule: cancelling a terminal task changes nothing, got {outcome:?}"
    );
}

async fn ownership_is_plain_equality<S: TaskStore>(store: &S) {
    let owned = create(store, Some("alice"), None).await;
    let unowned = create(store, None, None).await;
    assert!(store.get(owned, Some("alice")).await.unwrap().is_some());
    assert!(
        store.get(owned, Some("bob")).await.unwrap().is_none(),
        "rule: no cross-owner reads"
    );
    assert!(
        store.get(owned, None).await.unwrap().is_none(),
        "rule: anonymous is not the owner"
    );
    assert!(
        store.get(unowned, Some("alice")).await.unwrap().is_none(),
        "rule: no upgrade"
    );
    assert!(
        store.cancel(owned, Some("bob")).await.unwrap().is_none(),
        "rule: no cross-owner cancel"
    );
    let read = store.get(owned, Some("alice")).await.unwrap().unwrap();
    assert_eq!(
        read.status(),
        TaskStatus::Working,
        "rule: a refused cancel changes nothing"
    );
    let answer = store
        .answer_input(owned, Some("bob"), vec![])
        .await
        .unwrap();
    assert!(answer.is_none(), "rule: no cross-owner updates");
}

async fn an_expired_task_reads_like_an_unknown_one<S: TaskStore>(store: &S) {
    let task = new_task(Some("alice"), Some(Duration::from_millis(100)));
    let created = store.create(task.clone()).await.unwrap();
    wait_until("rule: expired is unknown", EXPIRY, || async {
        store.get(task.id, Some("alice")).await.unwrap().is_none()
    })
    .await;
    let cancel = store.cancel(task.id, Some("alice")).await.unwrap();
    assert!(
        cancel.is_none(),
        "rule: expired is unknown to cancel, got {cancel:?}"
    );
    let late = store.complete(task.id, raw("{}")).await;
    assert!(
        matches!(late, Err(StoreError::NotFound)),
        "rule: expired is unknown to an outcome, got {late:?}"
    );
    let stopped = tokio::time::timeout(EXPIRY, created.stop.cancelled()).await;
    assert!(
        stopped.is_ok(),
        "rule: expiry fires the stop signal without a manual sweep"
    );
}

async fn the_ttl_runs_from_creation<S: TaskStore>(store: &S) {
    // Created (by the layer's clock) ten seconds ago with a five-second TTL:
    // already expired, whenever the store itself received it.
    let mut task = new_task(None, Some(Duration::from_secs(5)));
    task.created_at = Timestamp::from_millis(Timestamp::now().as_millis() - 10_000);
    let _ = store.create(task.clone()).await;
    let read = store.get(task.id, None).await.unwrap();
    assert!(
        read.is_none(),
        "rule: the TTL runs from creation, got {read:?}"
    );
}

async fn input_rounds_record_only_outstanding_keys<S: TaskStore>(store: &S) {
    let id = create(store, None, None).await;
    let round = InputRound {
        requests: vec![
            ("1.a".into(), raw(r#"{"method":"elicitation/create"}"#)),
            ("1.b".into(), raw(r#"{"method":"roots/list"}"#)),
        ],
        resume: raw(r#"{"state":"s"}"#),
    };
    store.require_input(id, round).await.unwrap();
    let progress = store
        .answer_input(
            id,
            None,
            vec![("1.a".into(), raw("1")), ("nope".into(), raw("2"))],
        )
        .await
        .unwrap();
    assert!(matches!(progress, Some(InputProgress::Pending)));
    let read = store.get(id, None).await.unwrap().unwrap();
    match read.state {
        TaskState::InputRequired { requests } => {
            assert_eq!(
                requests.get(),
                r#"{"1.b":{"method":"roots/list"}}"#,
                "rule: only unanswered keys are listed"
            )
        }
        other => panic!("expected input_required, got {other:?}"),
    }
    let progress = store
        .answer_input(
            id,
            None,
            vec![("1.a".into(), raw("3")), ("1.b".into(), raw("4"))],
        )
        .await
        .unwrap();
    match progress {
        Some(InputProgress::RoundComplete {
            answers, resume, ..
        }) => {
            let answers: Vec<_> = answers.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
            assert_eq!(
                answers,
                vec![("1.a", "1"), ("1.b", "4")],
                "rule: answered keys are not answered again"
            );
            assert_eq!(resume.get(), r#"{"state":"s"}"#);
        }
        other => panic!("expected a complete round, got {other:?}"),
    }
    let read = store.get(id, None).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Working);
}

async fn status_messages_change_only_live_tasks<S: TaskStore>(store: &S) {
    let id = create(store, None, None).await;
    store
        .set_status_message(id, "half way".into())
        .await
        .unwrap();
    let read = store.get(id, None).await.unwrap().unwrap();
    assert_eq!(read.status_message.as_deref(), Some("half way"));
    store.complete(id, raw("{}")).await.unwrap();
    let late = store.set_status_message(id, "later".into()).await;
    assert!(
        matches!(
            late,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::Completed,
                to: TaskStatus::Completed
            })
        ),
        "rule: a terminal task's message never changes, got {late:?}"
    );
    let read = store.get(id, None).await.unwrap().unwrap();
    assert_eq!(read.status_message.as_deref(), Some("half way"));
    let unknown = TaskId::generate().unwrap();
    assert!(matches!(
        store.set_status_message(unknown, "x".into()).await,
        Err(StoreError::NotFound)
    ));
}

async fn input_is_asked_only_of_working_tasks<S: TaskStore>(store: &S) {
    let round = || InputRound {
        requests: vec![("1.a".into(), raw("{}"))],
        resume: raw("{}"),
    };
    let id = create(store, None, None).await;
    let progress = store.answer_input(id, None, vec![]).await.unwrap();
    assert!(
        matches!(progress, Some(InputProgress::NotWaiting)),
        "rule: a working task takes no answers"
    );
    store.require_input(id, round()).await.unwrap();
    let again = store.require_input(id, round()).await;
    assert!(
        matches!(
            again,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::InputRequired,
                to: TaskStatus::InputRequired
            })
        ),
        "rule: one round at a time, got {again:?}"
    );
    store.cancel(id, None).await.unwrap();
    let progress = store
        .answer_input(id, None, vec![("1.a".into(), raw("1"))])
        .await
        .unwrap();
    assert!(
        matches!(progress, Some(InputProgress::NotWaiting)),
        "rule: a cancelled task takes no answers"
    );
    let read = store.get(id, None).await.unwrap().unwrap();
    assert_eq!(read.status(), TaskStatus::Cancelled);
    assert!(matches!(
        store.require_input(id, round()).await,
        Err(StoreError::InvalidTransition {
            from: TaskStatus::Cancelled,
            ..
        })
    ));
    let unknown = TaskId::generate().unwrap();
    assert!(matches!(
        store.require_input(unknown, round()).await,
        Err(StoreError::NotFound)
    ));
    assert!(
        store
            .answer_input(unknown, None, vec![])
            .await
            .unwrap()
            .is_none()
    );
}

async fn a_resumed_call_is_stopped_by_cancel<S: TaskStore>(store: &S) {
    let id = create(store, Some("alice"), Some(Duration::from_secs(60))).await;
    let round = InputRound {
        requests: vec![("1.a".into(), raw("{}"))],
        resume: raw("{}"),
    };
    store.require_input(id, round).await.unwrap();
    let progress = store
        .answer_input(id, Some("alice"), vec![("1.a".into(), raw("1"))])
        .await
        .unwrap();
    let Some(InputProgress::RoundComplete { stop, .. }) = progress else {
        panic!("expected a complete round, got {progress:?}");
    };
    assert!(!stop.is_cancelled());
    store.cancel(id, Some("alice")).await.unwrap();
    assert!(
        stop.is_cancelled(),
        "rule: cancel fires the stop signal of the resumed call"
    );
}

/// A task of `owner` created `ago_ms` before `base`, without TTL.
fn task_at(owner: Option<&str>, base: Timestamp, ago_ms: u64) -> NewTask {
    let mut task = new_task(owner, None);
    task.created_at = Timestamp::from_millis(base.as_millis() - ago_ms);
    task
}

/// The ids of one page, in the order listed.
fn ids(page: &TaskList) -> Vec<TaskId> {
    page.tasks.iter().map(|task| task.id).collect()
}

/// Every page of `owner`'s listing with `limit`, following the cursors.
async fn all_pages<S: TaskStore>(store: &S, owner: Option<&str>, limit: usize) -> Vec<TaskList> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let page = store.list(owner, cursor.as_deref(), limit).await.unwrap();
        cursor = page.next_cursor.clone();
        pages.push(page);
        if cursor.is_none() {
            return pages;
        }
    }
    panic!("rule: the listing ends, 100 pages of {limit} and still a cursor");
}

async fn list_shows_only_the_owners_tasks<S: TaskStore>(store: &S) {
    let mut alice = Vec::new();
    let mut bob = Vec::new();
    let mut unowned = Vec::new();
    for _ in 0..3 {
        alice.push(create(store, Some("alice"), None).await);
        bob.push(create(store, Some("bob"), None).await);
        unowned.push(create(store, None, Some(Duration::from_secs(60))).await);
    }
    // An empty principal is a principal, not the absence of one.
    let empty = create(store, Some(""), None).await;
    for (owner, expected) in [
        (Some("alice"), &alice),
        (Some("bob"), &bob),
        (None, &unowned),
        (Some(""), &vec![empty]),
    ] {
        let page = store.list(owner, None, 100).await.unwrap();
        let mut listed = ids(&page);
        listed.sort();
        let mut expected = expected.clone();
        expected.sort();
        assert_eq!(
            listed, expected,
            "rule: list shows only the owner's tasks, as {owner:?}"
        );
        assert!(
            page.next_cursor.is_none(),
            "rule: the last page has no cursor, as {owner:?}"
        );
    }
    let nobody = store.list(Some("mallory"), None, 100).await.unwrap();
    assert!(
        nobody.tasks.is_empty() && nobody.next_cursor.is_none(),
        "rule: list shows only the owner's tasks, mallory has none, got {nobody:?}"
    );
    // What is listed is the task as it is now.
    store
        .complete(alice[1], raw(r#"{"content":[]}"#))
        .await
        .unwrap();
    store.cancel(bob[0], Some("bob")).await.unwrap();
    let page = store.list(Some("alice"), None, 100).await.unwrap();
    let done = page.tasks.iter().find(|task| task.id == alice[1]);
    assert_eq!(
        done.map(|task| task.status()),
        Some(TaskStatus::Completed),
        "rule: list shows each task as get would"
    );
    let page = store.list(Some("bob"), None, 100).await.unwrap();
    assert_eq!(
        page.tasks.len(),
        3,
        "rule: terminal tasks are still listed until they expire"
    );
}

async fn list_pages_visit_every_task_once_in_creation_order<S: TaskStore>(store: &S) {
    let base = Timestamp::now();
    let mut expected = Vec::new();
    // Seven tasks of alice, created out of order, two in the same
    // millisecond (ordered by id), with bob's tasks in between.
    for ago in [5_000, 1_000, 3_000, 3_000, 2_000, 4_000, 6_000] {
        let task = task_at(Some("alice"), base, ago);
        expected.push((task.created_at, task.id));
        store.create(task).await.unwrap();
        store
            .create(task_at(Some("bob"), base, ago + 500))
            .await
            .unwrap();
    }
    expected.sort_by_key(|&(created, id)| (created, id.as_u128()));
    let expected: Vec<TaskId> = expected.into_iter().map(|(_, id)| id).collect();

    let pages = all_pages(store, Some("alice"), 2).await;
    let listed: Vec<TaskId> = pages.iter().flat_map(ids).collect();
    assert_eq!(
        listed, expected,
        "rule: paging visits every task exactly once, oldest first (creation time, then id)"
    );
    assert!(
        pages.iter().all(|page| page.tasks.len() <= 2),
        "rule: a page holds at most limit tasks"
    );
    assert!(
        pages.iter().all(|page| !page.tasks.is_empty()),
        "rule: the last page has no cursor (no empty page follows a full one), got {} pages",
        pages.len()
    );
    let whole = store.list(Some("alice"), None, 7).await.unwrap();
    assert_eq!(ids(&whole), expected);
    assert!(
        whole.next_cursor.is_none(),
        "rule: the last page has no cursor, even when it is full"
    );
    let one = store.list(Some("alice"), None, 0).await.unwrap();
    assert_eq!(
        ids(&one),
        expected[..1],
        "rule: the limit is clamped to 1..=1000"
    );
    let many = store.list(Some("alice"), None, usize::MAX).await.unwrap();
    assert_eq!(
        ids(&many),
        expected,
        "rule: the limit is clamped to 1..=1000"
    );
}

async fn list_refuses_a_cursor_it_did_not_give_out<S: TaskStore>(store: &S) {
    for _ in 0..3 {
        create(store, Some("alice"), None).await;
    }
    for garbage in ["", "garbage", "12-", "-", "1-xyz", "1-0123"] {
        let listed = store.list(Some("alice"), Some(garbage), 10).await;
        assert!(
            matches!(listed, Err(StoreError::InvalidCursor)),
            "rule: a cursor the store did not give out is InvalidCursor, {garbage:?} gave {listed:?}"
        );
    }
    let first = store.list(Some("alice"), None, 1).await.unwrap();
    let cursor = first
        .next_cursor
        .expect("rule: a page with more to come has a cursor");
    let rest = store.list(Some("alice"), Some(&cursor), 10).await.unwrap();
    assert_eq!(
        rest.tasks.len(),
        2,
        "rule: a cursor the store gave out is accepted"
    );
}

async fn list_never_shows_expired_tasks<S: TaskStore>(store: &S) {
    let base = Timestamp::now();
    // Created (by the layer's clock) ten seconds ago, five-second TTL: expired
    // before the store ever saw it.
    let mut stale = task_at(Some("alice"), base, 10_000);
    stale.ttl = Some(Duration::from_secs(5));
    let _ = store.create(stale).await;
    // The oldest live task, with 500 ms left to live.
    let mut short_first = task_at(Some("alice"), base, 3_000);
    short_first.ttl = Some(Duration::from_millis(3_500));
    let older = task_at(Some("alice"), base, 2_000);
    let newer = task_at(Some("alice"), base, 1_000);
    for task in [&short_first, &older, &newer] {
        store.create(task.clone()).await.unwrap();
    }
    let first = store.list(Some("alice"), None, 1).await.unwrap();
    assert_eq!(
        ids(&first),
        vec![short_first.id],
        "rule: expired tasks are not listed (a task expired at creation showed)"
    );
    // Once it expired, it is no longer listed.
    wait_until("rule: expired tasks are not listed", EXPIRY, || async {
        let listed = ids(&store.list(Some("alice"), None, 100).await.unwrap());
        (listed == [older.id, newer.id]).then_some(()).ok_or(listed)
    })
    .await;
    let cursor = first.next_cursor.expect("more tasks followed the first");
    let rest = store.list(Some("alice"), Some(&cursor), 100).await.unwrap();
    assert_eq!(
        ids(&rest),
        vec![older.id, newer.id],
        "rule: a cursor outlives the task it came from"
    );
    assert!(
        rest.next_cursor.is_none(),
        "rule: the last page has no cursor"
    );
}
