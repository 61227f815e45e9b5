//! Inner servers with tasks of their own (the 2026-07-28 tasks extension
//! in their `server/discover`): their tasks pass through the layer.
//!
//! | The inner server…          | A declaring client's `tools/call`            | A task method whose id is not of the layer's form |
//! |----------------------------|-----------------------------------------------|---------------------------------------------------|
//! | declares the extension     | forwarded with the client's extension: a task handle the inner server answers in time reaches the client as it is | forwarded to the inner server as sent |
//! | does not, or cannot be asked | the extension removed: only the layer makes tasks | `-32602`, an unknown task |
//!
//! A task that passes through is the inner server's: its id, owner, TTL,
//! limits and store are those of the inner server, which sees the client's
//! credentials on every request, as it would without the layer. The layer
//! neither stores nor counts it. A call that outlives the threshold before
//! the inner server answers is parked as any other; should it then answer
//! a task handle, the layer follows that task to its end (`runtime::follow`).
//!
//! What the inner server declares is learnt from any `server/discover`
//! answer the layer relays, or asked by the layer (with the credentials of
//! the request that needs to know) when a request needs it before any. A
//! discover that cannot be read counts as "no" for [`RETRY`], then is asked
//! again; one that was read holds for the life of the layer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;

use crate::runtime::flight::ask::{self, Declares};
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::Template;
use crate::wire::TASKS_EXTENSION;
use crate::wire::raw::Members;

/// How long a `server/discover` of the layer's may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);
/// How long "no" stands when the inner server could not be asked (it may
/// be restarting, or the request that asked may have carried credentials
/// it refused): short, as the server's own tasks are off meanwhile.
const RETRY: Duration = Duration::from_secs(30);

/// What the layer knows of the inner server's own tasks.
#[derive(Default)]
pub(crate) struct OwnTasks {
    /// What an answered discover said: [`NO`] or [`YES`], or 0 while none
    /// was read. Read on every declaring call, so an atomic.
    answered: AtomicU8,
    /// When an ask last failed (counts as "no" for [`RETRY`]).
    failed: Mutex<Option<Instant>>,
    /// One ask at a time: requests that need to know meanwhile wait for it.
    asking: tokio::sync::Mutex<()>,
}

/// A discover was read, without the tasks extension.
const NO: u8 = 1;
/// A discover was read, with it.
const YES: u8 = 2;

impl OwnTasks {
    /// Whether the inner server declares the tasks extension, when known.
    pub(crate) fn known(&self) -> Option<bool> {
        match self.answered.load(Ordering::Acquire) {
            NO => Some(false),
            YES => Some(true),
            _ => {
                let failed = *self.failed.lock().unwrap_or_else(|p| p.into_inner());
                failed
                    .is_some_and(|at| at.elapsed() < RETRY)
                    .then_some(false)
            }
        }
    }

    /// Records what a discover answer declared.
    fn set(&self, has: bool) {
        self.answered
            .store(if has { YES } else { NO }, Ordering::Release);
    }

    /// Records an ask that failed, now.
    fn failed(&self) {
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    /// Records what a relayed `server/discover` answer (`message`, a
    /// JSON-RPC message) declares; other messages are left alone.
    pub(crate) fn saw(&self, message: &str) {
        if let Some(has) = declares_tasks(message) {
            self.set(has);
        }
    }

    /// Whether the inner server declares the tasks extension: as known, or
    /// asked now through `caller` with `template`'s credentials.
    pub(crate) async fn learn(
        &self,
        caller: &mut dyn CallInner,
        template: &Template,
        limit: usize,
    ) -> bool {
        if let Some(has) = self.known() {
            return has;
        }
        let _asking = self.asking.lock().await;
        if let Some(has) = self.known() {
            return has;
        }
        let asked = tokio::time::timeout(ASK_TIMEOUT, discover(caller, template, limit)).await;
        match asked.unwrap_or_else(|_| Err("server/discover took too long".to_owned())) {
            Ok(has) => {
                tracing::info!(tasks = has, "the inner server's own tasks extension");
                self.set(has);
                has
            }
            Err(reason) => {
                tracing::info!(
                    reason,
                    "the inner server's server/discover could not be read"
                );
                self.failed();
                false
            }
        }
    }
}

/// Asks the inner server's `server/discover`.
async fn discover(
    caller: &mut dyn CallInner,
    template: &Template,
    limit: usize,
) -> Result<bool, String> {
    let id = "\"mcp-tasks:discover\"";
    let meta = ask::modern_meta(Declares::Nothing);
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"server/discover","params":{{{meta}}}}}"#);
    let request = ask::request(template, body, "server/discover", None, None)?;
    let result = ask::result(caller, id, request, limit).await?;
    declared(&result).ok_or_else(|| "server/discover answered no capabilities".to_owned())
}

/// Whether `message`, a `server/discover` response, declares the tasks
/// extension; `None` when it is no such response.
fn declares_tasks(message: &str) -> Option<bool> {
    let result = Members::parse(message).ok()?.get("result")?;
    declared(result)
}

/// Whether a `server/discover` result declares the tasks extension.
fn declared(result: &RawValue) -> Option<bool> {
    let capabilities = Members::parse(result.get()).ok()?.get("capabilities")?;
    let Some(extensions) = Members::parse(capabilities.get()).ok()?.get("extensions") else {
        return Some(false);
    };
    let extensions = Members::parse(extensions.get()).ok()?;
    Some(extensions.get(TASKS_EXTENSION).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discover_answer_says_whether_the_inner_server_has_tasks() {
        let with = r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/ui":{},"io.modelcontextprotocol/tasks":{}}}}}"#;
        let without = r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/ui":{}}}}}"#;
        let none = r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}}}}"#;
        assert_eq!(declares_tasks(with), Some(true));
        assert_eq!(declares_tasks(without), Some(false));
        assert_eq!(declares_tasks(none), Some(false));
        assert_eq!(declares_tasks(r#"{"jsonrpc":"2.0","method":"x"}"#), None);
        assert_eq!(
            declares_tasks(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            None
        );

        let own = OwnTasks::default();
        assert_eq!(own.known(), None);
        own.saw(r#"{"jsonrpc":"2.0","method":"notifications/message"}"#);
        assert_eq!(own.known(), None);
        own.saw(with);
        assert_eq!(own.known(), Some(true));
        own.saw(without);
        assert_eq!(own.known(), Some(false));
    }

    #[test]
    fn an_inner_server_that_could_not_be_asked_is_asked_again_later() {
        let own = OwnTasks::default();
        own.failed();
        assert_eq!(own.known(), Some(false));
        let past = Instant::now().checked_sub(RETRY + Duration::from_secs(1));
        if let Some(past) = past {
            *own.failed.lock().unwrap() = Some(past);
            assert_eq!(own.known(), None);
        }
    }
}
