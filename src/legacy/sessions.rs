//! The 2025-11-25 sessions the layer serves tasks in: bounded, and forgotten
//! when they end or go idle.
//!
//! A session is recorded when the inner server's `initialize` result
//! negotiates `2025-11-25` and carries an `Mcp-Session-Id`; sessions of any
//! other version are never recorded, so their requests cost one failed lookup.
//!
//! | Event                                          | Effect                                    |
//! |------------------------------------------------|-------------------------------------------|
//! | `initialize` answered with `2025-11-25`        | recorded                                  |
//! | any request in the session                     | its idle clock restarts                   |
//! | the client sends `DELETE`                      | marked ended: its requests go to the inner server, which answers `404` |
//! | the inner server answers `404` for the session | marked ended (the session expired upstream) |
//! | idle longer than the configured limit          | forgotten at the next insertion           |
//! | the registry is full                           | the least recently used session goes      |
//!
//! A session the registry forgot, or never saw (another instance created
//! it), is [`Known::Unknown`]: its requests are served when they carry
//! `MCP-Protocol-Version: 2025-11-25`. Tasks are not per-session state: they
//! live in the store, bound to their principal, and outlive the session that
//! created them. A session only remembers the ids of its most recent tasks,
//! so that its GET stream can carry their status notifications.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::sync::Notify;

use crate::task::TaskId;
use crate::wire::same_id;

/// How many task-augmented request ids a session remembers, to swallow the
/// client's `notifications/cancelled` for them.
const AUGMENTED_IDS: usize = 64;

/// The longest request id remembered (longer ones are not: a client cannot
/// make the registry hold its bodies).
const MAX_ID_LEN: usize = 128;

/// What the registry knows of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    /// Negotiated 2025-11-25 and not ended.
    Live,
    /// Ended by `DELETE` or expired upstream.
    Ended,
    /// Never recorded, or forgotten.
    Unknown,
}

/// The limits of a [`Sessions`] registry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionLimits {
    /// The most sessions kept at once.
    pub max: usize,
    /// How long a session may go without a request before it is forgotten.
    pub idle: Duration,
}

struct Session {
    last_seen: Instant,
    ended: bool,
    /// Ids of the client's task-augmented `tools/call`s, most recent last.
    augmented: VecDeque<Box<RawValue>>,
    /// The tasks created in the session, most recent last, for the status
    /// notifications of its GET stream; `news` tells the stream of a new one.
    tasks: VecDeque<TaskId>,
    news: Arc<Notify>,
}

/// The registry of 2025-11-25 sessions.
pub(crate) struct Sessions {
    limits: SessionLimits,
    map: Mutex<HashMap<Box<str>, Session>>,
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        Self {
            limits,
            map: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Session>> {
        // The map holds no invariant a panic could break half-way.
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a session that negotiated 2025-11-25.
    pub(crate) fn insert(&self, id: &str) {
        let now = Instant::now();
        let mut map = self.lock();
        if map.len() >= self.limits.max && !map.contains_key(id) {
            let idle = self.limits.idle;
            map.retain(|_, session| now.duration_since(session.last_seen) < idle);
            if map.len() >= self.limits.max
                && let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, session)| session.last_seen)
                    .map(|(id, _)| id.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.into(),
            Session {
                last_seen: now,
                ended: false,
                augmented: VecDeque::new(),
                tasks: VecDeque::new(),
                news: Arc::default(),
            },
        );
    }

    /// What the registry knows of session `id`; restarts its idle clock.
    pub(crate) fn touch(&self, id: &str) -> Known {
        let now = Instant::now();
        let mut map = self.lock();
        match map.get_mut(id) {
            Some(session) if now.duration_since(session.last_seen) < self.limits.idle => {
                session.last_seen = now;
                if session.ended {
                    Known::Ended
                } else {
                    Known::Live
                }
            }
            Some(_) => {
                map.remove(id);
                Known::Unknown
            }
            None => Known::Unknown,
        }
    }

    /// Marks a session ended (kept, like any entry, until idle or evicted).
    pub(crate) fn end(&self, id: &str) {
        if let Some(session) = self.lock().get_mut(id) {
            session.ended = true;
            session.augmented.clear();
        }
    }

    /// Notes that the client's request `request` in session `id` became a task.
    pub(crate) fn note_augmented(&self, id: &str, request: &RawValue) {
        if request.get().len() > MAX_ID_LEN {
            return;
        }
        if let Some(session) = self.lock().get_mut(id) {
            if session.augmented.len() == AUGMENTED_IDS {
                session.augmented.pop_front();
            }
            session.augmented.push_back(request.to_owned());
        }
    }

    /// Notes that task `task` was created in session `id`.
    pub(crate) fn note_task(&self, id: &str, task: TaskId) {
        if let Some(session) = self.lock().get_mut(id) {
            if session.tasks.len() == AUGMENTED_IDS {
                session.tasks.pop_front();
            }
            session.tasks.push_back(task);
            session.news.notify_waiters();
        }
    }

    /// The tasks created in live session `id` (the most recent
    /// [`AUGMENTED_IDS`]), and what tells of the next one.
    pub(crate) fn tasks(&self, id: &str) -> Option<(Vec<TaskId>, Arc<Notify>)> {
        let map = self.lock();
        let session = map.get(id).filter(|session| !session.ended)?;
        Some((
            session.tasks.iter().copied().collect(),
            session.news.clone(),
        ))
    }

    /// Whether `request` in session `id` is a task-augmented call.
    pub(crate) fn is_augmented(&self, id: &str, request: &RawValue) -> bool {
        self.lock().get(id).is_some_and(|session| {
            session
                .augmented
                .iter()
                .any(|known| same_id(known, request))
        })
    }

    /// How many sessions are recorded.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, idle: Duration) -> SessionLimits {
        SessionLimits { max, idle }
    }

    #[test]
    fn a_full_registry_drops_the_least_recently_used_session() {
        let sessions = Sessions::new(limits(2, Duration::from_secs(60)));
        sessions.insert("a");
        std::thread::sleep(Duration::from_millis(2));
        sessions.insert("b");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(sessions.touch("a"), Known::Live);
        sessions.insert("c");
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions.touch("a"), Known::Live);
        assert_eq!(
            sessions.touch("b"),
            Known::Unknown,
            "b was used least recently"
        );
        assert_eq!(sessions.touch("c"), Known::Live);
    }

    #[test]
    fn ended_sessions_are_marked_and_idle_ones_forgotten() {
        let sessions = Sessions::new(limits(10, Duration::from_millis(20)));
        sessions.insert("idle");
        sessions.insert("deleted");
        sessions.end("deleted");
        assert_eq!(sessions.touch("deleted"), Known::Ended);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(sessions.touch("idle"), Known::Unknown);
        assert_eq!(sessions.touch("deleted"), Known::Unknown);
        assert_eq!(sessions.len(), 0);
    }

    #[test]
    fn augmented_ids_are_remembered_per_session_and_bounded() {
        let sessions = Sessions::new(limits(10, Duration::from_secs(60)));
        sessions.insert("s");
        let id = |n: usize| RawValue::from_string(n.to_string()).unwrap();
        for n in 0..=AUGMENTED_IDS {
            sessions.note_augmented("s", &id(n));
        }
        assert!(sessions.is_augmented("s", &id(AUGMENTED_IDS)));
        assert!(!sessions.is_augmented("s", &id(0)), "the oldest id went");
        assert!(!sessions.is_augmented("other", &id(AUGMENTED_IDS)));
        let long = RawValue::from_string(format!("\"{}\"", "x".repeat(MAX_ID_LEN))).unwrap();
        sessions.note_augmented("s", &long);
        assert!(!sessions.is_augmented("s", &long), "long ids are not kept");
    }
}
