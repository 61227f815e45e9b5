//! What a protocol generation adds to a task's life, as the engine asks it.

use std::future::Future;
use std::pin::Pin;

use serde_json::value::RawValue;

use super::follow::{self, Followed, Following};
use super::work::Work;

/// A boxed future borrowing the work, as [`Dialect`] methods return.
pub(crate) type Step<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// What a protocol generation adds to driving a task.
///
/// The 2026-07-28 extension adds little ([`Plain`]). A 2025-11-25
/// call relays the inner server's requests and must be told when it is
/// abandoned (`legacy::input`).
pub(crate) trait Dialect: Send {
    /// The inner server sent a request of its own on the call's stream.
    /// An `Err` fails the task with that message.
    fn request<'a>(&'a mut self, work: &'a mut Work, message: Box<RawValue>) -> Step<'a>;

    /// The call was given up (cancelled, expired, over a limit, drained, or
    /// its stream broke) while the tool may still be running.
    fn abandon<'a>(&'a mut self, work: &'a mut Work) -> Step<'a>;

    /// The call answered `result`: whether that is the call's outcome, or
    /// only the handle of a task the inner server made of its own, whose
    /// outcome is read next (see [`Followed`]).
    fn follow(&mut self, work: &mut Work, result: &RawValue) -> Followed {
        let _ = (work, result);
        Followed::Outcome
    }

    /// The inner server's own task the call follows, whose input requests
    /// are answered with its `tasks/update`.
    fn inner_task(&self) -> Option<&str> {
        None
    }
}

/// The 2026-07-28 dialect: a parked call cannot ask its client anything,
/// and dropping its stream cancels it. What it adds is the task the inner
/// server may answer with when it has tasks of its own (`follow`).
#[derive(Default)]
pub(crate) struct Plain {
    following: Following,
}

impl Plain {
    /// The dialect of a task whose input, `answered` (the inner keys), went
    /// to the inner server's task `inner` (`tasks/update`).
    pub(crate) fn updating(inner: String, answered: Vec<String>) -> Self {
        Self {
            following: Following::updating(inner, answered),
        }
    }
}

impl Dialect for Plain {
    fn request<'a>(&'a mut self, _: &'a mut Work, _: Box<RawValue>) -> Step<'a> {
        Box::pin(async { Ok(()) })
    }

    fn abandon<'a>(&'a mut self, work: &'a mut Work) -> Step<'a> {
        Box::pin(async move {
            if let Some(inner) = self.following.inner() {
                follow::cancel(work, inner).await;
            }
            Ok(())
        })
    }

    fn follow(&mut self, work: &mut Work, result: &RawValue) -> Followed {
        follow::follow(&mut self.following, work, result)
    }

    fn inner_task(&self) -> Option<&str> {
        self.following.inner()
    }
}
