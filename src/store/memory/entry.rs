//! A task as the memory store holds it: its fields, its state with the
//! payload it carries, and the rules of its own transitions.
//!
//! | Piece | What it is |
//! |-------|------------|
//! | `Entry` | one task: owner, tool, times, status message, state, stop signal, whether a quota counts it |
//! | `State`, `Round` | the status with its payload; an open input round with its answers so far |
//! | `Entry::cancel`, `Entry::finish` | the transitions a terminal task refuses |

use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::live;
use crate::store::{CancelOutcome, StoreError};
use crate::task::{TaskId, TaskSnapshot, TaskState, TaskStatus, Timestamp};

pub(super) struct Entry {
    pub(super) owner: Option<Box<str>>,
    /// The tool whose call made the task, for the operator.
    pub(super) tool: Option<Box<str>>,
    pub(super) created_at: Timestamp,
    pub(super) updated_at: Timestamp,
    pub(super) ttl: Option<Duration>,
    pub(super) poll_interval: Option<Duration>,
    pub(super) message: Option<Box<str>>,
    pub(super) state: State,
    pub(super) stop: CancellationToken,
    /// Created under a quota: recorded in `live` until reaped.
    pub(super) counted: bool,
}

pub(super) enum State {
    Working,
    Input(Box<Round>),
    Completed(Box<RawValue>),
    Failed(Box<RawValue>),
    Cancelled,
}

pub(super) struct Round {
    pub(super) outstanding: Vec<(String, Box<RawValue>)>,
    pub(super) answers: Vec<(String, Box<RawValue>)>,
    pub(super) resume: Box<RawValue>,
}

impl State {
    pub(super) fn status(&self) -> TaskStatus {
        match self {
            Self::Working => TaskStatus::Working,
            Self::Input(_) => TaskStatus::InputRequired,
            Self::Completed(_) => TaskStatus::Completed,
            Self::Failed(_) => TaskStatus::Failed,
            Self::Cancelled => TaskStatus::Cancelled,
        }
    }
}

impl Entry {
    pub(super) fn expired(&self, now: Timestamp) -> bool {
        // The TTL runs from creation.
        self.ttl
            .is_some_and(|ttl| self.created_at.saturating_add(ttl) <= now)
    }

    /// Where the task sits among the live ones: deadline, then id.
    pub(super) fn live_key(&self, id: u128) -> live::Key {
        let deadline = self.ttl.map(|ttl| self.created_at.saturating_add(ttl));
        (deadline.map_or(u64::MAX, Timestamp::as_millis), id)
    }

    pub(super) fn visible_to(&self, owner: Option<&str>, now: Timestamp) -> bool {
        self.owner.as_deref() == owner && !self.expired(now)
    }

    pub(super) fn snapshot(&self, id: u128) -> TaskSnapshot {
        let state = match &self.state {
            State::Working => TaskState::Working,
            State::Input(round) => TaskState::InputRequired {
                requests: render_object(&round.outstanding),
            },
            State::Completed(result) => TaskState::Completed {
                result: result.clone(),
            },
            State::Failed(error) => TaskState::Failed {
                error: error.clone(),
            },
            State::Cancelled => TaskState::Cancelled,
        };
        TaskSnapshot {
            id: TaskId::from_u128(id),
            state,
            status_message: self.message.as_deref().map(str::to_owned),
            created_at: self.created_at,
            last_updated_at: self.updated_at,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
        }
    }

    /// Cancels a task unless it is terminal already; fires its stop signal.
    pub(super) fn cancel(&mut self, id: u128, now: Timestamp) -> CancelOutcome {
        if self.state.status().is_terminal() {
            return CancelOutcome::AlreadyTerminal(self.snapshot(id));
        }
        self.state = State::Cancelled;
        self.updated_at = now;
        self.stop.cancel();
        CancelOutcome::Cancelled(self.snapshot(id))
    }

    /// Moves a live task to a terminal state; refuses if it is terminal already.
    pub(super) fn finish(&mut self, state: State, now: Timestamp) -> Result<(), StoreError> {
        let from = self.state.status();
        if from.is_terminal() {
            return Err(StoreError::InvalidTransition {
                from,
                to: state.status(),
            });
        }
        self.state = state;
        self.updated_at = now;
        Ok(())
    }
}

/// Renders `[(key, value)]` as one JSON object.
pub(super) fn render_object(pairs: &[(String, Box<RawValue>)]) -> Box<RawValue> {
    struct Pairs<'a>(&'a [(String, Box<RawValue>)]);
    impl Serialize for Pairs<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for (key, value) in self.0 {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }
    }
    serde_json::value::to_raw_value(&Pairs(pairs))
        .unwrap_or_else(|_| crate::wire::raw::empty_object())
}
