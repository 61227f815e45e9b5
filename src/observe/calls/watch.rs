//! The record of one call while the layer handles it: a [`Watch`] on the
//! request's path, a [`ParkedCall`] once the call is a task.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use tokio::time::Instant;

use super::{CallObserver, CallOutcome, CallRecord};
use crate::wire::raw::str_at;

/// A call the layer routed and that has not ended: what its record needs.
/// Made only when an observer is installed. It shares the request body
/// (nothing copied) for the tool's name, which is decoded only at the end
/// (borrowed from the body unless it holds escapes).
pub(crate) struct Watch {
    observer: Arc<dyn CallObserver>,
    arrived: Instant,
    body: Bytes,
    /// Where `params.name` (the JSON string) is in `body`.
    name: Option<Range<usize>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("arrived", &self.arrived)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// The watch of a call sent on now, whose body is `body`, when there
    /// is an `observer` (else nothing, not even the clock, is read). The
    /// tokio clock, as the threshold's: paused time in a test moves both.
    pub(crate) fn start(
        observer: Option<&Arc<dyn CallObserver>>,
        body: &Bytes,
        name: Option<Range<usize>>,
    ) -> Option<Self> {
        let observer = observer?;
        Some(Self {
            observer: observer.clone(),
            arrived: Instant::now(),
            body: body.clone(),
            name,
        })
    }

    /// The call ended without becoming a task.
    pub(crate) fn finish(self, outcome: CallOutcome) {
        let tool = str_at(&self.body, self.name.clone()).unwrap_or_default();
        let record = CallRecord::new(&tool, self.arrived.elapsed(), false, outcome);
        self.observer.finished(&record);
    }

    /// The same call as a task's: its name copied out of the body, which
    /// the task does not keep.
    pub(crate) fn parked(&self) -> ParkedCall {
        let tool = str_at(&self.body, self.name.clone()).unwrap_or_default();
        ParkedCall::new(self.observer.clone(), self.arrived, tool.into())
    }
}

/// A parked call, to be recorded once when its task ends. Clones share it
/// (the task's trace is cloned while it waits for input); the first end
/// told is recorded, later ones are not.
#[derive(Clone)]
pub(crate) struct ParkedCall(Arc<Parked>);

struct Parked {
    observer: Arc<dyn CallObserver>,
    arrived: Instant,
    tool: Box<str>,
    recorded: AtomicBool,
}

impl std::fmt::Debug for ParkedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParkedCall")
            .field("tool", &self.0.tool)
            .field("recorded", &self.0.recorded.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ParkedCall {
    /// A call of `tool` that arrived at `arrived`, parked.
    pub(crate) fn new(observer: Arc<dyn CallObserver>, arrived: Instant, tool: Box<str>) -> Self {
        Self(Arc::new(Parked {
            observer,
            arrived,
            tool,
            recorded: AtomicBool::new(false),
        }))
    }

    /// The task ended with `outcome`: recorded, unless an end was already.
    pub(crate) fn ended(&self, outcome: CallOutcome) {
        self.record(true, outcome);
    }

    /// No task was started after all, and the client got an error: recorded
    /// as a failed call that did not park.
    pub(crate) fn refused(&self) {
        self.record(false, CallOutcome::Failed);
    }

    fn record(&self, parked: bool, outcome: CallOutcome) {
        let call = &self.0;
        if call.recorded.swap(true, Ordering::AcqRel) {
            return;
        }
        let record = CallRecord::new(&call.tool, call.arrived.elapsed(), parked, outcome);
        call.observer.finished(&record);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    type Seen = Arc<Mutex<Vec<(String, bool, CallOutcome)>>>;

    fn observer() -> (Seen, Arc<dyn CallObserver>) {
        let seen = Seen::default();
        let into = seen.clone();
        let observer = move |call: &CallRecord<'_>| {
            let entry = (call.tool.to_owned(), call.parked, call.outcome);
            into.lock().unwrap().push(entry);
        };
        (seen, Arc::new(observer))
    }

    #[test]
    fn no_observer_makes_no_watch() {
        let body = Bytes::from_static(br#"{"name":"a"}"#);
        assert!(Watch::start(None, &body, Some(8..11)).is_none());
    }

    #[test]
    fn a_watch_names_the_tool_as_sent_and_records_once() {
        let (seen, observer) = observer();
        let body = Bytes::from_static(br#"{"name":"t\u00e9"}"#);
        let watch = Watch::start(Some(&observer), &body, Some(8..17)).unwrap();
        let parked = watch.parked();
        watch.finish(CallOutcome::Succeeded);
        parked.ended(CallOutcome::Cancelled);
        parked.clone().ended(CallOutcome::Failed);
        let nameless = Watch::start(Some(&observer), &body, None).unwrap();
        nameless.finish(CallOutcome::Failed);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ("t\u{e9}".to_owned(), false, CallOutcome::Succeeded),
                ("t\u{e9}".to_owned(), true, CallOutcome::Cancelled),
                (String::new(), false, CallOutcome::Failed),
            ]
        );
    }
}
