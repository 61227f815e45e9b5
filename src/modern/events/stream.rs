//! `events/stream` of the layer's event type: one SSE stream per
//! subscription, fed from the caller's log.
//!
//! | Moment | Sent |
//! |--------|------|
//! | at once | `notifications/events/active` `{cursor, truncated}` (the cursor of the log's end when none was given) |
//! | a wanted change | `notifications/events/event`: the occurrence with its cursor |
//! | changes dropped from the log while the stream read it | `notifications/events/active` again, `truncated: true` and a fresh cursor |
//! | nothing for `heartbeat` | `notifications/events/heartbeat` `{cursor}` |
//! | the layer drains | the final result, then the end of the stream |
//! | a replay longer than the buffer (64) | sent as the client reads it |
//! | the client reads nothing for a heartbeat interval while messages wait, or goes away | the end of the stream: it resumes from its last cursor |
//!
//! Every notification carries `_meta["io.modelcontextprotocol/subscriptionId"]`:
//! the request's id. The stream wakes on the store's change feed (any
//! change: the log is read again from the cursor), and reads the log every
//! few seconds without one. Over the caps (`EventsConfig::max_streams`):
//! `ResourceExhausted`, and no stream.

use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::args::Asked;
use super::occurrence::{Occurrence, SUBSCRIPTION_ID, wanted};
use super::poll::{MOST, since};
use super::{Events, StreamSlot, log_failed, next_change, refuse};
use crate::body::{ResponseBody, reply_response};
use crate::runtime::Runtime;
use crate::runtime::feed::stream::{BUFFER, RESYNC, RETRY, event_stream};
use crate::store::EventPage;
use crate::wire::sse;

pub(super) async fn stream<B>(
    runtime: Arc<Runtime>,
    events: Arc<Events>,
    owner: Option<String>,
    id: Box<RawValue>,
    asked: Asked,
) -> Response<ResponseBody<B>>
where
    B: Send + 'static,
{
    let slot = match events.open_stream(owner.as_deref()) {
        Ok(slot) => slot,
        Err((limit, max)) => return reply_response(refuse::exhausted(&id, limit, max)),
    };
    if runtime.background.is_closing() {
        return reply_response(refuse::exhausted(&id, "streams while the server drains", 0));
    }
    // The first read: the start of the stream, or its refusal.
    let after = asked.cursor.clone();
    let first = match runtime
        .store
        .status_events(owner.as_deref(), after.as_deref(), MOST)
        .await
    {
        Ok(page) => page,
        Err(error) => return reply_response(log_failed(&id, &error)),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER);
    let feeder = Feeder {
        runtime: runtime.clone(),
        events,
        owner,
        id,
        asked,
        tx,
        _slot: slot,
    };
    runtime
        .background
        .spawn_in(tracing::Span::current(), feeder.run(first, after.is_some()));
    event_stream(rx)
}

/// What feeds one stream.
struct Feeder {
    runtime: Arc<Runtime>,
    events: Arc<Events>,
    owner: Option<String>,
    id: Box<RawValue>,
    asked: Asked,
    tx: mpsc::Sender<Bytes>,
    _slot: StreamSlot,
}

/// Why a stream ends.
enum End {
    /// The client went away or stopped reading.
    Gone,
    /// The layer drains.
    Drain,
}

impl Feeder {
    /// Sends `method` with `params` (the stream's `_meta` added).
    async fn send(&self, method: &str, mut params: serde_json::Value) -> Result<(), End> {
        params["_meta"] = json!({ SUBSCRIPTION_ID: &self.id });
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.push(message.to_string().as_bytes()).await
    }

    /// Queues one message, waiting for room: a replay longer than the
    /// buffer goes out as the client reads it. A client that reads nothing
    /// for a heartbeat interval counts as gone (it resumes from its cursor).
    async fn push(&self, json: &[u8]) -> Result<(), End> {
        let closing = self.runtime.background.closing_signal();
        let room = tokio::time::timeout(self.events.config.heartbeat, self.tx.reserve());
        tokio::select! {
            _ = closing.cancelled() => Err(End::Drain),
            room = room => match room {
                Ok(Ok(permit)) => {
                    permit.send(sse::event(json));
                    Ok(())
                }
                _ => Err(End::Gone),
            },
        }
    }

    /// Sends the wanted changes of `page`; the cursor after them.
    async fn deliver(&self, page: &EventPage, replay: bool) -> Result<(), End> {
        let name = &*self.events.config.name;
        let since = if replay {
            since(self.asked.max_age)
        } else {
            None
        };
        let (kept, _) = wanted(&page.events, &self.asked.filter, since);
        for event in kept {
            let occurrence = Occurrence::pushed(name, event, &self.id);
            let message = json!({
                "jsonrpc": "2.0",
                "method": "notifications/events/event",
                "params": occurrence,
            });
            self.push(message.to_string().as_bytes()).await?;
        }
        Ok(())
    }

    async fn run(self, first: EventPage, replay: bool) {
        let end = self.feed(first, replay).await;
        if let Err(End::Drain) = end {
            let result = json!({
                "jsonrpc": "2.0",
                "id": &self.id,
                "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: &self.id}},
            });
            // Room or not, the stream ends now.
            let _ = self.tx.try_send(sse::event(result.to_string().as_bytes()));
        }
    }

    async fn feed(&self, first: EventPage, replay: bool) -> Result<(), End> {
        let store = &self.runtime.store;
        let mut changes = store.changes();
        let _listening = store.listen(self.owner.as_deref());
        let aged = replay && wanted(&first.events, &self.asked.filter, since(self.asked.max_age)).1;
        let truncated = first.truncated || aged;
        self.send(
            "notifications/events/active",
            json!({"cursor": &first.cursor, "truncated": truncated}),
        )
        .await?;
        self.deliver(&first, replay).await?;
        let mut cursor = first.cursor;
        let mut more = first.more;
        let heartbeat = self.events.config.heartbeat;
        let closing = self.runtime.background.closing_signal();
        loop {
            if !more {
                let feed = changes.is_some();
                let wait = if feed {
                    heartbeat
                } else {
                    RESYNC.min(heartbeat)
                };
                let woke = tokio::select! {
                    _ = closing.cancelled() => return Err(End::Drain),
                    _ = self.tx.closed() => return Err(End::Gone),
                    open = next_change(&mut changes) => Some(open),
                    _ = tokio::time::sleep(wait) => None,
                };
                match woke {
                    Some(true) => {}
                    // The feed ended: read the log every few seconds.
                    Some(false) => changes = None,
                    None => {
                        self.send("notifications/events/heartbeat", json!({"cursor": &cursor}))
                            .await?;
                        if feed {
                            continue;
                        }
                    }
                }
            }
            let page = match store
                .status_events(self.owner.as_deref(), Some(&cursor), MOST)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "events/stream: the store's log could not be read");
                    tokio::select! {
                        _ = closing.cancelled() => return Err(End::Drain),
                        _ = self.tx.closed() => return Err(End::Gone),
                        _ = tokio::time::sleep(RETRY) => {}
                    }
                    more = true;
                    continue;
                }
            };
            if page.truncated {
                self.send(
                    "notifications/events/active",
                    json!({"cursor": &page.cursor, "truncated": true}),
                )
                .await?;
            }
            self.deliver(&page, false).await?;
            cursor = page.cursor;
            more = page.more;
        }
    }
}
