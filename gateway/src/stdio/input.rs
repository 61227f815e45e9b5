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

use bytes::Bytes;

use super::calls::{Calls, Waiter};
pub(super) use crate::generation::input::{Asked, GATHER, ROUND_WAIT, capability};
use crate::generation::input::{input_required, key};
use crate::generation::message::result_response;

/// A call whose client is asked for input.
pub(super) struct Round {
    /// The bridge's id of the call, in the child.
    pub call: u64,
    /// What the child asked.
    pub asked: Vec<Asked>,
    /// The call's waiter while the round gathers the child's requests
    /// (`None` once the client was asked).
    pub gathering: Option<Waiter>,
    /// The child's answer to the call, if it came before the client's.
    pub early: Option<Bytes>,
}

/// The rounds of calls waiting for their client, by `requestState` token.
#[derive(Default)]
pub(super) struct Rounds {
    open: Mutex<HashMap<String, Round>>,
}

impl Rounds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Round>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens a round under a fresh token; `None` when the OS has no random
    /// bytes.
    pub(super) fn open(&self, round: Round) -> Option<String> {
        let token = mcp_tasks::TaskId::generate().ok()?.to_string();
        self.lock().insert(token.clone(), round);
        Some(token)
    }

    /// Adds `asked` to the one round still gathering, if its client can
    /// answer `needed`; whether it did.
    pub(super) fn join(&self, asked: &mut Option<Asked>, needed: &str) -> bool {
        let mut open = self.lock();
        let mut gathering = open.values_mut().filter(|round| {
            round
                .gathering
                .as_ref()
                .is_some_and(|waiter| waiter.declared.iter().any(|have| have == needed))
        });
        match (gathering.next(), gathering.next()) {
            (Some(round), None) => match asked.take() {
                Some(mut asked) => {
                    asked.key = key(&asked.key, round.asked.len() + 1);
                    round.asked.push(asked);
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// Ends the gathering of the round of `token`: its waiter, to answer,
    /// and the `input_required` result that asks what was gathered.
    pub(super) fn ask(&self, token: &str) -> Option<(Waiter, String)> {
        let mut open = self.lock();
        let round = open.get_mut(token)?;
        let waiter = round.gathering.take()?;
        Some((waiter, input_required(&round.asked, token)))
    }

    /// Whether a round has the token `token`.
    pub(super) fn holds(&self, token: &str) -> bool {
        self.lock().contains_key(token)
    }

    /// Forgets every round: their calls died with the child.
    pub(super) fn clear(&self) {
        self.lock().clear();
    }

    /// The round of `token`, taken out, once its client was asked.
    pub(super) fn take(&self, token: &str) -> Option<Round> {
        let mut open = self.lock();
        if open.get(token)?.gathering.is_some() {
            return None;
        }
        open.remove(token)
    }

    /// The retry of the round of `token` by `waiter`: each of the child's
    /// requests answered with `answer(key)`; the round is taken out and the
    /// waiter filed in `calls` under one lock, so that the child's answer to
    /// the call cannot slip between them (see [`Self::answered`]).
    pub(super) fn resume(
        &self,
        token: &str,
        waiter: Waiter,
        calls: &Calls,
        answer: impl Fn(&str) -> Option<String>,
    ) -> Resumed {
        let mut open = self.lock();
        let lines = match open.get(token) {
            None => return Resumed::Unknown,
            Some(round) if round.gathering.is_some() => return Resumed::Unknown,
            Some(round) => {
                let mut lines = Vec::with_capacity(round.asked.len());
                for asked in &round.asked {
                    match answer(&asked.key) {
                        Some(response) => lines.push(result_response(&asked.request, &response)),
                        None => return Resumed::Missing(asked.key.clone()),
                    }
                }
                lines
            }
        };
        let Some(round) = open.remove(token) else {
            return Resumed::Unknown;
        };
        if let Some(answer) = round.early {
            return Resumed::Ended(answer);
        }
        match calls.put(round.call, waiter) {
            Ok(()) => Resumed::Waiting {
                call: round.call,
                lines,
            },
            Err(_) => Resumed::Gone,
        }
    }

    /// The child answered `call` with `answer`: who gets it. Under the
    /// rounds' lock, like [`Self::resume`].
    pub(super) fn answered(&self, call: u64, answer: &[u8], calls: &Calls) -> Answered {
        let mut open = self.lock();
        if let Some(waiter) = calls.take(call) {
            return Answered::Waiter(waiter, Vec::new());
        }
        let Some((token, round)) = open.iter_mut().find(|(_, round)| round.call == call) else {
            return Answered::Nobody;
        };
        if let Some(waiter) = round.gathering.take() {
            // Answered before its client was asked: asked for nothing.
            let moot = round
                .asked
                .iter()
                .map(|asked| asked.request.clone())
                .collect();
            let token = token.clone();
            open.remove(&token);
            return Answered::Waiter(waiter, moot);
        }
        round.early = Some(Bytes::copy_from_slice(answer));
        Answered::Kept
    }
}

/// What became of a retry (see [`Rounds::resume`]).
pub(super) enum Resumed {
    /// No round has this token (expired, taken, or never made).
    Unknown,
    /// The retry has no answer under this key; the round stays open.
    Missing(String),
    /// The call ended while its client was away: the child's answer.
    Ended(Bytes),
    /// The call waits again; these lines answer the child's requests.
    Waiting { call: u64, lines: Vec<Bytes> },
    /// The child is gone.
    Gone,
}

/// Who takes the child's answer to a call (see [`Rounds::answered`]).
pub(super) enum Answered {
    /// This waiter; and the child's requests (ids) that no client will
    /// answer now, to refuse.
    Waiter(Waiter, Vec<String>),
    /// The call's round keeps it for the retry.
    Kept,
    /// No one: the call was cancelled.
    Nobody,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::input::tests::asked;

    #[test]
    fn a_round_is_taken_for_its_retry_only_once_its_client_was_asked() {
        let rounds = Rounds::default();
        let (notes, _) = tokio::sync::mpsc::channel(1);
        let (answer, _answered) = tokio::sync::oneshot::channel();
        let waiter = Waiter {
            client_id: "1".into(),
            token: None,
            session: None,
            modern: true,
            cacheable: false,
            declared: vec!["elicitation".into()],
            notes,
            answer,
        };
        let round = Round {
            call: 7,
            asked: vec![asked("elicitation")],
            gathering: Some(waiter),
            early: None,
        };
        let token = rounds.open(round).unwrap();
        assert!(rounds.take(&token).is_none(), "still gathering");
        let mut second = Some(asked("elicitation"));
        assert!(rounds.join(&mut second, "elicitation"));
        let mut sampled = Some(asked("sampling"));
        assert!(!rounds.join(&mut sampled, "sampling"), "not declared");
        let (_, result) = rounds.ask(&token).unwrap();
        assert!(result.contains(r#""elicitation-2""#), "{result}");
        let calls = Calls::new();
        assert!(matches!(
            rounds.answered(7, b"done", &calls),
            Answered::Kept
        ));
        assert!(matches!(
            rounds.answered(8, b"done", &calls),
            Answered::Nobody
        ));
        let round = rounds.take(&token).unwrap();
        assert_eq!(round.asked.len(), 2);
        assert_eq!(round.early.as_deref(), Some(&b"done"[..]));
        assert!(rounds.take(&token).is_none());
    }
}
