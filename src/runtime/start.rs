//! Starting a task: under every limit, created durably, then driven.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use serde_json::value::RawValue;

use super::Runtime;
use super::dialect::Dialect;
use super::drive;
use super::work::{Call, Slot, Work};
use crate::observe::calls::ParkedCall;
use crate::observe::{self, TaskTrace, events};
use crate::runtime::flight::Flight;
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::Template;
use crate::store::{NewTask, QuotaScope, StoreError};
use crate::task::{TaskId, TaskSnapshot, Timestamp};

/// The most bytes of a tool's name a task keeps ([`NewTask::tool`]): a
/// client may send a name of any length, and the store keeps it as long as
/// the task.
const TOOL_NAME_BYTES: usize = 1024;

/// What a new task starts with.
pub(crate) struct Start {
    /// The store's owner key.
    pub owner: Option<String>,
    /// The called tool's name, as the client sent it (cut here).
    pub tool: Option<String>,
    pub ttl: Option<Duration>,
    pub status_message: Option<String>,
    pub caller: Box<dyn CallInner>,
    /// Credentials and extensions for calls sent later.
    pub template: Template,
    /// The `tools/call` params, for re-issuing (empty when never re-issued).
    pub params: Box<RawValue>,
    pub dialect: Box<dyn Dialect>,
    /// How long the call had run when it was parked.
    pub waited: Duration,
    /// The call, for the call observer, recorded when the task ends
    /// (`None` without an observer). Dropped unrecorded if no task starts.
    pub call: Option<ParkedCall>,
}

/// The inner call of a new task.
pub(crate) enum First {
    /// Running already: a 2026-07-28 call that outlived the threshold.
    Running(Flight),
    /// Sent once the task exists: a 2025-11-25 call with `params.task`.
    Send {
        id: Box<RawValue>,
        request: Box<Request<Bytes>>,
    },
}

/// Why no task was started.
#[derive(Debug)]
pub(crate) enum Why {
    /// The layer is draining.
    Draining,
    /// Every place among the background calls is taken.
    Busy,
    /// The store's quota for this owner, or in total, is reached.
    Quota(QuotaScope),
    /// The store failed (the details are logged where it happened).
    Store,
}

impl Why {
    /// What the client is told (never a backend detail).
    pub(crate) fn message(&self, runtime: &Runtime) -> String {
        let config = &runtime.config;
        match self {
            Self::Draining => "The server is shutting down and starts no new tasks".to_owned(),
            Self::Busy => format!(
                "The server runs {} tasks already, its limit; try again later",
                config.max_running
            ),
            Self::Quota(QuotaScope::Owner) => format!(
                "This principal has {} live tasks, the limit; wait for some to expire",
                config.quota.per_owner.unwrap_or_default()
            ),
            Self::Quota(QuotaScope::Total) => format!(
                "The server holds {} live tasks, its limit; try again later",
                config.quota.total.unwrap_or_default()
            ),
            Self::Store => super::STORE_UNAVAILABLE.to_owned(),
        }
    }

    /// Whether a limit (rather than a failure) refused the task.
    pub(crate) fn is_limit(&self) -> bool {
        !matches!(self, Self::Store)
    }

    /// The `reason` label of a refusal at a limit.
    fn label(&self) -> &'static str {
        match self {
            Self::Draining => "draining",
            Self::Busy => "running",
            Self::Quota(QuotaScope::Owner) => "quota_owner",
            Self::Quota(QuotaScope::Total) => "quota_total",
            Self::Store => "store",
        }
    }

    /// Records the refusal when a limit made it.
    fn record(&self, runtime: &Runtime) {
        if self.is_limit() {
            events::refused(self.label(), &self.message(runtime));
        }
    }
}

/// A task that was not started, and its call when it is still there.
pub(crate) struct NotStarted {
    pub why: Why,
    pub first: Option<Box<First>>,
}

/// `name` as a task keeps it: whole up to [`TOOL_NAME_BYTES`], else its
/// first bytes up to that, cut at a character boundary, and `…`.
fn kept_tool_name(name: String) -> String {
    if name.len() <= TOOL_NAME_BYTES {
        return name;
    }
    let head = crate::text::head(&name, TOOL_NAME_BYTES);
    // A new string of its own size: the long one's buffer goes.
    let mut kept = String::with_capacity(head.len() + '…'.len_utf8());
    kept.push_str(head);
    kept.push('…');
    kept
}

impl Runtime {
    /// Creates a task (durably: `get` finds it once this resolves) and
    /// drives its call on a tracked tokio task. Both happen there, so a
    /// client that hangs up meanwhile cannot leave a task nothing drives.
    ///
    /// Refused while draining, when no background place is free, over the
    /// store's quota, or when the store fails; the call is then given back.
    pub(crate) async fn start(
        &self,
        start: Start,
        first: First,
    ) -> Result<TaskSnapshot, NotStarted> {
        match TaskId::generate() {
            Ok(id) => self.start_as(id, start, first).await,
            Err(error) => {
                tracing::error!(%error, "no task id from the OS random source");
                Err(NotStarted {
                    why: Why::Store,
                    first: Some(Box::new(first)),
                })
            }
        }
    }

    /// [`start`](Self::start) with an id drawn already (a 2025-11-25 call
    /// carries it in the id of its forwarded request).
    pub(crate) async fn start_as(
        &self,
        id: TaskId,
        mut start: Start,
        first: First,
    ) -> Result<TaskSnapshot, NotStarted> {
        let refuse = |why: Why, first| {
            why.record(self);
            Err(NotStarted {
                why,
                first: Some(Box::new(first)),
            })
        };
        if self.background.is_closing() {
            return refuse(Why::Draining, first);
        }
        let Some(slot) = self.background.try_slot() else {
            return refuse(Why::Busy, first);
        };
        let created_at = Timestamp::now();
        // Only a call that runs already (2026-07-28) forwards params that
        // can be sent again as they are.
        let rerun = match &first {
            First::Running(_) if self.store.keeps_reruns() => {
                let caller = &mut *start.caller;
                super::rerun::record(self, caller, &start.template, &start.params).await
            }
            _ => None,
        };
        let rerunnable = rerun.is_some();
        let task = NewTask {
            id,
            owner: start.owner,
            created_at,
            ttl: start.ttl,
            poll_interval: self.config.poll_interval,
            status_message: start.status_message,
            quota: self.config.quota,
            tool: start.tool.map(kept_tool_name),
            rerun,
        };
        let call = Call {
            caller: start.caller,
            template: start.template,
            params: start.params,
        };
        let trace = TaskTrace {
            span: observe::task_span(id),
            parked: Some(std::time::Instant::now()),
            watchdog: None,
            call: start.call,
        };
        let mut work = Work::new(self, id, call, created_at, start.ttl, trace);
        work.rerunnable = rerunnable;
        let (dialect, abort) = (start.dialect, self.background.abort_signal());
        let waited = start.waited;
        let span = work.trace.span.clone();
        let (created_tx, created_rx) = tokio::sync::oneshot::channel();
        let background = self.background.clone();
        self.background.spawn_in(span, async move {
            // A drain may have closed since the check above; it waits for
            // this tracked work, but must not see a task start after it.
            if background.is_closing() {
                let why = Why::Draining;
                let _ = created_tx.send(Err(NotStarted {
                    why,
                    first: Some(Box::new(first)),
                }));
                return;
            }
            let created = match work.store.create(task).await {
                Ok(created) => created,
                Err(StoreError::QuotaExceeded(scope)) => {
                    // Recorded below, where the layer's settings are.
                    let _ = created_tx.send(Err(NotStarted {
                        why: Why::Quota(scope),
                        first: Some(Box::new(first)),
                    }));
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, "the task store could not create a task");
                    let why = Why::Store;
                    let _ = created_tx.send(Err(NotStarted {
                        why,
                        first: Some(Box::new(first)),
                    }));
                    return;
                }
            };
            work.stop = created.stop;
            events::parked(id, waited);
            let flight = match first {
                First::Running(mut flight) => {
                    flight.parked();
                    flight
                }
                First::Send { id, request } => {
                    Flight::background(id, work.caller.call(*request), work.max_result)
                }
            };
            // The client may be gone; the task exists and is driven regardless.
            let _ = created_tx.send(Ok(created.snapshot));
            // A tokio task of its own, so that this one (which held the
            // creation, its arguments and its channel) ends here: a parked
            // task's memory is the driver's alone.
            let span = work.trace.span.clone();
            let driving = drive::drive(work, dialect, Box::new(flight), Slot::Held(slot), abort);
            background.spawn_in(span, driving);
        });
        let started = created_rx.await.unwrap_or_else(|_| {
            tracing::error!(task = %id, "the task's creation ended without an answer");
            Err(NotStarted {
                why: Why::Store,
                first: None,
            })
        });
        if let Err(NotStarted {
            why: why @ Why::Quota(_),
            ..
        }) = &started
        {
            why.record(self);
        }
        started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_is_kept_whole_up_to_its_bound() {
        let name = "a".repeat(TOOL_NAME_BYTES);
        assert_eq!(kept_tool_name(name.clone()), name);
        assert_eq!(kept_tool_name(String::new()), "");
    }

    #[test]
    fn a_longer_tool_name_is_cut_at_a_character_boundary_and_marked() {
        let kept = kept_tool_name("b".repeat(1 << 20));
        assert_eq!(kept, format!("{}…", "b".repeat(TOOL_NAME_BYTES)));
        assert!(
            kept.capacity() < 2 * TOOL_NAME_BYTES,
            "the long buffer is let go"
        );
        // `é` is two bytes: the bound falls inside the one at 1023..1025.
        let kept = kept_tool_name(format!(
            "{}é{}",
            "c".repeat(TOOL_NAME_BYTES - 1),
            "d".repeat(9)
        ));
        assert_eq!(kept, format!("{}…", "c".repeat(TOOL_NAME_BYTES - 1)));
    }
}
