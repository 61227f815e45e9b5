//! `events/poll` of the layer's event type: one read of the caller's log.
//!
//! | Asked | Answered |
//! |-------|----------|
//! | `cursor` absent or `null` | no event, the cursor of the log's end: the subscription starts now |
//! | a cursor | the wanted changes after it (at most `maxEvents`, at most 1 000), the cursor after them, `hasMore` when the page was full |
//! | changes dropped from the log after the cursor, or skipped by `maxAgeMs` | `truncated: true`; the client reads its tasks again |
//! | a cursor this server did not give out | `-32602` |
//!
//! `nextPollMs` is the layer's `poll_interval` (at least 1 s).

use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;

use super::args::Asked;
use super::occurrence::{Occurrence, wanted};
use super::{Events, log_failed};
use crate::runtime::Runtime;
use crate::task::Timestamp;
use crate::wire::jsonrpc::Reply;

/// The most events one read returns, whatever `maxEvents` asks.
pub(super) const MOST: usize = 1_000;

#[derive(Serialize)]
struct Polled<'a> {
    #[serde(rename = "resultType")]
    result_type: &'static str,
    events: Vec<Occurrence<'a>>,
    cursor: &'a str,
    truncated: bool,
    #[serde(rename = "hasMore")]
    has_more: bool,
    #[serde(rename = "nextPollMs")]
    next_poll_ms: u64,
}

/// The earliest change `max_age` lets through, from now.
pub(super) fn since(max_age: Option<Duration>) -> Option<Timestamp> {
    let age = u64::try_from(max_age?.as_millis()).unwrap_or(u64::MAX);
    Some(Timestamp::from_millis(
        Timestamp::now().as_millis().saturating_sub(age),
    ))
}

pub(super) async fn poll(
    runtime: &Runtime,
    events: &Events,
    owner: Option<&str>,
    id: &RawValue,
    asked: Asked,
) -> Reply {
    let limit = asked
        .max_events
        .unwrap_or(events.config.max_events)
        .clamp(1, MOST);
    let after = asked.cursor.as_deref();
    let page = match runtime.store.status_events(owner, after, limit).await {
        Ok(page) => page,
        Err(error) => return log_failed(id, &error),
    };
    let (kept, aged) = if after.is_some() {
        wanted(&page.events, &asked.filter, since(asked.max_age))
    } else {
        (Vec::new(), false)
    };
    let name = &*events.config.name;
    let next_poll = runtime
        .config
        .poll_interval
        .unwrap_or(Duration::from_secs(1))
        .max(Duration::from_secs(1));
    Reply::result(
        id,
        Polled {
            result_type: "complete",
            events: kept
                .into_iter()
                .map(|event| Occurrence::polled(name, event))
                .collect(),
            cursor: &page.cursor,
            truncated: page.truncated || aged,
            has_more: page.more,
            next_poll_ms: u64::try_from(next_poll.as_millis()).unwrap_or(u64::MAX),
        },
    )
}
