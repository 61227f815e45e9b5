//! The bound of an owner's log of status changes, on a real server: a
//! stream past 10,100 entries loses its oldest 100 (`LOG_KEPT` and
//! `LOG_BATCH` in `lua/prelude.lua`, not configurable), and a reader behind
//! them is told; a reader whose cursor is past the log's end (the newest
//! entries lost in a failover) reads as truncated from the end.
//!
//! | Case | Reads |
//! |------|-------|
//! | a cursor before any change, or inside the trimmed 100 | `truncated`, resumes at the oldest kept change (the 101st) |
//! | the cursor of the last change trimmed (the 100th) | not `truncated`: nothing was missed; resumes at the 101st |
//! | a cursor after the trimmed part | not `truncated`, resumes right after it |
//! | another owner's log | untouched: its one change, not `truncated` |
//! | a cursor past the end (newest entries lost) | no change, `truncated`, the cursor of the end; resumes there |
//! | a cursor into a log that expired (7 days after its last change) | no change, `truncated`; resumes at the next change |

use mcp_tasks::store::{EventPage, RedisTaskStore};
use mcp_tasks::{TaskId, TaskStore};
use redis::AsyncCommands;

use super::redis_server::RedisServer;
use super::{connect, fresh_prefix, new_task, raw_connection};

/// Changes that make an owner's stream pass its bound once: 10,100 kept
/// before the trim, then one more.
const CHANGES: usize = 10_101;
/// How many of the oldest are trimmed.
const TRIMMED: usize = 100;

async fn read(store: &RedisTaskStore, owner: &str, cursor: &str, limit: usize) -> EventPage {
    store
        .status_events(Some(owner), Some(cursor), limit)
        .await
        .unwrap()
}

fn first(page: &EventPage) -> TaskId {
    page.events.first().expect("a change to read").task.id
}

#[tokio::test]
async fn a_reader_behind_the_trimmed_changes_is_told_and_resumes_at_the_oldest_kept() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    let start = store.status_events(Some("alice"), None, 1).await.unwrap();
    let bobs_start = store.status_events(Some("bob"), None, 1).await.unwrap();
    let bobs = new_task(Some("bob"), None);
    store.create(bobs.clone()).await.unwrap();

    let mut ids = Vec::with_capacity(CHANGES);
    for _ in 0..CHANGES {
        let task = new_task(Some("alice"), None);
        ids.push(task.id);
        store.create(task).await.unwrap();
        if ids.len() == 200 {
            // Cursors taken before the trim: after the 50th, 99th, 100th and 150th.
            break;
        }
    }
    let before = read(&store, "alice", &start.cursor, 1000).await;
    assert_eq!(before.events.len(), 200);
    assert!(!before.truncated);
    let after = |n: usize| before.events[n - 1].cursor.clone();
    let (at_50, at_99, at_100, at_150) = (after(50), after(99), after(100), after(150));
    while ids.len() < CHANGES {
        let task = new_task(Some("alice"), None);
        ids.push(task.id);
        store.create(task).await.unwrap();
    }

    let mut redis = raw_connection(&server).await;
    let streams: Vec<String> = redis.keys("*:events:owned:alice").await.unwrap();
    let kept: usize = redis::cmd("XLEN")
        .arg(&streams[0])
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(kept, CHANGES - TRIMMED, "the oldest {TRIMMED} are trimmed");
    // An owner's log and the trim marks outlive the last change by 7 days,
    // not for ever.
    let week: i64 = 7 * 24 * 3600 * 1000;
    for key in [
        streams[0].clone(),
        streams[0].replace(":events:owned:alice", ":events:dropped"),
    ] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .unwrap();
        assert!(
            ttl > week - 60_000 && ttl <= week,
            "{key} expires in {ttl} ms"
        );
    }

    for (name, cursor) in [
        ("the start", &start.cursor),
        ("the 50th", &at_50),
        ("the 99th", &at_99),
    ] {
        let page = read(&store, "alice", cursor, 10).await;
        assert!(
            page.truncated,
            "a reader after {name} missed changes: {page:?}"
        );
        assert_eq!(first(&page), ids[TRIMMED], "after {name}: the oldest kept");
        assert!(page.more);
    }
    let page = read(&store, "alice", &at_100, 10).await;
    assert!(
        !page.truncated,
        "after the last trimmed, nothing was missed"
    );
    assert_eq!(first(&page), ids[TRIMMED]);
    let page = read(&store, "alice", &at_150, 10).await;
    assert!(
        !page.truncated,
        "after the trimmed part, nothing was missed"
    );
    assert_eq!(first(&page), ids[150]);

    let bob = read(&store, "bob", &bobs_start.cursor, 10).await;
    assert!(!bob.truncated, "another owner's log is untouched: {bob:?}");
    let read_ids: Vec<TaskId> = bob.events.iter().map(|event| event.task.id).collect();
    assert_eq!(read_ids, vec![bobs.id]);
}

#[tokio::test]
async fn a_cursor_past_the_end_reads_as_truncated_from_the_end() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    for _ in 0..5 {
        store.create(new_task(Some("alice"), None)).await.unwrap();
    }
    let ahead = store.status_events(Some("alice"), None, 1).await.unwrap();
    // A failover that lost the newest three entries: the replica promoted
    // never had them, and the reader's cursor is past its stream's end.
    let mut redis = raw_connection(&server).await;
    let streams: Vec<String> = redis.keys("*:events:owned:alice").await.unwrap();
    let newest: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
        .arg(&streams[0])
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(3)
        .query_async(&mut redis)
        .await
        .unwrap();
    let lost: Vec<&str> = newest.iter().map(|(id, _)| id.as_str()).collect();
    let deleted: usize = redis::cmd("XDEL")
        .arg(&streams[0])
        .arg(&lost)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(deleted, 3);

    let page = read(&store, "alice", &ahead.cursor, 10).await;
    assert!(
        page.events.is_empty() && page.truncated && !page.more,
        "{page:?}"
    );
    let end = store.status_events(Some("alice"), None, 1).await.unwrap();
    assert_eq!(page.cursor, end.cursor, "it resumes at the end");
    let next = new_task(Some("alice"), None);
    store.create(next.clone()).await.unwrap();
    let page = read(&store, "alice", &page.cursor, 10).await;
    assert!(!page.truncated);
    assert_eq!(first(&page), next.id, "the next change is read");
}

#[tokio::test]
async fn a_cursor_into_a_log_that_expired_reads_as_truncated_and_resumes() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = connect(&server, &fresh_prefix()).await;
    store.create(new_task(Some("alice"), None)).await.unwrap();
    let seen = store.status_events(Some("alice"), None, 10).await.unwrap();
    // The log outlived the owner's last change by its life: Redis expires it.
    let mut redis = raw_connection(&server).await;
    let streams: Vec<String> = redis.keys("*:events:owned:alice").await.unwrap();
    let _: () = redis.del(&streams[0]).await.unwrap();

    let page = read(&store, "alice", &seen.cursor, 10).await;
    assert!(page.events.is_empty() && page.truncated, "{page:?}");
    let next = new_task(Some("alice"), None);
    store.create(next.clone()).await.unwrap();
    let page = read(&store, "alice", &page.cursor, 10).await;
    assert_eq!(first(&page), next.id, "the next change is read: {page:?}");
}
