//! The log of status changes and the webhook subscriptions
//! (`status_events`, `put_hook` and the rest), for stores that offer task
//! events. Not part of [`run`](super::run): a store may leave them out.
//!
//! | Rule | Why |
//! |------|-----|
//! | a create and each status change are logged once, in order, for their owner only | a subscriber sees every change of its own tasks, and none of another principal's |
//! | a status message alone is not logged (no task logged twice in a row with one status) | progress reports would flood every webhook |
//! | a logged change carries no payload | the log is not a second copy of results |
//! | a cursor resumes exactly after the last change read; a full page says more follow | nothing read twice, nothing skipped |
//! | no cursor reads from now | a new subscriber starts at the present |
//! | a cursor the store did not give out is `InvalidCursor` | a client's typo is its error, not a silent restart |
//! | a refreshed subscription keeps its id and cursor, takes the new secret and expiry | subscribing again does not replay or skip |
//! | the per-owner and total caps hold; a refresh is not counted again | a principal cannot make the store hold unbounded subscriptions |
//! | only its owner removes a subscription | no principal unsubscribes another |
//! | advancing a cursor is compare-and-set | two deliverers never both move it |
//! | a lapsed subscription is not listed, not counted, and is replaced by a new put | an expired subscription is gone |

// Not every test crate that includes the contract runs this suite.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use mcp_tasks::store::{EventPage, Hook};
use mcp_tasks::{
    InputRound, QuotaScope, StoreError, TaskId, TaskState, TaskStatus, TaskStore, Timestamp,
};

use super::wait::wait_until;
use super::{EXPIRY, create, raw};

/// Runs every rule of the log and the subscriptions against stores built
/// by `make`.
pub async fn run<S, F, Fut>(make: F)
where
    S: TaskStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    each_change_is_logged_once_in_order_for_its_owner_only(&make().await).await;
    a_cursor_resumes_exactly_after_and_a_full_page_says_more(&make().await).await;
    no_cursor_reads_from_now(&make().await).await;
    a_cursor_the_store_did_not_give_out_is_invalid(&make().await).await;
    a_refreshed_hook_keeps_its_id_and_cursor(&make().await).await;
    hook_caps_hold_per_owner_and_in_total(&make().await).await;
    only_its_owner_removes_a_hook(&make().await).await;
    advancing_a_hook_is_compare_and_set(&make().await).await;
    a_lapsed_hook_is_gone_and_replaced(&make().await).await;
}

/// The log's end for `owner`: where a reader starting now starts.
async fn now<S: TaskStore>(store: &S, owner: Option<&str>) -> String {
    let page = store.status_events(owner, None, 10).await.unwrap();
    assert!(
        page.events.is_empty() && !page.truncated && !page.more,
        "rule: no cursor reads from now, got {page:?}"
    );
    page.cursor
}

/// Every change of `owner` after `cursor`, page by page of `limit`, and the
/// cursor after them.
async fn read_all<S: TaskStore>(
    store: &S,
    owner: Option<&str>,
    cursor: &str,
    limit: usize,
) -> (Vec<EventPage>, String) {
    let mut pages = Vec::new();
    let mut cursor = cursor.to_owned();
    for _ in 0..100 {
        let page = store
            .status_events(owner, Some(&cursor), limit)
            .await
            .unwrap();
        assert!(!page.truncated, "rule: nothing was dropped, got {page:?}");
        cursor = page.cursor.clone();
        let more = page.more;
        pages.push(page);
        if !more {
            return (pages, cursor);
        }
    }
    panic!("rule: the log ends, 100 pages of {limit} and still more");
}

/// The (task, status) of each change in `pages`.
fn changes(pages: &[EventPage]) -> Vec<(TaskId, TaskStatus)> {
    pages
        .iter()
        .flat_map(|page| &page.events)
        .map(|event| (event.task.id, event.task.status()))
        .collect()
}

fn round() -> InputRound {
    InputRound {
        requests: vec![("1.a".into(), raw(r#"{"method":"roots/list"}"#))],
        resume: raw("{}"),
    }
}

async fn each_change_is_logged_once_in_order_for_its_owner_only<S: TaskStore>(store: &S) {
    let owners = [Some("alice"), Some("bob"), None, Some("")];
    let mut starts = Vec::new();
    for owner in owners {
        starts.push(now(store, owner).await);
    }
    use TaskStatus::{Cancelled, Completed, Failed, InputRequired, Working};
    let one = create(store, Some("alice"), None).await;
    store
        .set_status_message(one, "a quarter".into())
        .await
        .unwrap();
    store.require_input(one, round()).await.unwrap();
    let answer = vec![("1.a".to_owned(), raw("1"))];
    store
        .answer_input(one, Some("alice"), answer)
        .await
        .unwrap();
    store
        .set_status_message(one, "half way".into())
        .await
        .unwrap();
    store
        .complete(one, raw(r#"{"content":["secret"]}"#))
        .await
        .unwrap();
    let bobs = create(store, Some("bob"), None).await;
    let two = create(store, Some("alice"), None).await;
    store.cancel(two, Some("alice")).await.unwrap();
    let three = create(store, Some("alice"), None).await;
    let error = raw(r#"{"code":-32603,"message":"the disk is full"}"#);
    store.fail(three, error).await.unwrap();
    store.complete(bobs, raw("{}")).await.unwrap();
    let anonymous = create(store, None, None).await;

    let (pages, end) = read_all(store, Some("alice"), &starts[0], 100).await;
    let read = changes(&pages);
    let foreign: Vec<_> = read
        .iter()
        .filter(|(id, _)| ![one, two, three].contains(id))
        .collect();
    assert!(
        foreign.is_empty(),
        "rule: an owner reads only its own changes, alice read {foreign:?}"
    );
    let repeated: Vec<_> = read
        .windows(2)
        .filter(|pair| pair[0] == pair[1])
        .map(|pair| pair[0])
        .collect();
    assert!(
        repeated.is_empty(),
        "rule: a status message alone is not logged, {repeated:?} logged twice in a row"
    );
    let expected = vec![
        (one, Working),
        (one, InputRequired),
        (one, Working),
        (one, Completed),
        (two, Working),
        (two, Cancelled),
        (three, Working),
        (three, Failed),
    ];
    assert_eq!(
        read, expected,
        "rule: a create and each status change are logged once, in order, for their owner \
         (a status message alone is not)"
    );
    let events: Vec<_> = pages.iter().flat_map(|page| &page.events).collect();
    let mut ids: Vec<_> = events.iter().map(|event| event.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), events.len(), "rule: each event has its own id");
    match &events[3].task.state {
        TaskState::Completed { result } => assert_eq!(
            result.get(),
            "{}",
            "rule: a logged change carries no payload"
        ),
        other => panic!("expected completed, got {other:?}"),
    }
    assert_eq!(
        events[7].task.status_message.as_deref(),
        Some("the disk is full"),
        "rule: a logged change is the task right after it"
    );
    for (owner, start, expected) in [
        (
            Some("bob"),
            &starts[1],
            vec![(bobs, Working), (bobs, Completed)],
        ),
        (None, &starts[2], vec![(anonymous, Working)]),
        (Some(""), &starts[3], vec![]),
    ] {
        let (pages, _) = read_all(store, owner, start, 100).await;
        assert_eq!(
            changes(&pages),
            expected,
            "rule: an owner reads only its own changes, as {owner:?}"
        );
    }
    // Nothing new: nothing read; a message alone is still nothing.
    let four = create(store, Some("alice"), None).await;
    store.set_status_message(four, "busy".into()).await.unwrap();
    let (pages, _) = read_all(store, Some("alice"), &end, 100).await;
    assert_eq!(
        changes(&pages),
        vec![(four, Working)],
        "rule: a cursor resumes exactly after the last change read"
    );
}

async fn a_cursor_resumes_exactly_after_and_a_full_page_says_more<S: TaskStore>(store: &S) {
    let start = now(store, Some("alice")).await;
    let mut expected = Vec::new();
    for _ in 0..7 {
        let id = create(store, Some("alice"), None).await;
        create(store, Some("bob"), None).await;
        store.complete(id, raw("{}")).await.unwrap();
        expected.extend([(id, TaskStatus::Working), (id, TaskStatus::Completed)]);
    }
    let (pages, end) = read_all(store, Some("alice"), &start, 3).await;
    assert_eq!(
        changes(&pages),
        expected,
        "rule: paging visits every change once, in order"
    );
    let sizes: Vec<usize> = pages.iter().map(|page| page.events.len()).collect();
    assert_eq!(
        sizes,
        [3, 3, 3, 3, 2],
        "rule: a page holds at most limit changes"
    );
    assert!(
        pages[..4].iter().all(|page| page.more),
        "rule: a full page with more to come says more"
    );
    let again = store
        .status_events(Some("alice"), Some(&end), 10)
        .await
        .unwrap();
    assert!(
        again.events.is_empty() && !again.more && !again.truncated,
        "rule: the end reads empty, got {again:?}"
    );
    let first = store
        .status_events(Some("alice"), Some(&start), 1)
        .await
        .unwrap();
    assert_eq!(changes(std::slice::from_ref(&first)), expected[..1]);
    let second = store
        .status_events(Some("alice"), Some(&first.events[0].cursor), 1)
        .await
        .unwrap();
    assert_eq!(
        changes(&[second]),
        expected[1..2],
        "rule: an event's own cursor resumes right after it"
    );
}

async fn no_cursor_reads_from_now<S: TaskStore>(store: &S) {
    let before = create(store, Some("alice"), None).await;
    store.complete(before, raw("{}")).await.unwrap();
    let start = now(store, Some("alice")).await;
    let after = create(store, Some("alice"), None).await;
    let (pages, _) = read_all(store, Some("alice"), &start, 10).await;
    assert_eq!(
        changes(&pages),
        vec![(after, TaskStatus::Working)],
        "rule: no cursor reads from now, not from the beginning"
    );
}

async fn a_cursor_the_store_did_not_give_out_is_invalid<S: TaskStore>(store: &S) {
    create(store, Some("alice"), None).await;
    for garbage in ["", "garbage", "12", "-", "1-2", "s", "m", "e1-1"] {
        let read = store.status_events(Some("alice"), Some(garbage), 10).await;
        assert!(
            matches!(read, Err(StoreError::InvalidCursor)),
            "rule: a cursor the store did not give out is InvalidCursor, {garbage:?} gave {read:?}"
        );
    }
}

/// A subscription of `owner` with id `sub_<n>`, living `life` (`None`: ever).
fn hook(owner: Option<&str>, n: u32, life: Option<Duration>, cursor: &str) -> Hook {
    Hook {
        id: format!("sub_{n:032x}"),
        owner: owner.map(str::to_owned),
        url: format!("https://example.com/hooks/{n}"),
        name: "task.status".into(),
        arguments: "{}".into(),
        secret: format!("whsec_{n}"),
        expires_at: life.map(|life| Timestamp::now().saturating_add(life)),
        cursor: cursor.to_owned(),
    }
}

/// The ids of the subscriptions listed, sorted.
async fn listed<S: TaskStore>(store: &S) -> Vec<String> {
    let mut ids: Vec<_> = store
        .hooks()
        .await
        .unwrap()
        .into_iter()
        .map(|hook| hook.id)
        .collect();
    ids.sort();
    ids
}

async fn a_refreshed_hook_keeps_its_id_and_cursor<S: TaskStore>(store: &S) {
    let day = Some(Duration::from_secs(86_400));
    let first = hook(Some("alice"), 1, day, "c0");
    let stored = store.put_hook(first.clone(), 10, 10).await.unwrap();
    assert_eq!(stored, first, "rule: a new subscription is stored as given");
    assert_eq!(store.hooks().await.unwrap(), vec![first.clone()]);
    assert!(store.advance_hook(&first.id, "c0", "c1").await.unwrap());
    let mut again = hook(Some("alice"), 1, Some(Duration::from_secs(172_800)), "c9");
    again.secret = "whsec_new".into();
    let refreshed = store.put_hook(again.clone(), 10, 10).await.unwrap();
    assert_eq!(
        (refreshed.id.as_str(), refreshed.cursor.as_str()),
        (first.id.as_str(), "c1"),
        "rule: a refreshed subscription keeps its id and cursor"
    );
    assert_eq!(
        (refreshed.secret.as_str(), refreshed.expires_at),
        ("whsec_new", again.expires_at),
        "rule: a refreshed subscription takes the new secret and expiry"
    );
    assert_eq!(
        store.hooks().await.unwrap(),
        vec![refreshed],
        "rule: a refresh stores no second subscription"
    );
}

async fn hook_caps_hold_per_owner_and_in_total<S: TaskStore>(store: &S) {
    let put = |hook: Hook| store.put_hook(hook, 2, 3);
    put(hook(Some("alice"), 1, None, "c")).await.unwrap();
    put(hook(Some("alice"), 2, None, "c")).await.unwrap();
    let third = put(hook(Some("alice"), 3, None, "c")).await;
    assert!(
        matches!(third, Err(StoreError::QuotaExceeded(QuotaScope::Owner))),
        "rule: the per-owner cap holds, got {third:?}"
    );
    put(hook(Some("bob"), 4, None, "c")).await.unwrap();
    let fifth = put(hook(None, 5, None, "c")).await;
    assert!(
        matches!(fifth, Err(StoreError::QuotaExceeded(QuotaScope::Total))),
        "rule: the total cap holds, got {fifth:?}"
    );
    put(hook(Some("alice"), 2, None, "c"))
        .await
        .expect("rule: a refresh is not counted again");
    assert_eq!(
        listed(store).await.len(),
        3,
        "rule: a refused subscription is not stored"
    );
}

async fn only_its_owner_removes_a_hook<S: TaskStore>(store: &S) {
    let alices = hook(Some("alice"), 1, None, "c");
    store.put_hook(alices.clone(), 10, 10).await.unwrap();
    for other in [Some("bob"), None, Some("")] {
        assert!(
            !store.remove_hook(other, &alices.id).await.unwrap(),
            "rule: only its owner removes a subscription, not {other:?}"
        );
    }
    assert_eq!(listed(store).await, vec![alices.id.clone()]);
    assert!(store.remove_hook(Some("alice"), &alices.id).await.unwrap());
    assert!(
        !store.remove_hook(Some("alice"), &alices.id).await.unwrap(),
        "rule: a removed subscription is gone"
    );
    assert!(listed(store).await.is_empty());
}

async fn advancing_a_hook_is_compare_and_set<S: TaskStore>(store: &S) {
    let one = hook(Some("alice"), 1, None, "c0");
    store.put_hook(one.clone(), 10, 10).await.unwrap();
    assert!(store.advance_hook(&one.id, "c0", "c1").await.unwrap());
    assert!(
        !store.advance_hook(&one.id, "c0", "c2").await.unwrap(),
        "rule: a cursor moved by another is not moved again from where it was"
    );
    assert!(!store.advance_hook("sub_unknown", "c0", "c1").await.unwrap());
    let cursors: Vec<_> = store
        .hooks()
        .await
        .unwrap()
        .into_iter()
        .map(|hook| hook.cursor)
        .collect();
    assert_eq!(cursors, vec!["c1"], "rule: advancing is compare-and-set");
}

async fn a_lapsed_hook_is_gone_and_replaced<S: TaskStore>(store: &S) {
    let short = hook(Some("alice"), 1, Some(Duration::from_millis(200)), "c0");
    store.put_hook(short.clone(), 1, 10).await.unwrap();
    assert!(store.advance_hook(&short.id, "c0", "c1").await.unwrap());
    wait_until(
        "rule: a lapsed subscription is not listed",
        EXPIRY,
        || async { listed(store).await.is_empty() },
    )
    .await;
    assert!(
        !store.remove_hook(Some("alice"), &short.id).await.unwrap(),
        "rule: a lapsed subscription is gone"
    );
    let other = hook(Some("alice"), 2, None, "c0");
    store
        .put_hook(other.clone(), 1, 10)
        .await
        .expect("rule: a lapsed subscription is not counted");
    let fresh = hook(Some("alice"), 1, None, "c5");
    let stored = store.put_hook(fresh.clone(), 2, 10).await.unwrap();
    assert_eq!(
        stored, fresh,
        "rule: a lapsed subscription is replaced as given, its old cursor forgotten"
    );
    assert_eq!(listed(store).await, vec![fresh.id, other.id]);
}
