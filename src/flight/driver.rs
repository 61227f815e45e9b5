//! Parking a flight as a task and driving it to its outcome in the background.
//!
//! Once parked, the inner call runs on its own tokio task, independent of
//! the client's connection. It ends in exactly one of these ways, none of
//! which leaves the task `working`:
//!
//! | What happens                        | The task                                  |
//! |-------------------------------------|-------------------------------------------|
//! | the inner server answers            | `completed` / `failed` (see `flight`)     |
//! | the inner server asks for input     | `input_required`; `tasks/update` resumes it |
//! | it sheds load (`requestState` only) | retried at once, a bounded number of times |
//! | `tasks/cancel`                      | already `cancelled`; the inner call is dropped, which cancels it |
//! | the TTL runs out                    | gone; the inner call is dropped           |
//! | the inner service panics            | `failed`, `-32603`                        |
//! | the store fails to take the outcome | retried with backoff, then logged         |

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::caller::CallInner;
use super::{Answer, Event, Flight};
use crate::mrtr::{self, Next, Template};
use crate::store::{InputRound, NewTask, Quota, StoreError, TaskStore};
use crate::task::{TaskId, TaskSnapshot, Timestamp};
use crate::wire::Outcome;
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR};

/// How many load-shedding retries in a row before the task fails.
const SHED_RETRIES: u32 = 8;

/// Everything the background work of one task needs, across input rounds.
pub(crate) struct Work {
    pub store: Arc<dyn TaskStore>,
    pub id: TaskId,
    pub stop: CancellationToken,
    pub caller: Box<dyn CallInner>,
    /// Credentials and extensions for re-issued calls.
    pub template: Box<Template>,
    /// The original `tools/call` params.
    pub params: Box<RawValue>,
    /// Input rounds so far.
    pub round: u32,
    /// Calls sent in this round (for fresh JSON-RPC ids).
    pub attempts: u32,
    /// Load-shedding retries in a row.
    pub shed: u32,
    /// When the task expires (`None`: never); outcome writes are retried
    /// until then.
    pub expires: Option<Timestamp>,
    /// What a call of a 2025-11-25 session needs besides.
    pub legacy: Option<Box<crate::legacy::input::LegacyWork>>,
}

/// What a new task is created with.
pub(crate) struct Parking {
    pub store: Arc<dyn TaskStore>,
    pub owner: Option<String>,
    pub ttl: Option<Duration>,
    pub poll_interval: Option<Duration>,
    pub caller: Box<dyn CallInner>,
    pub template: Template,
    pub params: Box<RawValue>,
}

/// Creates the task (durably: `get` finds it once this resolves) and hands
/// the call to a background driver.
///
/// Both happen on a tokio task of their own, so a client that hangs up while
/// the store is still acknowledging cannot leave a task that nothing drives.
/// On a store failure the flight is dropped, which cancels the inner call,
/// and no task exists.
pub(crate) async fn park(
    parking: Parking,
    mut flight: Flight,
    status_message: Option<String>,
) -> Result<TaskSnapshot, StoreError> {
    let id = TaskId::generate().map_err(|error| StoreError::Backend(Box::new(error)))?;
    flight.parked();
    let (created_tx, created_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let created_at = Timestamp::now();
        let task = NewTask {
            id,
            owner: parking.owner,
            created_at,
            ttl: parking.ttl,
            poll_interval: parking.poll_interval,
            status_message,
            quota: Quota::default(),
        };
        let created = match parking.store.create(task).await {
            Ok(created) => created,
            Err(error) => {
                let _ = created_tx.send(Err(error));
                return;
            }
        };
        let work = Work {
            store: parking.store,
            id,
            stop: created.stop,
            caller: parking.caller,
            template: Box::new(parking.template),
            params: parking.params,
            round: 0,
            attempts: 0,
            shed: 0,
            expires: parking.ttl.map(|ttl| created_at.saturating_add(ttl)),
            legacy: None,
        };
        // The client may be gone; the task exists and is driven regardless.
        let _ = created_tx.send(Ok(created.snapshot));
        spawn(work, flight);
    });
    created_rx
        .await
        .unwrap_or_else(|_| Err(StoreError::backend("the task could not be created")))
}

/// Fails a task with `-32603` and `message`, retrying like any outcome write.
pub(crate) fn fail_detached(
    store: Arc<dyn TaskStore>,
    id: TaskId,
    message: String,
    expires: Option<Timestamp>,
) {
    tokio::spawn(async move { write_until(store.as_ref(), id, internal(message), expires).await });
}

/// Drives `flight` for `work` on a tokio task of its own.
pub(crate) fn spawn(work: Work, flight: Flight) {
    tokio::spawn(drive(work, flight));
}

async fn drive(mut work: Work, flight: Flight) {
    let stop = work.stop.clone();
    let (store, id, expires) = (work.store.clone(), work.id, work.expires);
    let running = AssertUnwindSafe(run(&mut work, flight)).catch_unwind();
    let stopped = tokio::select! {
        biased;
        // Dropping `running` drops the flight and with it the inner call.
        _ = stop.cancelled() => true,
        finished = running => {
            if finished.is_err() {
                let write = internal("The inner call panicked".into());
                Box::pin(write_until(store.as_ref(), id, write, expires)).await;
            }
            false
        }
    };
    // In a 2025-11-25 session a dropped stream is not a cancellation.
    if stopped && work.legacy.is_some() {
        Box::pin(crate::legacy::input::cancel_inner(&mut work)).await;
    }
}

async fn run(work: &mut Work, mut flight: Flight) {
    loop {
        let answer = loop {
            match flight.next_event().await {
                Event::Progress(line) => {
                    if let Err(error) = work.store.set_status_message(work.id, line).await {
                        tracing::debug!(task = %work.id, %error, "progress not recorded");
                    }
                }
                Event::Request(message) => {
                    if work.legacy.is_some() {
                        Box::pin(crate::legacy::input::relay(work, message)).await;
                    }
                }
                Event::Done(answer) => break *answer,
            }
        };
        // Boxed: its state would otherwise be reserved for the whole run.
        match Box::pin(handle(work, answer)).await {
            Some(next) => flight = next,
            None => return,
        }
    }
}

/// Records an answer; returns the next flight when the call must be retried.
async fn handle(work: &mut Work, answer: Answer) -> Option<Flight> {
    let outcome = match answer {
        Answer::Json { outcome, .. } | Answer::Sse { outcome, .. } => outcome,
        Answer::Unusable { reason, .. } => {
            let message = format!("The tool call failed: {reason}");
            settle(work, internal(message)).await;
            if work.legacy.is_some() {
                // The stream broke, but the tool may still run: in a
                // 2025-11-25 session only a notification cancels it.
                Box::pin(crate::legacy::input::cancel_inner(work)).await;
            }
            return None;
        }
    };
    let result = match outcome {
        Outcome::InputRequired(result) => result,
        Outcome::Result(result) => {
            settle(work, Write::Complete(result)).await;
            return None;
        }
        Outcome::Error(error) => {
            settle(work, failure(error)).await;
            return None;
        }
    };
    let asked = mrtr::on_input_required(
        &result,
        work.round + 1,
        &work.params,
        work.expires,
        &work.template,
    );
    match asked {
        Ok(Next::Ask(round)) => {
            work.round += 1;
            work.attempts = 0;
            work.shed = 0;
            settle(work, Write::Input(round)).await;
            None
        }
        Ok(Next::Retry(state)) if work.shed < SHED_RETRIES => {
            work.shed += 1;
            let backoff = Duration::from_millis(10 << work.shed.min(6));
            tokio::time::sleep(backoff).await;
            reissue(work, None, state)
        }
        Ok(Next::Retry(_)) => {
            let message = "The inner server kept shedding load (input_required without requests)";
            settle(work, internal(message.into())).await;
            None
        }
        Err(reason) => {
            settle(work, internal(format!("The tool call failed: {reason}"))).await;
            None
        }
    }
}

/// Sends the call again with `answers` and `request_state`.
pub(crate) fn reissue(
    work: &mut Work,
    answers: Option<Vec<(String, Box<RawValue>)>>,
    request_state: Option<String>,
) -> Option<Flight> {
    work.attempts += 1;
    let call = mrtr::Call {
        task: work.id,
        round: work.round,
        attempt: work.attempts,
    };
    match mrtr::reissue(&work.template, call, &work.params, answers, request_state) {
        Ok((id, request)) => Some(Flight::background(id, work.caller.call(request))),
        Err(reason) => {
            let message = format!("Could not resume the call: {reason}");
            fail_detached(work.store.clone(), work.id, message, work.expires);
            None
        }
    }
}

/// A store write that records what the inner call said.
enum Write {
    Complete(Box<RawValue>),
    /// The store sets the status message from the error's `message`.
    Fail(Box<RawValue>),
    Input(InputRound),
}

fn internal(message: String) -> Write {
    Write::Fail(ErrorObject::new(INTERNAL_ERROR, message).to_raw())
}

fn failure(error: Box<RawValue>) -> Write {
    Write::Fail(error)
}

/// How long outcome writes are retried for a task without a TTL.
const RETRY_WITHOUT_TTL: Duration = Duration::from_secs(24 * 3600);

/// Writes for `work`'s task, retrying while the store is unreachable.
fn settle(work: &Work, write: Write) -> impl Future<Output = ()> + Send + 'static {
    let (store, id, expires) = (work.store.clone(), work.id, work.expires);
    async move { write_until(store.as_ref(), id, write, expires).await }
}

/// Writes, retrying backend failures with backoff (up to 5 s apart) until
/// the task would have expired anyway: an outcome reached during a store
/// outage is kept and written once the store is back. A task that is no
/// longer live (cancelled, expired, already terminal) keeps what it has.
async fn write_until(store: &dyn TaskStore, id: TaskId, write: Write, expires: Option<Timestamp>) {
    let give_up = expires.unwrap_or_else(|| Timestamp::now().saturating_add(RETRY_WITHOUT_TTL));
    let mut delay = Duration::from_millis(50);
    loop {
        let result = match &write {
            Write::Complete(result) => store.complete(id, result.clone()).await,
            Write::Fail(error) => store.fail(id, error.clone()).await,
            Write::Input(round) => store.require_input(id, round.clone()).await,
        };
        match result {
            Ok(()) | Err(StoreError::NotFound | StoreError::InvalidTransition { .. }) => return,
            Err(error) if Timestamp::now() >= give_up => {
                tracing::error!(task = %id, %error, "task store unreachable until the task expired");
                return;
            }
            Err(error) => {
                tracing::warn!(task = %id, %error, "task store unreachable, retrying the write");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}
