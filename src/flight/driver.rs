//! Parking a flight as a task and driving it to its outcome in the background.
//!
//! Once parked, the inner call runs on its own tokio task, independent of
//! the client's connection. It ends in exactly one of these ways, none of
//! which leaves the task `working`:
//!
//! | What happens                        | The task                                  |
//! |-------------------------------------|-------------------------------------------|
//! | the inner server answers            | `completed` / `failed` (see `flight`)     |
//! | `tasks/cancel`                      | already `cancelled`; the inner call is dropped, which cancels it |
//! | the TTL runs out                    | gone; the inner call is dropped           |
//! | the inner service panics            | `failed`, `-32603`                        |
//! | the store fails to take the outcome | retried with backoff, then logged         |

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::{Answer, Event, Flight};
use crate::store::{NewTask, StoreError, TaskStore};
use crate::task::{TaskId, TaskSnapshot, Timestamp};
use crate::wire::Outcome;
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR};

/// What a parked task is created with.
pub(crate) struct Parking {
    pub store: Arc<dyn TaskStore>,
    pub owner: Option<String>,
    pub ttl: Option<Duration>,
    pub poll_interval: Option<Duration>,
}

/// Creates the task (durably: `get` finds it once this returns) and hands the
/// flight to a background driver. On a store failure the flight is dropped,
/// which cancels the inner call, and no task exists.
pub(crate) async fn park(
    parking: Parking,
    mut flight: Flight,
    status_message: Option<String>,
) -> Result<TaskSnapshot, StoreError> {
    flight.parked();
    let id = TaskId::generate().map_err(|error| StoreError::Backend(Box::new(error)))?;
    let created = parking
        .store
        .create(NewTask {
            id,
            owner: parking.owner,
            created_at: Timestamp::now(),
            ttl: parking.ttl,
            poll_interval: parking.poll_interval,
            status_message,
        })
        .await?;
    tokio::spawn(drive(parking.store, id, created.stop, flight));
    Ok(created.snapshot)
}

async fn drive(store: Arc<dyn TaskStore>, id: TaskId, stop: CancellationToken, flight: Flight) {
    let work = AssertUnwindSafe(run(store.as_ref(), id, flight)).catch_unwind();
    tokio::select! {
        biased;
        // Dropping `work` drops the flight and with it the inner call.
        _ = stop.cancelled() => {}
        finished = work => {
            if finished.is_err() {
                let error = ErrorObject::new(INTERNAL_ERROR, "The inner call panicked");
                settle(store.as_ref(), id, Write::Fail(error.message.clone(), error.to_raw())).await;
            }
        }
    }
}

async fn run(store: &dyn TaskStore, id: TaskId, mut flight: Flight) {
    loop {
        match flight.next_event().await {
            Event::Progress(line) => {
                if let Err(error) = store.set_status_message(id, line).await {
                    tracing::debug!(task = %id, %error, "progress not recorded");
                }
            }
            Event::Done(answer) => return settle(store, id, write_for(answer)).await,
        }
    }
}

/// The store write that records an answer.
enum Write {
    Complete(Box<RawValue>),
    Fail(String, Box<RawValue>),
}

fn internal(message: String) -> Write {
    let error = ErrorObject::new(INTERNAL_ERROR, message);
    Write::Fail(error.message.clone(), error.to_raw())
}

fn write_for(answer: Answer) -> Write {
    let outcome = match answer {
        Answer::Json { outcome, .. } | Answer::Sse { outcome, .. } => outcome,
        Answer::Unusable { reason, .. } => {
            return internal(format!("The tool call failed: {reason}"));
        }
    };
    match outcome {
        Outcome::Result(result) => Write::Complete(result),
        Outcome::Error(error) => {
            let message = serde_json::from_str::<serde_json::Value>(error.get())
                .ok()
                .and_then(|e| e.get("message")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| "The tool call answered an error".to_owned());
            Write::Fail(message, error)
        }
        Outcome::InputRequired(_) => internal(
            "The tool asked for client input after the call became a task, which this layer cannot relay yet"
                .to_owned(),
        ),
    }
}

const ATTEMPTS: u32 = 10;

/// Writes the outcome, retrying backend failures with backoff. A task that is
/// no longer live (cancelled, expired) keeps what it has.
async fn settle(store: &dyn TaskStore, id: TaskId, write: Write) {
    let mut delay = Duration::from_millis(50);
    for attempt in 1..=ATTEMPTS {
        let result = match &write {
            Write::Complete(result) => store.complete(id, result.clone()).await,
            Write::Fail(message, error) => {
                let _ = store.set_status_message(id, message.clone()).await;
                store.fail(id, error.clone()).await
            }
        };
        match result {
            Ok(()) | Err(StoreError::NotFound | StoreError::InvalidTransition { .. }) => return,
            Err(error) if attempt == ATTEMPTS => {
                tracing::error!(task = %id, %error, "task outcome lost after {ATTEMPTS} attempts");
            }
            Err(error) => {
                tracing::warn!(task = %id, %error, "task outcome not stored yet, retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}
