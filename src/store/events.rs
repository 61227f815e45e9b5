//! The log of task status changes that task events are read from (the MCP
//! Events extension: `events/poll`, `events/stream`, `events/subscribe`),
//! and the webhook subscriptions a store keeps.
//!
//! | Type | What it is |
//! |------|------------|
//! | [`StatusEvent`] | one status change of one task, as the log keeps it: no payload (a client reads the result with `tasks/get`) |
//! | [`EventPage`] | one read of an owner's log after a cursor: the changes, the cursor after them, whether changes were dropped before they were read, whether more follow |
//! | [`Hook`] | a webhook subscription: its key (owner, URL, event name, arguments), its secret, its expiry and how far it was delivered |
//!
//! What is a status change: a task's creation (`working`), each change of
//! status after it (`input_required`, `working` again, `completed`,
//! `failed`, `cancelled`). A new status message alone is not one: a tool
//! reporting progress every second would otherwise flood every webhook.
//!
//! Each backend logs a change in the same step as the change itself, so a
//! process that dies right after a task ends cannot lose its event.

use serde_json::value::RawValue;

use crate::task::{TaskSnapshot, TaskState, Timestamp};

/// One status change of one task.
#[derive(Debug, Clone)]
pub struct StatusEvent {
    /// The event's id: the same on every read, on every instance, unique in
    /// the store (a receiver drops duplicates by it).
    pub id: String,
    /// The log position just after this change: a cursor to resume from.
    pub cursor: String,
    /// The task right after the change, its payload left out
    /// ([`StatusEvent::strip`]).
    pub task: TaskSnapshot,
}

impl StatusEvent {
    /// `task` without what its status carries (the input requests, the
    /// result, the error), as the log keeps it: each becomes `{}`.
    pub fn strip(task: &TaskSnapshot) -> TaskSnapshot {
        let empty = || RawValue::from_string("{}".to_owned()).expect("{} is JSON");
        let state = match &task.state {
            TaskState::Working => TaskState::Working,
            TaskState::Cancelled => TaskState::Cancelled,
            TaskState::InputRequired { .. } => TaskState::InputRequired { requests: empty() },
            TaskState::Completed { .. } => TaskState::Completed { result: empty() },
            TaskState::Failed { .. } => TaskState::Failed { error: empty() },
        };
        TaskSnapshot {
            id: task.id,
            state,
            status_message: task.status_message.clone(),
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            ttl: task.ttl,
            poll_interval: task.poll_interval,
        }
    }
}

/// One read of an owner's status changes.
#[derive(Debug, Clone)]
pub struct EventPage {
    /// The changes after the cursor asked for, oldest first.
    pub events: Vec<StatusEvent>,
    /// Where the next read starts: after the last change returned, or the
    /// log's current end when none was.
    pub cursor: String,
    /// Changes after the cursor asked for were dropped from the log before
    /// this read (the log keeps a bounded number): the reader missed some
    /// and should read its tasks again.
    pub truncated: bool,
    /// More changes follow at once (the page was full).
    pub more: bool,
}

/// A webhook subscription (`events/subscribe`), as a store keeps it.
///
/// Its key is (owner, URL, event name, arguments): [`Hook::id`] is derived
/// from it, so subscribing again with the same four refreshes the same
/// subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// `sub_` and 32 hex digits of the SHA-256 of the key.
    pub id: String,
    /// The principal that subscribed.
    pub owner: Option<String>,
    /// The callback URL.
    pub url: String,
    /// The event type's name.
    pub name: String,
    /// The subscription's arguments, as canonical JSON (sorted keys).
    pub arguments: String,
    /// The signing secret, `whsec_<base64>`.
    pub secret: String,
    /// When it lapses unless refreshed; `None`: never.
    pub expires_at: Option<Timestamp>,
    /// How far it was delivered: a cursor of the owner's log.
    pub cursor: String,
}
