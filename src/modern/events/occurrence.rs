//! An event occurrence on the wire, the one shape every delivery mode
//! carries: `{eventId, name, timestamp, data, cursor?}`.
//!
//! | Mode | Where | `cursor` |
//! |------|-------|----------|
//! | poll | each of the result's `events` | left out: the result carries it |
//! | push | the params of `notifications/events/event`, with the `_meta` naming the stream | the position after this event |
//! | webhook | the POSTed body | the position after this event |
//!
//! `data` is the task's status view ([`TaskView::Event`]): `taskId`,
//! `status`, `statusMessage`, `createdAt`, `lastUpdatedAt`, `ttlMs`,
//! `pollIntervalMs`; the result, error or input requests are read with
//! `tasks/get`.

use serde::Serialize;
use serde_json::value::RawValue;

use super::args::Filter;
use crate::store::StatusEvent;
use crate::task::Timestamp;
use crate::wire::view::{Rendered, TaskView, render};

/// The `_meta` key naming the stream on each push notification.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// One occurrence, ready to serialize.
#[derive(Serialize)]
pub(crate) struct Occurrence<'a> {
    #[serde(rename = "eventId")]
    event_id: &'a str,
    name: &'a str,
    timestamp: String,
    data: Rendered<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta<'a>>,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    subscription: &'a RawValue,
}

impl<'a> Occurrence<'a> {
    /// `event` of the type `name`, without its cursor (poll).
    pub(crate) fn polled(name: &'a str, event: &'a StatusEvent) -> Self {
        Self {
            event_id: &event.id,
            name,
            timestamp: event.task.last_updated_at.to_string(),
            data: render(&event.task, TaskView::Event),
            cursor: None,
            meta: None,
        }
    }

    /// `event` with its cursor (a webhook's body).
    pub(crate) fn delivered(name: &'a str, event: &'a StatusEvent) -> Self {
        Self {
            cursor: Some(&event.cursor),
            ..Self::polled(name, event)
        }
    }

    /// `event` with its cursor and the stream's id (push).
    pub(crate) fn pushed(name: &'a str, event: &'a StatusEvent, stream: &'a RawValue) -> Self {
        Self {
            meta: Some(Meta {
                subscription: stream,
            }),
            ..Self::delivered(name, event)
        }
    }
}

/// The events of `events` a subscription with `filter` wants, dropping
/// those older than `since` (`maxAgeMs`); whether any was dropped for
/// its age.
pub(crate) fn wanted<'e>(
    events: &'e [StatusEvent],
    filter: &Filter,
    since: Option<Timestamp>,
) -> (Vec<&'e StatusEvent>, bool) {
    let mut aged = false;
    let kept = events
        .iter()
        .filter(|event| {
            let old = since.is_some_and(|since| event.task.last_updated_at < since);
            aged |= old;
            !old && filter.wants(event.task.id, event.task.status())
        })
        .collect();
    (kept, aged)
}
