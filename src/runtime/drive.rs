//! Driving a task's inner call to its outcome in the background.
//!
//! Once a task exists, its inner call runs on a tokio task of its own,
//! independent of the client's connection. It ends in exactly one of these
//! ways, none of which leaves the task `working`:
//!
//! | What happens                        | The task                                  |
//! |-------------------------------------|-------------------------------------------|
//! | the inner server answers            | `completed` / `failed` (see `flight`)     |
//! | the inner server asks for input     | `input_required`; `tasks/update` resumes it |
//! | it asks for input too often         | `failed`: more rounds than `max_input_rounds` |
//! | it sheds load (`requestState` only) | retried at once, a bounded number of times |
//! | it was not reached (`Unreached`)    | sent again with backoff until it answers; the status message says so |
//! | `tasks/cancel`, expiry              | already `cancelled` / gone; the inner call is dropped, which cancels it |
//! | the runtime limit or TTL comes near | `failed` with the reason (see `deadline`); the call is dropped |
//! | the layer drains and gives up       | `failed`: "the server shut down"; the call is dropped |
//! | the inner service panics            | `failed`, `-32603`                        |
//! | the store fails to take the outcome | retried with backoff, then logged         |
//!
//! What differs between protocol generations reaches the driver through a
//! [`Dialect`]; the driver itself knows none.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::dialect::Dialect;
use super::follow::{self, Followed};
use super::settle::{Write, internal, observed, settle, stopped, write_until, written};
use super::work::{Slot, Work};
use crate::backoff::Backoff;
use crate::observe::calls::ParkedCall;
use crate::observe::events::{self, End};
use crate::observe::{self, TaskTrace};
use crate::runtime::deadline::Deadline;
use crate::runtime::flight::{Answer, Event, Flight};
use crate::runtime::mrtr::{self, Next};
use crate::task::Timestamp;
use crate::wire::Outcome;
use serde_json::value::RawValue;

/// How many load-shedding retries in a row before the task fails.
const SHED_RETRIES: u32 = 8;

/// How a driver stopped before its call settled.
enum Stopped {
    /// Cancelled or expired (the store fired the task's stop signal).
    Signal,
    /// The layer drained and gave up on running tasks.
    Aborted,
    /// The deadline passed.
    Overran(Deadline),
    /// The inner service panicked.
    Panicked,
}

/// How `run` ended.
enum Ended {
    /// The task has its outcome.
    Settled,
    /// The task waits for the client's input; nothing runs until it comes.
    AwaitingInput,
}

/// Drives `flight` for `work` until the task is terminal or waits for input.
/// The caller spawns it (tracked); `abort` is the layer's drain signal.
/// The flight comes boxed: the state below is handed it three times over
/// (this block, the one that waits for a running slot, `run`).
///
/// A plain function around an `async move` block rather than an `async fn`:
/// an `async fn` keeps each argument twice in its state (as passed, and as
/// the local it is moved into), and this state lives as long as the task.
#[allow(clippy::manual_async_fn)] // an `async fn` would keep the arguments twice
pub(crate) fn drive(
    mut work: Work,
    mut dialect: Box<dyn Dialect>,
    flight: Box<Flight>,
    slot: Slot,
    abort: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    async move {
        let stop = work.stop.clone();
        let deadline = work.deadline;
        let overrun = passed(deadline);
        let running = async {
            let _permit = match slot {
                Slot::Held(permit) => permit,
                Slot::Wait(slots, queued) => {
                    let permit = slots.acquire_owned().await;
                    drop(queued);
                    match permit {
                        Ok(permit) => permit,
                        Err(_) => return Err(Stopped::Aborted),
                    }
                }
            };
            let _running = Running::start();
            let ran = AssertUnwindSafe(run(&mut work, &mut *dialect, flight))
                .catch_unwind()
                .await;
            ran.map_err(|_| Stopped::Panicked)
        };
        let outcome = tokio::select! {
            biased;
            // Dropping `running` drops the flight and with it the inner call.
            _ = stop.cancelled() => Err(Stopped::Signal),
            _ = abort.cancelled() => Err(Stopped::Aborted),
            deadline = overrun => Err(Stopped::Overran(deadline)),
            ran = running => ran,
        };
        let message = match outcome {
            Ok(Ended::Settled) => return,
            Ok(Ended::AwaitingInput) => {
                let inner = dialect.inner_task().map(str::to_owned);
                let (waiting, id, expires) = (work.waiting.clone(), work.id, work.expires);
                let trace = work.trace.clone();
                let watchdog = match inner {
                    None => watch_input(&work, abort),
                    Some(inner) => watch_inner_input(work, abort, inner),
                };
                waiting.put(id, TaskTrace { watchdog, ..trace }, expires);
                return;
            }
            Err(Stopped::Signal) => {
                // Cancelled (counted where the cancel was answered) or expired.
                if work.expires.is_some_and(|at| at <= Timestamp::now()) {
                    events::ended(work.id, End::Expired, work.trace.parked);
                }
                if let Some(call) = &work.trace.call {
                    call.ended(stopped(work.expires));
                }
                None
            }
            Err(Stopped::Aborted) if work.rerunnable => {
                // Left `working` in a store that hands it to the next process,
                // which runs the call again.
                events::stopped(work.id, "drain", "handed over to the next start");
                None
            }
            Err(Stopped::Aborted) => Some((
                "drain",
                "The server shut down before the task finished".to_owned(),
            )),
            Err(Stopped::Overran(deadline)) => Some(("deadline", deadline.message())),
            Err(Stopped::Panicked) => Some(("panic", "The inner call panicked".to_owned())),
        };
        if let Some((by, message)) = message {
            tracing::warn!(task = %work.id, message, "task stopped");
            events::stopped(work.id, by, &message);
            settle(&work, internal(message)).await;
        }
        if let Err(error) = dialect.abandon(&mut work).await {
            tracing::debug!(task = %work.id, error, "the abandoned call could not be told");
        }
    }
}

/// A task waiting for input still has its deadline: a small watchdog fails
/// it then, unless it ends first. Resuming the task here stops the
/// watchdog (the resumed driver keeps the deadline), through the returned
/// handle. Not tracked: a drain does not wait for clients to answer.
fn watch_input(work: &Work, abort: CancellationToken) -> Option<tokio::task::AbortHandle> {
    let deadline = work.deadline?;
    let (store, id, expires, stop) = (work.store.clone(), work.id, work.expires, work.stop.clone());
    let (parked, call) = (work.trace.parked, work.trace.call.clone());
    let watchdog = async move {
        tokio::select! {
            _ = stop.cancelled() => {
                if let Some(call) = &call {
                    call.ended(stopped(expires));
                }
            }
            _ = abort.cancelled() => {}
            deadline = passed(Some(deadline)) => {
                fail_past(store.as_ref(), (id, expires, parked), call, deadline).await;
            }
        }
    };
    let spawned = (work.trace.span).in_scope(|| work.background.spawn_detached(watchdog));
    Some(spawned.abort_handle())
}

/// `deadline` once it has passed; never, without one.
async fn passed(deadline: Option<Deadline>) -> Deadline {
    match deadline {
        Some(deadline) => {
            tokio::time::sleep(deadline.remaining()).await;
            deadline
        }
        None => std::future::pending().await,
    }
}

/// Fails a task waiting for input, past its `deadline`: `(id, expires,
/// parked)` and its watched `call` as the task's work has them. A write
/// dropped means the task ended elsewhere (another instance resumed it and
/// wrote its outcome): that end is not known here, so nothing is recorded.
async fn fail_past(
    store: &dyn crate::store::TaskStore,
    (id, expires, parked): (
        crate::task::TaskId,
        Option<Timestamp>,
        Option<std::time::Instant>,
    ),
    call: Option<ParkedCall>,
    deadline: Deadline,
) {
    let write = internal(deadline.message());
    if write_until(store, id, &write, expires).await {
        written(id, &write, parked);
        observed(call.as_ref(), &write, true, expires);
    }
}

/// [`watch_input`] for a task whose input the inner server's own task asks
/// for (`follow`): that task waits too, and is cancelled when the layer's
/// ends without an answer (cancelled, expired, past its deadline, or
/// drained by a process whose store does not hand it on). The watchdog
/// keeps the work, to send that cancel with the task's credentials; it
/// runs even without a deadline.
fn watch_inner_input(
    mut work: Work,
    abort: CancellationToken,
    inner: String,
) -> Option<tokio::task::AbortHandle> {
    let (stop, deadline) = (work.stop.clone(), work.deadline);
    let (span, background) = (work.trace.span.clone(), work.background.clone());
    let watchdog = async move {
        let drained = tokio::select! {
            _ = stop.cancelled() => {
                if let Some(call) = &work.trace.call {
                    call.ended(stopped(work.expires));
                }
                false
            }
            _ = abort.cancelled() => true,
            deadline = passed(deadline) => {
                let task = (work.id, work.expires, work.trace.parked);
                let call = work.trace.call.clone();
                fail_past(work.store.as_ref(), task, call, deadline).await;
                false
            }
        };
        // A store that hands the task to the next process keeps it waiting.
        if !(drained && work.rerunnable) {
            follow::cancel(&mut work, &inner).await;
        }
    };
    let spawned = span.in_scope(|| background.spawn_detached(watchdog));
    Some(spawned.abort_handle())
}

/// Runs `flight` and the calls re-issued after it; like [`drive`], a plain
/// function, so that its arguments are kept once.
#[allow(clippy::manual_async_fn)] // as for `drive`
fn run<'a>(
    work: &'a mut Work,
    dialect: &'a mut dyn Dialect,
    mut flight: Box<Flight>,
) -> impl Future<Output = Ended> + Send + 'a {
    async move {
        loop {
            let answer = loop {
                match flight.next_event().await {
                    Event::Progress(line) => {
                        if let Err(error) = work.store.set_status_message(work.id, line).await {
                            tracing::debug!(task = %work.id, %error, "progress not recorded");
                        }
                    }
                    Event::Request(message) => {
                        if let Err(reason) = dialect.request(work, message).await {
                            settle(work, internal(reason)).await;
                            return Ended::Settled;
                        }
                    }
                    Event::Done(answer) => break *answer,
                }
            };
            // Boxed: its state would otherwise be reserved for the whole run.
            match Box::pin(handle(work, dialect, answer)).await {
                Handled::Next(next) => *flight = next,
                Handled::Ended(ended) => return ended,
            }
        }
    }
}

enum Handled {
    Next(Flight),
    Ended(Ended),
}

/// Records an answer; returns the next flight when the call must be retried.
async fn handle(work: &mut Work, dialect: &mut dyn Dialect, answer: Answer) -> Handled {
    let settled = Handled::Ended(Ended::Settled);
    // A call that never reached the inner server is sent again once it is
    // up: only the first send of a round (a later one carries answers the
    // driver no longer holds), and not a call that follows an inner task.
    if answer.unreached() && work.round == 0 && dialect.inner_task().is_none() {
        return Box::pin(unreached(work)).await;
    }
    work.unreached = 0;
    let cut = answer.cut();
    let outcome = match answer.into_outcome() {
        Ok(outcome) => outcome,
        Err(reason) => {
            // A call that may run again whose answer broke off: once more,
            // while it has runs left (only the first send of a round: a
            // later one carries answers the driver no longer holds).
            let rerun = cut && work.rerunnable && work.round == 0 && dialect.inner_task().is_none();
            if rerun && let Some(next) = Box::pin(run_again(work, dialect, &reason)).await {
                return next;
            }
            let spent = if rerun { " (no run of it is left)" } else { "" };
            let message = format!("The tool call failed: {reason}{spent}");
            settle(work, internal(message)).await;
            // The stream broke, but the tool may still run.
            if let Err(error) = dialect.abandon(work).await {
                tracing::debug!(task = %work.id, error, "the abandoned call could not be told");
            }
            return settled;
        }
    };
    let result = match outcome {
        Outcome::InputRequired(result) => result,
        Outcome::Result(result) => {
            match dialect.follow(work, &result) {
                Followed::Outcome => settle(work, Write::Complete(result)).await,
                Followed::Next(next) => return Handled::Next(next),
                Followed::Complete(result) => settle(work, Write::Complete(result)).await,
                Followed::Failed(error) => settle(work, Write::Fail(error)).await,
                Followed::Input(asked) => return Box::pin(ask(work, dialect, asked)).await,
                Followed::Error(message) => {
                    settle(work, internal(message)).await;
                    // Whatever the inner server still runs for the call.
                    if let Err(error) = dialect.abandon(work).await {
                        tracing::debug!(task = %work.id, error, "the abandoned call could not be told");
                    }
                }
            }
            return settled;
        }
        Outcome::Error(error) => {
            settle(work, Write::Fail(error)).await;
            return settled;
        }
    };
    ask(work, dialect, result).await
}

/// Records an `input_required` answer: an input round for the client, or a
/// retry of a call that shed load.
async fn ask(work: &mut Work, dialect: &mut dyn Dialect, result: Box<RawValue>) -> Handled {
    let settled = Handled::Ended(Ended::Settled);
    let asked = mrtr::on_input_required(
        &result,
        work.round + 1,
        &work.params,
        (work.expires, work.deadline),
        &work.template,
        dialect.inner_task(),
    );
    match asked {
        Ok(Next::Ask(_)) if work.round >= work.max_rounds => {
            let message = format!(
                "The tool asked for input more than {} times (the layer's max_input_rounds)",
                work.max_rounds
            );
            settle(work, internal(message)).await;
            settled
        }
        Ok(Next::Ask(round)) => {
            work.round += 1;
            work.attempts = 0;
            work.shed = 0;
            settle(work, Write::Input(round)).await;
            Handled::Ended(Ended::AwaitingInput)
        }
        Ok(Next::Retry(state)) if work.shed < SHED_RETRIES => {
            work.shed += 1;
            tokio::time::sleep(SHED_BACKOFF.nth(work.shed)).await;
            match reissue(work, None, state) {
                Ok(flight) => Handled::Next(flight),
                Err(message) => {
                    settle(work, internal(message)).await;
                    settled
                }
            }
        }
        Ok(Next::Retry(_)) => {
            let message = "The inner server kept shedding load (input_required without requests)";
            settle(work, internal(message.into())).await;
            settled
        }
        Err(reason) => {
            settle(work, internal(format!("The tool call failed: {reason}"))).await;
            settled
        }
    }
}

/// The waits before a call that did not reach the inner server is sent
/// again: from 250 ms, doubling up to 10 s.
const UNREACHED_BACKOFF: Backoff =
    Backoff::new(Duration::from_millis(250), Duration::from_secs(10));

/// The waits before a call whose inner server shed load is sent again:
/// from 20 ms (after the first shed), doubling up to 640 ms.
const SHED_BACKOFF: Backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(640));

/// Sends again, after a backoff, a call that did not reach the inner
/// server; the task's status message says that it waits. The driver's
/// deadline, stop signal and drain end the wait as they end a call.
async fn unreached(work: &mut Work) -> Handled {
    let wait = UNREACHED_BACKOFF.nth(work.unreached);
    work.unreached = work.unreached.saturating_add(1);
    let message = format!(
        "Waiting for the inner server, which could not be reached; trying again in {wait:?}"
    );
    tracing::info!(task = %work.id, ?wait, "the inner server could not be reached; the call waits for it");
    if let Err(error) = work.store.set_status_message(work.id, message).await {
        tracing::debug!(task = %work.id, %error, "status not recorded");
    }
    tokio::time::sleep(wait).await;
    reissued(work).await
}

/// A call that may run again, whose answer broke off (its inner server
/// died under it, say), sent again when the store counts one more run for
/// it: runs by a cut and by a restart share one count, so a tool never
/// runs more times in all than it allows. `None` with no run left.
async fn run_again(work: &mut Work, dialect: &mut dyn Dialect, reason: &str) -> Option<Handled> {
    let why = format!("The call broke off ({reason})");
    let (run, runs) = work.store.count_attempt(work.id, why).await.ok()??;
    // Whatever the inner server still runs of the broken call.
    if let Err(error) = dialect.abandon(work).await {
        tracing::debug!(task = %work.id, error, "the abandoned call could not be told");
    }
    tracing::info!(task = %work.id, run, runs, reason, "the call broke off; it runs again");
    Some(reissued(work).await)
}

/// The call sent again as it was, or the task failed when it cannot be.
async fn reissued(work: &mut Work) -> Handled {
    match reissue(work, None, None) {
        Ok(flight) => Handled::Next(flight),
        Err(message) => {
            settle(work, internal(message)).await;
            Handled::Ended(Ended::Settled)
        }
    }
}

/// Sends the call again with `answers` and `request_state`.
pub(crate) fn reissue(
    work: &mut Work,
    answers: Option<Vec<(String, Box<RawValue>)>>,
    request_state: Option<String>,
) -> Result<Flight, String> {
    work.attempts += 1;
    let call = mrtr::Call {
        task: work.id,
        round: work.round,
        attempt: work.attempts,
    };
    match mrtr::reissue(&work.template, call, &work.params, answers, request_state) {
        Ok((id, request)) => {
            let span = observe::inner_call_span(work.id, work.round, work.attempts);
            let future = span.in_scope(|| work.caller.call(request));
            let future = Box::pin(future.instrument(span));
            Ok(Flight::background(id, future, work.max_result))
        }
        Err(reason) => Err(format!("Could not resume the call: {reason}")),
    }
}

/// Counts a parked call in `mcp_tasks_running` while it lives.
struct Running;

impl Running {
    fn start() -> Self {
        metrics::gauge!(observe::metrics::RUNNING).increment(1.0);
        Self
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        metrics::gauge!(observe::metrics::RUNNING).decrement(1.0);
    }
}
