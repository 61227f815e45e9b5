//! Running a task's call again after the process that ran it stopped.
//!
//! | Step                 | Where                         | What                                                       |
//! |----------------------|-------------------------------|------------------------------------------------------------|
//! | park                 | [`record`]                    | a tool allowed re-runs (`tool_retry`) stores its call with the task: params as forwarded, URI, kept headers |
//! | the process stops    | the store                     | at its next open, the store fails the tasks that may not run again and counts an attempt for the others |
//! | the next first request | [`Runtime::recover`]        | the layer takes the store's orphans and re-issues each call, as a background call under `max_running` |
//!
//! A re-run keeps the task's TTL and its `max_runtime` deadline, both from
//! creation, and starts the call afresh: a cancelled, expired or finished
//! task is never run again (each orphan is read before it runs; a cancel
//! after that fires its stop signal).

use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::Runtime;
use super::dialect::Plain;
use super::drive;
use super::work::{Call, Slot, Work};
use crate::observe::{self, TaskTrace};
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::Template;
use crate::store::{Orphan, Rerun};
use crate::task::TaskStatus;

/// What a re-run sends, as kept in the store.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The request URI of the original call.
    uri: String,
    /// The headers a re-issued call carries (visible ASCII values only).
    headers: Vec<(String, String)>,
    /// The `tools/call` params as the layer forwarded them.
    params: Box<RawValue>,
}

/// The name of a `tools/call`'s tool, read from its params.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
}

/// Runs in all for a tool the inner server marks idempotent.
const HINTED_ATTEMPTS: u32 = 3;

/// The re-run record of a call parked with `template` and `params`, when its
/// tool may run again (a `tool_retry`, else the inner server's
/// `idempotentHint`, asked through `caller`) and the record fits in
/// `max_body_bytes`.
pub(crate) async fn record(
    runtime: &Runtime,
    caller: &mut dyn CallInner,
    template: &Template,
    params: &RawValue,
) -> Option<Rerun> {
    let config = &runtime.config;
    let name: Named<'_> = serde_json::from_str(params.get()).ok()?;
    let attempts = match config.retries.get(name.name.as_ref()) {
        Some(&attempts) => attempts,
        None if config.retry_hints => {
            let limit = config.max_result_bytes;
            let hinted = runtime
                .hints
                .idempotent(caller, template, limit, &name.name);
            if hinted.await { HINTED_ATTEMPTS } else { 1 }
        }
        None => 1,
    };
    if attempts < 2 {
        return None;
    }
    // Not `Host`: a re-run may go out from another instance, whose inner
    // server is reached under its own name.
    let headers = template
        .headers
        .iter()
        .filter(|(name, _)| *name != http::header::HOST)
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect();
    let record = Record {
        uri: template.uri.to_string(),
        headers,
        params: params.to_owned(),
    };
    let call = serde_json::value::to_raw_value(&record).ok()?;
    if call.get().len() > config.max_body_bytes {
        tracing::info!(tool = %name.name, "the call is too large to keep for a re-run: it runs at most once");
        return None;
    }
    Some(Rerun { call, attempts })
}

/// The template and params of a stored record.
fn read(call: &RawValue) -> Option<(Template, Box<RawValue>)> {
    let record: Record = serde_json::from_str(call.get()).ok()?;
    let headers = record
        .headers
        .iter()
        .filter_map(|(name, value)| {
            Some((
                HeaderName::from_bytes(name.as_bytes()).ok()?,
                HeaderValue::from_str(value).ok()?,
            ))
        })
        .collect();
    let template = Template {
        uri: record.uri.parse().ok()?,
        headers,
        extensions: http::Extensions::new(),
    };
    Some((template, record.params))
}

impl Runtime {
    /// Runs the store's orphans again through callers from `caller`, with
    /// `host` as their `Host`, on a detached tokio task; with a store whose
    /// orphans arrive while it runs (Redis), waits for more until the drain
    /// starts. The re-runs themselves are tracked work.
    pub(crate) fn recover_in_background(
        self: Arc<Self>,
        mut caller: impl FnMut() -> Box<dyn CallInner> + Send + 'static,
        host: Option<HeaderValue>,
    ) {
        let background = self.background.clone();
        background.spawn_detached(async move {
            let signal = self.store.orphan_signal();
            let closing = self.background.closing_signal();
            loop {
                let arrived = signal.as_ref().map(|signal| signal.notified());
                let started = self.recover(&mut caller, host.as_ref()).await;
                if started > 0 {
                    tracing::info!(started, "tasks of a stopped process run again");
                }
                let Some(arrived) = arrived else { break };
                tokio::select! {
                    _ = arrived => {}
                    _ = closing.cancelled() => break,
                }
            }
        });
    }

    /// Takes the store's orphans and runs each call again through a caller
    /// from `caller`; how many were started.
    async fn recover(
        &self,
        caller: &mut (impl FnMut() -> Box<dyn CallInner> + Send),
        host: Option<&HeaderValue>,
    ) -> usize {
        let orphans = match self.store.orphans().await {
            Ok(orphans) => orphans,
            Err(error) => {
                tracing::warn!(%error, "the store's tasks to run again could not be read");
                return 0;
            }
        };
        let mut started = 0;
        for orphan in orphans {
            if self.rerun(caller(), orphan, host).await {
                started += 1;
            }
        }
        started
    }

    /// Runs one orphan's call again, unless its task is no longer working.
    async fn rerun(
        &self,
        caller: Box<dyn CallInner>,
        orphan: Orphan,
        host: Option<&HeaderValue>,
    ) -> bool {
        let Orphan {
            id,
            owner,
            created_at,
            ttl,
            rerun,
            attempt,
            stop,
        } = orphan;
        match self.store.get(id, owner.as_deref()).await {
            Ok(Some(task)) if task.status() == TaskStatus::Working => {}
            Ok(_) => return false,
            // The store hands an orphan out once: skipping it would leave
            // its task `working` with no call. Run it; an outcome for a task
            // that ended meanwhile is refused by the store.
            Err(error) => {
                tracing::warn!(task = %id, %error, "a task to run again could not be read; running it anyway");
            }
        }
        let span = observe::task_span(id);
        let Some((mut template, params)) = read(&rerun.call) else {
            let _entered = span.enter();
            tracing::error!(task = %id, "a stored re-run record is unreadable");
            let expires = ttl.map(|ttl| created_at.saturating_add(ttl));
            self.fail_detached(
                id,
                "The stored call could not be read again".into(),
                (expires, None),
            );
            return false;
        };
        if let Some(host) = host {
            template.set_header(http::header::HOST, host.clone());
        }
        let trace = TaskTrace {
            span: span.clone(),
            parked: None,
            watchdog: None,
            call: None,
        };
        let call = Call {
            caller,
            template,
            params,
        };
        let mut work = Work::new(self, id, call, created_at, ttl, trace);
        work.stop = stop;
        work.rerunnable = true;
        span.in_scope(|| tracing::info!(task = %id, attempt, attempts = rerun.attempts, "running the call again"));
        match span.in_scope(|| drive::reissue(&mut work, None, None)) {
            Ok(flight) => {
                let slot = Slot::Wait(self.background.slots(), Some(self.queued.enter()));
                let abort = self.background.abort_signal();
                let driving =
                    drive::drive(work, Box::<Plain>::default(), Box::new(flight), slot, abort);
                self.background.spawn_in(span, driving);
                true
            }
            Err(message) => {
                let _entered = span.enter();
                self.fail_detached(id, message, (work.expires, None));
                false
            }
        }
    }
}
