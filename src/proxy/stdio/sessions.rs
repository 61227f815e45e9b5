//! The 2025-11-25 sessions the bridge opened: ids it handed out, at most
//! [`MAX`], the oldest forgotten first. Every session shares the one child,
//! which the bridge initialized itself; a session only tells the bridge
//! that a client said `initialize`.

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// The most sessions kept.
const MAX: usize = 10_000;

#[derive(Default)]
pub(super) struct Sessions {
    open: Mutex<(HashSet<String>, VecDeque<String>)>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, (HashSet<String>, VecDeque<String>)> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session's id (`None` when the OS has no random bytes).
    pub(super) fn open(&self) -> Option<String> {
        let id = crate::task::TaskId::generate().ok()?.to_string();
        let mut open = self.lock();
        if open.1.len() >= MAX
            && let Some(oldest) = open.1.pop_front()
        {
            open.0.remove(&oldest);
        }
        open.0.insert(id.clone());
        open.1.push_back(id.clone());
        Some(id)
    }

    /// Whether `id` is an open session.
    pub(super) fn touch(&self, id: &str) -> bool {
        self.lock().0.contains(id)
    }

    /// Ends `id`; whether it was open.
    pub(super) fn end(&self, id: &str) -> bool {
        let mut open = self.lock();
        let was = open.0.remove(id);
        if was {
            open.1.retain(|kept| kept != id);
        }
        was
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_open_are_known_until_they_end() {
        let sessions = Sessions::default();
        let id = sessions.open().unwrap();
        assert!(sessions.touch(&id));
        assert!(!sessions.touch("other"));
        assert!(sessions.end(&id));
        assert!(!sessions.touch(&id));
        assert!(!sessions.end(&id));
    }
}
