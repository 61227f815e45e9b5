//! Writing a task's outcome to the store, whatever the store's state.
//!
//! | Write          | Store call        | When the store fails                                  |
//! |----------------|-------------------|-------------------------------------------------------|
//! | a result       | `complete`        | retried with backoff (up to 5 s apart) until the task would have expired |
//! | an error       | `fail`            | the same                                              |
//! | an input round | `require_input`   | the same                                              |
//!
//! A task that is no longer live (cancelled, expired, already terminal)
//! keeps what it has: the write is dropped, never forced.
//!
//! What a write means for the call observer (`observe::calls`), when the
//! task's call is watched:
//!
//! | Write                       | Recorded as                                  |
//! |-----------------------------|----------------------------------------------|
//! | a result, written           | `Succeeded`; `Failed` with `isError: true`   |
//! | an error, written           | `Failed`                                     |
//! | an input round, written     | nothing yet: the task goes on                |
//! | any, dropped (no longer live) | [`stopped`]: `Failed` if the task expired, else `Cancelled`; nothing when the input watchdog's failure is dropped, as the task may have ended on another instance |

use std::future::Future;
use std::time::Duration;

use serde_json::value::RawValue;

use super::work::Work;
use crate::backoff::Backoff;
use crate::observe::calls::{CallOutcome, ParkedCall};
use crate::observe::events::{self, End};
use crate::store::{InputRound, StoreError, TaskStore};
use crate::task::{TaskId, Timestamp};
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR, error_message};
use crate::wire::verdict::is_error_result;

/// A store write that records what the inner call said.
pub(crate) enum Write {
    Complete(Box<RawValue>),
    /// The store sets the status message from the error's `message`.
    Fail(Box<RawValue>),
    Input(InputRound),
}

/// A `-32603` failure with `message`.
pub(crate) fn internal(message: String) -> Write {
    Write::Fail(ErrorObject::new(INTERNAL_ERROR, message).to_raw())
}

/// How long outcome writes are retried for a task without a TTL.
const RETRY_WITHOUT_TTL: Duration = Duration::from_secs(24 * 3600);

/// Writes for `work`'s task, retrying while the store is unreachable, on a
/// tracked tokio task of its own: the write completes even if the driver is
/// stopped while it waits.
pub(super) fn settle(work: &Work, write: Write) -> impl Future<Output = ()> + Send + 'static {
    let (store, id, expires) = (work.store.clone(), work.id, work.expires);
    let (parked, call) = (work.trace.parked, work.trace.call.clone());
    let writing = async move {
        let recorded = write_until(store.as_ref(), id, &write, expires).await;
        if recorded {
            written(id, &write, parked);
        }
        observed(call.as_ref(), &write, recorded, expires);
    };
    let done = work.background.spawn(writing);
    async move {
        let _ = done.await;
    }
}

/// The lifecycle event of a write that was recorded.
pub(crate) fn written(id: TaskId, write: &Write, parked: Option<std::time::Instant>) {
    match write {
        Write::Complete(_) => events::ended(id, End::Completed, parked),
        Write::Fail(error) => {
            let message = error_message(error);
            events::ended(id, End::Failed(message.as_deref().unwrap_or("")), parked);
        }
        Write::Input(_) => events::input_requested(id),
    }
}

/// Records the end of a watched `call` for `write`, `recorded` or dropped
/// (see the module docs); the task `expires` then.
pub(crate) fn observed(
    call: Option<&ParkedCall>,
    write: &Write,
    recorded: bool,
    expires: Option<Timestamp>,
) {
    let Some(call) = call else { return };
    let outcome = match write {
        _ if !recorded => stopped(expires),
        Write::Complete(result) if is_error_result(result) => CallOutcome::Failed,
        Write::Complete(_) => CallOutcome::Succeeded,
        Write::Fail(_) => CallOutcome::Failed,
        Write::Input(_) => return,
    };
    call.ended(outcome);
}

/// How a task that stopped without its outcome ended, for the call
/// observer: `Failed` when it `expires` by now (its time ran out), else
/// `Cancelled` (by its client, or the operator's cancel or delete).
pub(crate) fn stopped(expires: Option<Timestamp>) -> CallOutcome {
    if expires.is_some_and(|at| at <= Timestamp::now()) {
        CallOutcome::Failed
    } else {
        CallOutcome::Cancelled
    }
}

/// Writes, retrying backend failures with backoff (up to 5 s apart) until
/// the task would have expired anyway: an outcome reached during a store
/// outage is kept and written once the store is back. A task that is no
/// longer live (cancelled, expired, already terminal) keeps what it has.
/// Whether the write was recorded.
pub(crate) async fn write_until(
    store: &dyn TaskStore,
    id: TaskId,
    write: &Write,
    expires: Option<Timestamp>,
) -> bool {
    let give_up = expires.unwrap_or_else(|| Timestamp::now().saturating_add(RETRY_WITHOUT_TTL));
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
    loop {
        let result = match write {
            Write::Complete(result) => store.complete(id, result.clone()).await,
            Write::Fail(error) => store.fail(id, error.clone()).await,
            Write::Input(round) => store.require_input(id, round.clone()).await,
        };
        match result {
            Ok(()) => return true,
            Err(StoreError::NotFound | StoreError::InvalidTransition { .. }) => return false,
            Err(error) if Timestamp::now() >= give_up => {
                tracing::error!(task = %id, %error, "task store unreachable until the task expired");
                return false;
            }
            Err(error) => {
                tracing::warn!(task = %id, %error, "task store unreachable, retrying the write");
                backoff.sleep().await;
            }
        }
    }
}
