//! Starting a task's call again once the client answered its input round.

use http::request::Parts;

use super::Runtime;
use super::dialect::Plain;
use super::drive;
use super::follow;
use super::settle::{internal, observed, write_until, written};
use super::work::{Slot, Work};
use crate::observe::calls::ParkedCall;
use crate::observe::{self, TaskTrace, events};
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::{self, Resume, Template};
use crate::store::InputProgress;
use crate::task::{TaskId, Timestamp};

impl Runtime {
    /// Re-issues a call whose input round the client completed, with the
    /// credentials and extensions of the `tasks/update` that completed it.
    /// The call waits for a place among the background calls.
    pub(crate) fn resume(
        &self,
        caller: Box<dyn CallInner>,
        parts: &Parts,
        task: TaskId,
        round: InputProgress,
    ) {
        let InputProgress::RoundComplete {
            answers,
            resume,
            stop,
        } = round
        else {
            return;
        };
        let mut resume: Resume = match serde_json::from_str(resume.get()) {
            Ok(resume) => resume,
            Err(error) => {
                tracing::error!(%task, %error, "a stored resume context is unreadable");
                let message = "The stored resume context is unreadable".to_owned();
                let call = self.waiting.take(task).and_then(|trace| trace.call);
                self.fail_detached(task, message, (None, call));
                return;
            }
        };
        let answers = mrtr::inner_answers(&resume, answers);
        // The task's span when it waited here; a new one (a child of this
        // tasks/update) when it was parked on another instance.
        let trace = self.waiting.take(task).unwrap_or_else(|| TaskTrace {
            span: observe::task_span(task),
            parked: None,
            watchdog: None,
            call: None,
        });
        trace.span.follows_from(tracing::Span::current());
        trace
            .span
            .in_scope(|| events::resumed(task, resume.round + 1));
        let mut template = Template::from_parts(parts);
        template.set_param_headers(&resume.param_headers);
        let request_state = resume.request_state.take();
        let inner_task = resume.inner_task.take();
        let call = (caller, template);
        let mut work = Work::resumed(self, task, stop, call, resume, trace);
        let span = work.trace.span.clone();
        // The answers go into the call again, or, when the inner server's
        // own task asked, to that task (`follow`).
        let (reissued, dialect) = span.in_scope(|| match inner_task {
            None => {
                let flight = drive::reissue(&mut work, Some(answers), request_state);
                (flight, Plain::default())
            }
            Some(inner) => {
                let keys = answers.iter().map(|(key, _)| key.clone()).collect();
                let flight = follow::update(&mut work, &inner, &answers);
                (flight, Plain::updating(inner, keys))
            }
        });
        match reissued {
            Ok(flight) => {
                let slot = Slot::Wait(self.background.slots(), None);
                let abort = self.background.abort_signal();
                let driving = drive::drive(work, Box::new(dialect), Box::new(flight), slot, abort);
                self.background.spawn_in(span, driving);
            }
            Err(message) => {
                let _entered = span.enter();
                let call = work.trace.call.take();
                self.fail_detached(task, message, (work.expires, call));
            }
        }
    }

    /// Fails a task with `-32603` and `message`, retrying like any outcome
    /// write until it `expires`, on a tracked tokio task; its `call` is
    /// recorded as failed.
    pub(crate) fn fail_detached(
        &self,
        id: TaskId,
        message: String,
        (expires, call): (Option<Timestamp>, Option<ParkedCall>),
    ) {
        let store = self.store.clone();
        self.background.spawn(async move {
            let write = internal(message);
            let recorded = write_until(store.as_ref(), id, &write, expires).await;
            if recorded {
                written(id, &write, None);
            }
            observed(call.as_ref(), &write, recorded, expires);
        });
    }
}
