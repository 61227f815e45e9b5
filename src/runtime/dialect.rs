//! What a protocol generation adds to a task's life, as the engine asks it.

use std::future::Future;
use std::pin::Pin;

use serde_json::value::RawValue;

use super::work::Work;
use crate::flight::Flight;

/// A boxed future borrowing the work, as [`Dialect`] methods return.
pub(crate) type Step<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// What a protocol generation adds to driving a task.
///
/// The 2026-07-28 extension adds nothing ([`Plain`]): a parked call cannot
/// ask its client anything, and dropping its stream cancels it. A 2025-11-25
/// call relays the inner server's requests and must be told when it is
/// abandoned (`legacy::input`).
pub(crate) trait Dialect: Send {
    /// The inner server sent a request of its own on the call's stream.
    /// An `Err` fails the task with that message.
    fn request<'a>(&'a mut self, work: &'a mut Work, message: Box<RawValue>) -> Step<'a>;

    /// The call was given up (cancelled, expired, over a limit, drained, or
    /// its stream broke) while the tool may still be running.
    fn abandon<'a>(&'a mut self, work: &'a mut Work) -> Step<'a>;

    /// The call answered `result`: the flight that reads the call's outcome
    /// when `result` is not it yet (the inner server made a task of its
    /// own), or an `Err` that fails the task. `None`: `result` is the
    /// outcome.
    fn follow(&mut self, work: &mut Work, result: &RawValue) -> Option<Result<Flight, String>> {
        let _ = (work, result);
        None
    }
}

/// The 2026-07-28 dialect: nothing to add.
pub(crate) struct Plain;

impl Dialect for Plain {
    fn request<'a>(&'a mut self, _: &'a mut Work, _: Box<RawValue>) -> Step<'a> {
        Box::pin(async { Ok(()) })
    }

    fn abandon<'a>(&'a mut self, _: &'a mut Work) -> Step<'a> {
        Box::pin(async { Ok(()) })
    }
}
