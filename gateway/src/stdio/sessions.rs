//! The 2025-11-25 sessions the bridge opened: ids it handed out, at most
//! [`MAX`], the oldest forgotten first. A session only tells the bridge
//! that a client said `initialize`: which child serves it (with
//! `--instances`, a session stays on one) and which of the child's
//! requests its client can answer.

use std::sync::{Arc, Mutex, MutexGuard};

use super::capped::Capped;

/// The most sessions kept.
const MAX: usize = 10_000;

/// What the bridge keeps of one session.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Session {
    /// The child that serves it (an index into the bridge's children).
    pub child: usize,
    /// The client capabilities its `initialize` declared (`elicitation`,
    /// `sampling`, `roots`, …), which say what its client can answer.
    pub declared: Vec<String>,
}

pub(super) struct Sessions {
    open: Mutex<Capped<String, Arc<Session>>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Self {
            open: Mutex::new(Capped::new(MAX)),
        }
    }
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, Capped<String, Arc<Session>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session's id (`None` when the OS has no random bytes).
    pub(super) fn open(&self, session: Session) -> Option<String> {
        let id = mcp_tasks::TaskId::generate().ok()?.to_string();
        self.lock().insert(id.clone(), Arc::new(session));
        Some(id)
    }

    /// The session `id`, if it is open.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Ends `id`; whether it was open.
    pub(super) fn end(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(child: usize) -> Session {
        Session {
            child,
            declared: vec!["elicitation".into()],
        }
    }

    #[test]
    fn sessions_open_are_known_until_they_end() {
        let sessions = Sessions::default();
        let id = sessions.open(session(1)).unwrap();
        assert_eq!(sessions.get(&id).as_deref(), Some(&session(1)));
        assert!(sessions.get("other").is_none());
        assert!(sessions.end(&id));
        assert!(sessions.get(&id).is_none());
        assert!(!sessions.end(&id));
    }
}
