//! A request from the child to the client of a 2025-11-25 session's call,
//! relayed on that call's SSE stream as that protocol does it; the
//! client's answer comes back as a POST in its session.
//!
//! | Step | What happens |
//! |------|--------------|
//! | the child asks (`elicitation/create`, id R) while one call, of a session whose client declared the capability, waits | the request goes out on the call's stream under a fresh id of the bridge's, N |
//! | the client POSTs the response to N in the same session | the child gets it as the answer to R |
//! | the call ends, or the child exits | its requests still unanswered are forgotten (a late answer is dropped) |
//! | a response to an id the bridge did not give this session | dropped: a client cannot answer another session's question |

use std::sync::{Mutex, MutexGuard};

use super::capped::Capped;

/// The most requests kept waiting for their clients; the oldest is
/// forgotten first.
const MAX: usize = 1024;

/// One relayed request.
struct Asked {
    /// The id of the child's request (JSON text).
    request: String,
    /// The session whose client was asked.
    session: String,
    /// The bridge's id of the call it came during.
    call: u64,
}

struct Table {
    next: u64,
    waiting: Capped<u64, Asked>,
}

/// The requests relayed to sessions' clients, by the id the bridge gave.
pub(super) struct Relayed {
    table: Mutex<Table>,
}

impl Default for Relayed {
    fn default() -> Self {
        Self {
            table: Mutex::new(Table {
                next: 0,
                waiting: Capped::new(MAX),
            }),
        }
    }
}

impl Relayed {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Files the child's `request` (its id, JSON text), asked of the client
    /// of `session` during `call`; the id to ask it under.
    pub(super) fn add(&self, request: &str, session: &str, call: u64) -> u64 {
        let mut table = self.lock();
        table.next += 1;
        let id = table.next;
        table.waiting.insert(
            id,
            Asked {
                request: request.to_owned(),
                session: session.to_owned(),
                call,
            },
        );
        id
    }

    /// The child's id of the request asked under `id` of `session`, taken
    /// out; `None` when the bridge did not ask this session that.
    pub(super) fn answer(&self, id: u64, session: &str) -> Option<String> {
        let mut table = self.lock();
        if table.waiting.get(&id)?.session != session {
            return None;
        }
        table.waiting.remove(&id).map(|asked| asked.request)
    }

    /// Forgets what was asked during `call`: it ended.
    pub(super) fn ended(&self, call: u64) {
        self.lock().waiting.retain(|asked| asked.call != call);
    }

    /// Forgets everything: the child exited.
    pub(super) fn clear(&self) {
        self.lock().waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_reaches_the_child_only_from_the_session_that_was_asked() {
        let relayed = Relayed::default();
        let id = relayed.add("7", "s1", 3);
        assert_eq!(relayed.answer(id, "s2"), None);
        assert_eq!(relayed.answer(id, "s1").as_deref(), Some("7"));
        assert_eq!(relayed.answer(id, "s1"), None, "answered once");
    }

    #[test]
    fn what_a_call_asked_is_forgotten_when_it_ends() {
        let relayed = Relayed::default();
        let first = relayed.add("\"a\"", "s", 1);
        let second = relayed.add("\"b\"", "s", 2);
        relayed.ended(1);
        assert_eq!(relayed.answer(first, "s"), None);
        assert_eq!(relayed.answer(second, "s").as_deref(), Some("\"b\""));
    }

    #[test]
    fn at_most_max_requests_wait() {
        let relayed = Relayed::default();
        let first = relayed.add("1", "s", 1);
        for _ in 0..MAX {
            relayed.add("2", "s", 1);
        }
        assert_eq!(relayed.answer(first, "s"), None, "the oldest was forgotten");
        assert_eq!(relayed.lock().waiting.len(), MAX);
    }
}
