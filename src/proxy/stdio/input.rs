//! A request from the child to the client during a call (elicitation,
//! sampling, roots), turned into an MRTR round for a 2026-07-28 client.
//!
//! | Step | What happens |
//! |------|--------------|
//! | the child asks (`elicitation/create`, id R) while one call waits | that call's client gets `input_required`: the request under a key of the bridge's, and a `requestState` token; the child's call stays open |
//! | the client calls again with `inputResponses` and that `requestState` | the child gets the answer to R, and the new request waits for the call's outcome, which may be another round |
//! | no retry within the round's limit | the call is cancelled in the child and R answered with an error |
//! | several calls wait when the child asks | the bridge cannot tell whose request it is: the child gets an error (one call at a time per child avoids it) |
//! | the client did not declare the capability | the child gets an error, as a client without it would give |
//!
//! Once the call is a task, `TasksLayer` shows the round as the task's
//! `inputRequests` and sends the retry itself after `tasks/update`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;

/// A call whose client was asked for input and has not answered yet.
pub(super) struct Round {
    /// The bridge's id of the call, in the child.
    pub call: u64,
    /// The id of the child's request (JSON text), for its answer.
    pub request: String,
    /// The key the request has in `inputRequests`.
    pub key: String,
    /// The child's answer to the call, if it came before the client's.
    pub early: Option<Bytes>,
}

/// The rounds waiting for their client, by `requestState` token.
#[derive(Default)]
pub(super) struct Rounds {
    open: Mutex<HashMap<String, Round>>,
}

/// How long a round waits for its client before the call is cancelled.
pub(super) const ROUND_WAIT: Duration = Duration::from_secs(600);

impl Rounds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Round>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens a round under a fresh token; `None` when the OS has no random
    /// bytes.
    pub(super) fn open(&self, round: Round) -> Option<String> {
        let token = crate::task::TaskId::generate().ok()?.to_string();
        self.lock().insert(token.clone(), round);
        Some(token)
    }

    /// Puts a round back under its `token` (its retry lacked the answer).
    pub(super) fn reopen(&self, token: String, round: Round) {
        self.lock().insert(token, round);
    }

    /// Forgets every round: their calls died with the child.
    pub(super) fn clear(&self) {
        self.lock().clear();
    }

    /// The round of `token`, taken out.
    pub(super) fn take(&self, token: &str) -> Option<Round> {
        self.lock().remove(token)
    }

    /// Keeps the child's `answer` to `call` for the round's retry; whether
    /// the call has an open round.
    pub(super) fn answered_early(&self, call: u64, answer: Bytes) -> bool {
        match self.lock().values_mut().find(|round| round.call == call) {
            Some(round) => {
                round.early = Some(answer);
                true
            }
            None => false,
        }
    }
}

/// The capability a client needs to answer `method`.
pub(super) fn capability(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// The `input_required` result that asks `method` with `params` (JSON text)
/// under `key`, with `token` as the `requestState`.
pub(super) fn input_required(key: &str, method: &str, params: &str, token: &str) -> String {
    let method = serde_json::to_string(method).unwrap_or_default();
    let key = serde_json::to_string(key).unwrap_or_default();
    format!(
        r#"{{"resultType":"input_required","inputRequests":{{{key}:{{"method":{method},"params":{params}}}}},"requestState":"{token}"}}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_round_is_a_valid_mrtr_result() {
        let text = input_required("q1", "elicitation/create", r#"{"message":"Go?"}"#, "t0k");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["resultType"], "input_required");
        assert_eq!(value["inputRequests"]["q1"]["method"], "elicitation/create");
        assert_eq!(value["inputRequests"]["q1"]["params"]["message"], "Go?");
        assert_eq!(value["requestState"], "t0k");
    }

    #[test]
    fn an_early_answer_waits_in_its_round() {
        let rounds = Rounds::default();
        let round = Round {
            call: 7,
            request: "3".into(),
            key: "q".into(),
            early: None,
        };
        let token = rounds.open(round).unwrap();
        assert!(rounds.answered_early(7, Bytes::from_static(b"done")));
        assert!(!rounds.answered_early(8, Bytes::new()));
        let round = rounds.take(&token).unwrap();
        assert_eq!(round.early.as_deref(), Some(&b"done"[..]));
        assert!(rounds.take(&token).is_none());
    }
}
