//! `GET /console/api/feed`: the tasks that change, as server-sent events,
//! so that the page never reads the whole list again.
//!
//! It follows the store's change feed ([`Admin::watch`]): the ids that
//! changed within [`BATCH`] (at most [`BATCH_IDS`]) are read again and sent
//! as one event `rows`, `{"rows": [...], "gone": [ids], "now": ms}`; a task
//! that is no more (deleted, expired) is in `gone`. When the store says
//! changes were missed, or more than [`BATCH_IDS`] changed at once, the
//! event is `resync`: the page reads its page again. A store without a feed
//! sends `nofeed` once and the page reads its page every few seconds. A
//! comment line every [`HEARTBEAT`] keeps proxies from closing the stream.
//!
//! At most [`MAX_FEEDS`] feeds are open at once; one more gets `503`.
//! A console that stops reading holds at most one batch: the next is read
//! only once the last was taken.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{StreamExt, stream};
use mcp_tasks::wire::sse::{self, named_event};
use mcp_tasks::{Admin, AdminWatch, TaskChange, TaskId, Timestamp};

use super::Shared;
use super::access::refuse;
use super::row::Row;

/// How long changes are gathered before they are read and sent.
pub const BATCH: Duration = Duration::from_millis(200);
/// The most ids one batch reads; more is a `resync`.
pub const BATCH_IDS: usize = 500;
/// How often an idle stream sends a comment line.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// Feeds open at once.
pub const MAX_FEEDS: usize = 16;

/// The count of open feeds.
#[derive(Default)]
pub(crate) struct Feeds {
    open: Arc<AtomicUsize>,
}

/// One open feed's place, given back when its stream is dropped.
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Feeds {
    fn take(&self) -> Option<Place> {
        let taken = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < MAX_FEEDS).then_some(open + 1)
            });
        taken.ok().map(|_| Place(self.open.clone()))
    }

    /// Feeds open now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

/// What a feed holds between two events.
struct Follow {
    admin: Admin,
    watch: Option<AdminWatch>,
    _place: Place,
}

/// The handler.
pub(crate) async fn feed(axum::extract::State(state): Shared, headers: HeaderMap) -> Response {
    if state.access.who(&headers).is_none() {
        return refuse(StatusCode::UNAUTHORIZED, "no operator credential");
    }
    let Some(place) = state.feeds.take() else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many consoles are open",
        );
    };
    let follow = Follow {
        admin: state.admin.clone(),
        watch: state.admin.watch(),
        _place: place,
    };
    // The first event says whether changes will follow.
    let first = if follow.watch.is_some() {
        "ready"
    } else {
        "nofeed"
    };
    let first = stream::once(std::future::ready(named_event(Some(first), b"{}")));
    let changes = stream::unfold(follow, |mut follow| async move {
        let event = follow.next().await?;
        Some((event, follow))
    });
    let events = first.chain(changes).map(Ok::<_, std::convert::Infallible>);
    let mut response = Response::new(Body::from_stream(events));
    sse::unbuffered(response.headers_mut());
    response.into_response()
}

impl Follow {
    /// The next bytes of the stream; `None` ends it (the store's feed
    /// closed).
    async fn next(&mut self) -> Option<Bytes> {
        let Some(watch) = self.watch.as_mut() else {
            tokio::time::sleep(HEARTBEAT).await;
            return Some(Bytes::from_static(b": heartbeat\n\n"));
        };
        let first = match tokio::time::timeout(HEARTBEAT, watch.next()).await {
            Err(_) => return Some(Bytes::from_static(b": heartbeat\n\n")),
            Ok(None) => return None,
            Ok(Some(change)) => change,
        };
        let mut ids = HashSet::new();
        let mut missed = !note(&mut ids, first);
        let gathering = tokio::time::sleep(BATCH);
        tokio::pin!(gathering);
        while !missed {
            tokio::select! {
                () = &mut gathering => break,
                change = watch.next() => match change {
                    None => break,
                    Some(change) => missed = !note(&mut ids, change),
                },
            }
        }
        if missed {
            return Some(named_event(Some("resync"), b"{}"));
        }
        Some(self.read(ids).await)
    }

    /// The `rows` event of the tasks `ids`, read again.
    async fn read(&self, ids: HashSet<TaskId>) -> Bytes {
        let now = Timestamp::now();
        let mut rows = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        for id in ids {
            match self.admin.get(id).await {
                Ok(Some(task)) => rows.push(Row::of(&task, now)),
                Ok(None) => gone.push(id.to_string()),
                Err(error) => {
                    tracing::debug!(target: "mcp_tasks_gateway::console", %error, task = %id, "a changed task could not be read");
                    return named_event(Some("resync"), b"{}");
                }
            }
        }
        let body = serde_json::json!({ "rows": rows, "gone": gone, "now": now.as_millis() });
        named_event(Some("rows"), body.to_string().as_bytes())
    }
}

/// Adds a change to the batch; `false` when it cannot be followed id by id
/// (changes were missed, or the batch is full).
fn note(ids: &mut HashSet<TaskId>, change: TaskChange) -> bool {
    match change {
        TaskChange::Changed(id) if ids.len() < BATCH_IDS => {
            ids.insert(id);
            true
        }
        _ => false,
    }
}
