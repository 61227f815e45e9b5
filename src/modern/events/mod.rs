//! Task events: each status change of a caller's tasks as an event of the
//! MCP Events extension (`io.modelcontextprotocol/events`), on by
//! [`TasksLayer::events`](crate::TasksLayer::events).
//!
//! | Method | Of the layer's event type | Of any other |
//! |--------|---------------------------|--------------|
//! | `events/list` | the layer's descriptor, added to the inner server's list (or alone, when the inner server has no events) | (the same answer) |
//! | `events/poll` | `poll.rs`: the changes after the cursor | the inner server's |
//! | `events/stream` | `stream.rs`: an SSE stream of the changes, heartbeats, a final result at a drain | the inner server's |
//! | `events/subscribe`, `events/unsubscribe` | `subscribe.rs`: a webhook subscription, verified, stored; `deliver.rs` sends the changes, signed | the inner server's |
//! | `server/discover` | the extension added to the inner server's capabilities (`catalog.rs`) | |
//!
//! | Room | Holds |
//! |------|-------|
//! | `args.rs` | the params and the subscription's filter |
//! | `occurrence.rs` | an event on the wire |
//! | `refuse.rs` | the extension's errors |
//! | `catalog.rs` | the descriptor, and the edits of `events/list` and `server/discover` answers |
//! | `poll.rs`, `stream.rs`, `subscribe.rs`, `deliver.rs` | the three delivery modes |
//!
//! Authorization is the task's: a caller reads the log of its own tasks
//! only (the store keys it by owner), and a task id in `arguments` that it
//! may not see is refused as `tasks/get` refuses an unknown task.

mod args;
pub(crate) mod catalog;
pub(crate) mod deliver;
mod occurrence;
mod poll;
mod refuse;
mod stream;
mod subscribe;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::Response;
use serde_json::value::RawValue;
use tokio::sync::Notify;
use tokio::sync::broadcast::{self, error::RecvError};

use self::args::{Asked, Filter};
use crate::body::{ResponseBody, reply_response};
use crate::config::events::EventsConfig;
use crate::runtime::{RequestContext, Runtime, store_failed};
use crate::store::{StoreError, TaskChange};
use crate::wire::jsonrpc::Reply;

/// A request of an events method about the layer's event type.
#[derive(Debug)]
pub(crate) struct EventsCall {
    /// The request's JSON-RPC id.
    pub id: Box<RawValue>,
    pub method: EventsMethod,
    /// The whole `params` object.
    pub params: Box<RawValue>,
}

/// The events methods the layer answers for its own event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventsMethod {
    Poll,
    Stream,
    Subscribe,
    Unsubscribe,
}

/// The one table of their names.
const EVENTS_METHODS: [(&str, EventsMethod); 4] = [
    ("events/poll", EventsMethod::Poll),
    ("events/stream", EventsMethod::Stream),
    ("events/subscribe", EventsMethod::Subscribe),
    ("events/unsubscribe", EventsMethod::Unsubscribe),
];

impl EventsMethod {
    /// The method a JSON-RPC method name names, if any.
    pub(crate) fn named(method: &str) -> Option<Self> {
        EVENTS_METHODS
            .iter()
            .find(|(name, _)| *name == method)
            .map(|(_, method)| *method)
    }

    /// Its JSON-RPC name.
    pub(crate) fn name(self) -> &'static str {
        EVENTS_METHODS
            .iter()
            .find(|(_, method)| *method == self)
            .map_or("events", |(name, _)| name)
    }
}

/// What the events methods share across one layer: the settings, the
/// open streams (for their caps) and the wake of the webhook deliverer.
pub(crate) struct Events {
    pub config: EventsConfig,
    streams: Mutex<Streams>,
    /// Woken when a webhook subscription is stored.
    pub hooked: Notify,
}

#[derive(Default)]
struct Streams {
    owners: HashMap<Option<String>, u32>,
    total: u32,
}

/// One open `events/stream`, counted until dropped.
pub(crate) struct StreamSlot {
    events: Arc<Events>,
    owner: Option<String>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        metrics::gauge!(crate::observe::metrics::EVENT_STREAMS).decrement(1.0);
        let mut streams = self
            .events
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        streams.total = streams.total.saturating_sub(1);
        if let Some(count) = streams.owners.get_mut(&self.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                streams.owners.remove(&self.owner);
            }
        }
    }
}

impl Events {
    /// The events state of a layer with `config`.
    pub(crate) fn new(config: EventsConfig) -> Self {
        Self {
            config,
            streams: Mutex::default(),
            hooked: Notify::new(),
        }
    }

    /// A place for one more stream of `owner`'s, or the cap it would pass.
    fn open_stream(
        self: &Arc<Self>,
        owner: Option<&str>,
    ) -> Result<StreamSlot, (&'static str, u32)> {
        let (per_owner, total) = self.config.max_streams;
        let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        if streams.total >= total {
            return Err(("streams", total));
        }
        let count = streams.owners.entry(owner.map(str::to_owned)).or_default();
        if *count >= per_owner {
            return Err(("streams per principal", per_owner));
        }
        *count += 1;
        streams.total += 1;
        metrics::gauge!(crate::observe::metrics::EVENT_STREAMS).increment(1.0);
        Ok(StreamSlot {
            events: self.clone(),
            owner: owner.map(str::to_owned),
        })
    }
}

/// Answers `call` of the request `cx`: a reply, or (`events/stream`) an
/// SSE stream.
pub(crate) async fn answer<B>(
    cx: RequestContext,
    events: Arc<Events>,
    call: EventsCall,
) -> Response<ResponseBody<B>>
where
    B: Send + 'static,
{
    let (runtime, owner) = (cx.runtime, cx.owner);
    let asked = match Asked::read(call.params.get()) {
        Ok(asked) => asked,
        Err(message) => return reply_response(Reply::bad_params(Some(&call.id), message)),
    };
    if let Err(reply) = visible(&runtime, owner.key(), &asked.filter, &call.id).await {
        return reply_response(reply);
    }
    let reply = match call.method {
        EventsMethod::Poll => poll::poll(&runtime, &events, owner.key(), &call.id, asked).await,
        EventsMethod::Stream => {
            return stream::stream(runtime, events, owner.key, call.id, asked).await;
        }
        EventsMethod::Subscribe => {
            subscribe::subscribe(&runtime, &events, &owner, &call.id, asked).await
        }
        EventsMethod::Unsubscribe => {
            subscribe::unsubscribe(&runtime, &events, &owner, &call.id, asked).await
        }
    };
    reply_response(reply)
}

/// Checks that `owner` may see every task `filter` names: one it may not
/// is refused as `tasks/get` refuses an unknown task.
async fn visible(
    runtime: &Runtime,
    owner: Option<&str>,
    filter: &Filter,
    id: &RawValue,
) -> Result<(), Reply> {
    for (_, parsed) in filter.task_ids.iter().flatten() {
        let Some(task) = parsed else {
            return Err(Reply::task_not_found(id));
        };
        match runtime.store.get(*task, owner).await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(Reply::task_not_found(id)),
            Err(error) => return Err(store_failed(Some(id), &error)),
        }
    }
    Ok(())
}

/// The answer to a store error while reading the log: an unknown cursor
/// is the client's (`-32602`), anything else the store's.
fn log_failed(id: &RawValue, error: &StoreError) -> Reply {
    match error {
        StoreError::InvalidCursor => {
            Reply::bad_params(Some(id), "cursor is not one this server gave out")
        }
        error => store_failed(Some(id), error),
    }
}

/// Waits for the next change of the store's feed; `false` when the feed
/// ended. A lagging receiver counts as a change (the log is read anyway).
pub(super) async fn next_change(changes: &mut Option<broadcast::Receiver<TaskChange>>) -> bool {
    match changes {
        Some(rx) => !matches!(rx.recv().await, Err(RecvError::Closed)),
        None => std::future::pending().await,
    }
}
