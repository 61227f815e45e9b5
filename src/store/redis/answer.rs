//! The `answer_input` script and what its reply says, before the store
//! settles the task's stop signal.

use redis::Value;
use serde_json::value::RawValue;

use super::doubts::Write;
use super::scripts::{self, owner_args};
use super::{RedisTaskStore, backend, interest, now_text, reply};
use crate::store::{InputProgress, StoreError};
use crate::task::{TaskId, Timestamp};

/// What `answer_input` found, before the stop signal is settled.
pub(super) enum Answered {
    Hidden,
    NotWaiting {
        ended: bool,
    },
    Pending,
    Complete {
        deadline: Option<Timestamp>,
        answers: Vec<(String, Box<RawValue>)>,
        resume: Box<RawValue>,
    },
}

impl RedisTaskStore {
    /// [`TaskStore::answer_input`](crate::TaskStore::answer_input).
    pub(super) async fn answer_input_task(
        &self,
        id: TaskId,
        owner: Option<&str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> Result<Option<InputProgress>, StoreError> {
        // Held before the write: the resumed call needs a token that a
        // cancel racing this round's completion still reaches. A call given
        // up before the reply leaves the write in doubt.
        let shard = self.inner.shards.index_of(owner);
        let stops = &self.inner.stops;
        let doubts = &self.inner.doubts;
        let ticket = doubts.ticket();
        let (stop, holding, generation) = stops.holding(id, shard);
        let holding = holding.doubting(doubts, Write::Resume(ticket));
        stops
            .interest
            .subscribed(shard, interest::SUBSCRIBE_WAIT)
            .await;
        let answered = self.answer(id, owner, answers, ticket, generation).await;
        // An error (the script may have completed the round) releases the
        // token and notes the answer in doubt.
        holding.answered(&answered);
        match &answered {
            Ok(Answered::Complete { deadline, .. }) => {
                stops.confirm(id, shard, *deadline);
                // A failed answer before this one did not complete the
                // round: this call resumes the task, which is not an orphan.
                doubts.forget(id);
            }
            Ok(_) => stops.release(id),
            Err(_) => {}
        }
        Ok(match answered? {
            Answered::Hidden => None,
            Answered::Pending => Some(InputProgress::Pending),
            Answered::NotWaiting { ended } => {
                if ended {
                    stops.fire(id);
                }
                Some(InputProgress::NotWaiting)
            }
            Answered::Complete {
                answers, resume, ..
            } => Some(InputProgress::RoundComplete {
                answers,
                resume,
                stop,
            }),
        })
    }

    /// `answer_input.lua` for `id`: the task, if it resumes, driven by this
    /// instance's id of `generation` in its shard.
    pub(super) async fn answer(
        &self,
        id: TaskId,
        owner: Option<&str>,
        answers: Vec<(String, Box<RawValue>)>,
        ticket: u64,
        generation: u32,
    ) -> Result<Answered, StoreError> {
        let keys = self.inner.shards.of(owner).1;
        let [has_owner, owner] = owner_args(owner);
        let lease = &self.inner.lease;
        let driver = lease.id_in(generation);
        let mut call = scripts::ANSWER_INPUT.key(keys.task(id));
        call.key(keys.round(id))
            .key(keys.driving(&driver))
            .key(keys.instance(&driver))
            .key(keys.instances())
            .arg(has_owner)
            .arg(owner)
            .arg(now_text())
            .arg(id.to_string())
            .arg(&*driver)
            .arg(lease.millis())
            .arg(keys.changed())
            .arg(ticket);
        for (key, answer) in &answers {
            call.arg(key.as_str()).arg(answer.get());
        }
        let reply: Value = call.invoke_async(&mut self.conn()).await.map_err(backend)?;
        if reply::is_absent(&reply) {
            return Ok(Answered::Hidden);
        }
        let mut items = reply::items(reply)?.into_iter();
        match reply::required(items.next(), "answer tag")?.as_str() {
            "pending" => Ok(Answered::Pending),
            "not_waiting" => {
                let status = reply::status(&reply::required(items.next(), "status")?)?;
                Ok(Answered::NotWaiting {
                    ended: status.is_terminal(),
                })
            }
            "complete" => {
                let deadline = reply::text(items.next().unwrap_or(Value::Nil))?
                    .map(|at| at.parse().map(Timestamp::from_millis))
                    .transpose()
                    .map_err(|_| reply::corrupt("a deadline"))?;
                let resume = reply::raw(reply::required(items.next(), "resume context")?)?;
                let mut answers = Vec::new();
                while let Some(key) = items.next() {
                    let key = reply::required(Some(key), "answer key")?;
                    let answer = reply::raw(reply::required(items.next(), "answer")?)?;
                    answers.push((key, answer));
                }
                Ok(Answered::Complete {
                    deadline,
                    answers,
                    resume,
                })
            }
            _ => Err(reply::corrupt("an unknown answer tag")),
        }
    }
}
