//! What the inner server's `tools/list` says of its tools that the layer
//! needs: which are marked safe to run twice
//! (`annotations.idempotentHint: true`), for re-runs, and which the server
//! runs only as tasks of its own (`execution.taskSupport:
//! "required"`, 2025-11-25), whose tasks the layer follows (`legacy::call`).
//!
//! | Rule                                                         | Why                                                          |
//! |--------------------------------------------------------------|--------------------------------------------------------------|
//! | asked only when a call of a tool without an explicit `tool_retry` is parked over a store that keeps re-runs, | the fast path and every other store pay nothing |
//! | one `tools/list` walk (at most [`PAGES`] pages, [`WALK_TIMEOUT`] in all) per protocol generation, kept for [`FRESH`]; parks beside it wait for it, at most until [`WALK_TIMEOUT`] after it began, then walk themselves | a parked call waits for it once, and not long; a server may list its tools differently to each generation; a walk whose park is no longer polled (its client stopped reading) holds up nobody |
//! | a failed or unreadable answer counts as "no tool is marked", kept as long | an inner server that cannot list is not asked on every park |
//! | sent with the parked call's credentials and the 2026-07-28 request `_meta`, or, for a call of an older session, in that session as its version | what the inner server needs to answer it as a client's own |

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use http::HeaderValue;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::runtime::flight::ask::{self, Declares};
use crate::runtime::flight::caller::CallInner;
use crate::runtime::mrtr::Template;

/// How long a walk of `tools/list` is believed.
const FRESH: Duration = Duration::from_secs(300);
/// The most pages one walk reads.
const PAGES: usize = 10;
/// How long a whole walk may take: a parked call (and any parked beside it)
/// waits for it before its handle goes out; past it, no tool counts as
/// marked until the next walk.
const WALK_TIMEOUT: Duration = Duration::from_secs(3);

/// What the inner server's tools say, as last read.
#[derive(Default)]
pub(crate) struct Hints {
    /// As a 2026-07-28 client, and as an older session, asked.
    read: Mutex<[Slot; 2]>,
}

/// One generation's marks, and the walk that reads them again.
#[derive(Default)]
struct Slot {
    marks: Option<(Instant, Marked)>,
    /// The walk under way: parks that find the marks stale wait for it
    /// rather than walk too, but only until [`WALK_TIMEOUT`] after it began,
    /// since it runs in the future of the park that started it, which its
    /// client may stop polling (a response body it does not read).
    walk: Option<Walk>,
}

struct Walk {
    since: Instant,
    /// Closed when the walk ends or is dropped.
    done: watch::Receiver<()>,
}

impl Walk {
    /// Whether waiting for this walk can still help.
    fn alive(&self) -> bool {
        self.since.elapsed() < WALK_TIMEOUT && self.done.has_changed().is_ok()
    }
}

/// The names of the tools with each mark.
#[derive(Default)]
struct Marked {
    idempotent: HashSet<String>,
    task_required: HashSet<String>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    tools: Vec<Listed>,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct Listed {
    name: String,
    #[serde(default)]
    annotations: Option<Annotations>,
    #[serde(default)]
    execution: Option<Execution>,
}

#[derive(Deserialize)]
struct Execution {
    #[serde(rename = "taskSupport")]
    task_support: Option<String>,
}

#[derive(Deserialize)]
struct Annotations {
    #[serde(rename = "idempotentHint")]
    idempotent_hint: Option<bool>,
}

impl Hints {
    /// Whether the inner server marks `tool` idempotent; reads its
    /// `tools/list` through `caller` when the last read is stale.
    pub(crate) async fn idempotent(
        &self,
        caller: &mut dyn CallInner,
        template: &Template,
        limit: usize,
        tool: &str,
    ) -> bool {
        self.with_marks(caller, (template, None), limit, |marked| {
            marked.idempotent.contains(tool)
        })
        .await
    }

    /// Whether the inner server runs `tool` only as a task of its own
    /// (2025-11-25 `execution.taskSupport: "required"`), asked in the
    /// session of `template` as version `older`.
    pub(crate) async fn task_required(
        &self,
        caller: &mut dyn CallInner,
        (template, older): (&Template, &HeaderValue),
        limit: usize,
        tool: &str,
    ) -> bool {
        self.with_marks(caller, (template, Some(older)), limit, |marked| {
            marked.task_required.contains(tool)
        })
        .await
    }

    async fn with_marks(
        &self,
        caller: &mut dyn CallInner,
        (template, older): (&Template, Option<&HeaderValue>),
        limit: usize,
        ask: impl FnOnce(&Marked) -> bool,
    ) -> bool {
        let generation = usize::from(older.is_some());
        let _walking = loop {
            let waiting = {
                let mut slots = self.lock();
                let slot = &mut slots[generation];
                if let Some((at, marked)) = &slot.marks
                    && at.elapsed() < FRESH
                {
                    return ask(marked);
                }
                match &slot.walk {
                    Some(walk) if walk.alive() => (walk.since, walk.done.clone()),
                    _ => {
                        let (walking, done) = watch::channel(());
                        let since = Instant::now();
                        slot.walk = Some(Walk { since, done });
                        break walking;
                    }
                }
            };
            let (since, mut done) = waiting;
            // Ends when the walk does (its sender dropped), or gives up on it.
            let _ = tokio::time::timeout_at(since + WALK_TIMEOUT, done.changed()).await;
        };
        let walk = walk(caller, template, limit, older);
        let walked = tokio::time::timeout(WALK_TIMEOUT, walk).await;
        let marked = walked
            .unwrap_or_else(|_| Err("tools/list took too long".to_owned()))
            .unwrap_or_else(|reason| {
                tracing::info!(reason, "the inner server's tools/list could not be read");
                Marked::default()
            });
        let mut slots = self.lock();
        let slot = &mut slots[generation];
        let answer = ask(&marked);
        slot.marks = Some((Instant::now(), marked));
        slot.walk = None;
        answer
    }

    fn lock(&self) -> MutexGuard<'_, [Slot; 2]> {
        // Marks only: a panic elsewhere leaves them usable.
        self.read.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads every page of `tools/list`; the names of the marked tools.
async fn walk(
    caller: &mut dyn CallInner,
    template: &Template,
    limit: usize,
    older: Option<&HeaderValue>,
) -> Result<Marked, String> {
    let mut marked = Marked::default();
    let mut cursor: Option<String> = None;
    for page in 0..PAGES {
        let text = list(caller, template, limit, page, &cursor, older).await?;
        let page: Page = serde_json::from_str(text.get()).map_err(|e| e.to_string())?;
        for tool in page.tools {
            let support = tool.execution.and_then(|e| e.task_support);
            if support.as_deref() == Some("required") {
                marked.task_required.insert(tool.name.clone());
            }
            if tool.annotations.and_then(|a| a.idempotent_hint) == Some(true) {
                marked.idempotent.insert(tool.name);
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(marked),
        }
    }
    Ok(marked)
}

/// One `tools/list` page: the result object.
async fn list(
    caller: &mut dyn CallInner,
    template: &Template,
    limit: usize,
    page: usize,
    cursor: &Option<String>,
    older: Option<&HeaderValue>,
) -> Result<Box<RawValue>, String> {
    let id = format!("\"mcp-tasks:tools-list:{page}\"");
    let cursor = cursor
        .as_ref()
        .map(|c| format!("\"cursor\":{}", serde_json::Value::String(c.clone())));
    // A call of an older, session-based client asks as its version (in its
    // session: the template keeps `Mcp-Session-Id`); a 2026-07-28 one with
    // the request `_meta`.
    let meta = older.is_none().then(|| ask::modern_meta(Declares::Nothing));
    let params = [meta, cursor].into_iter().flatten().collect::<Vec<_>>();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{}}}}}"#,
        params.join(",")
    );
    let request = ask::request(template, body, "tools/list", None, older)?;
    ask::result(caller, &id, request, limit).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::flight::InnerFuture;
    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::{BodyExt, Full};
    use std::task::Poll;

    /// An inner server whose `tools/list` never answers.
    struct Silent;

    impl CallInner for Silent {
        fn call(&mut self, _: Request<Bytes>) -> InnerFuture {
            Box::pin(std::future::pending())
        }
    }

    /// An inner server that lists one tool, `t`, marked idempotent.
    struct Listing;

    impl CallInner for Listing {
        fn call(&mut self, _: Request<Bytes>) -> InnerFuture {
            let body = r#"{"jsonrpc":"2.0","id":"mcp-tasks:tools-list:0","result":{"tools":[{"name":"t","annotations":{"idempotentHint":true}}]}}"#;
            let body = Full::new(Bytes::from_static(body.as_bytes()))
                .map_err(|never| match never {})
                .boxed_unsync();
            let response = Response::builder()
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .unwrap();
            Box::pin(async move { Ok(response) })
        }
    }

    fn template() -> Template {
        Template {
            uri: "http://127.0.0.1/mcp".parse().unwrap(),
            headers: Vec::new(),
            extensions: http::Extensions::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_walk_nobody_polls_holds_up_no_other_park() {
        let (hints, template) = (Hints::default(), template());
        let mut silent = Silent;
        let mut stalled = Box::pin(hints.idempotent(&mut silent, &template, 1 << 20, "t"));
        // Polled once, so it began the walk; then never again (its client
        // stopped reading the response it is parked in).
        let polled = std::future::poll_fn(|cx| Poll::Ready(stalled.as_mut().poll(cx))).await;
        assert!(polled.is_pending());

        let started = Instant::now();
        let mut listing = Listing;
        let beside = hints.idempotent(&mut listing, &template, 1 << 20, "t");
        let answered = tokio::time::timeout(WALK_TIMEOUT * 3, beside).await;
        assert_eq!(answered, Ok(true), "read by a walk of its own");
        assert!(
            started.elapsed() <= WALK_TIMEOUT,
            "waited at most for the stalled walk"
        );
        // And kept for the next park.
        let mut silent = Silent;
        assert!(hints.idempotent(&mut silent, &template, 1 << 20, "t").await);
    }

    #[tokio::test(start_paused = true)]
    async fn parks_beside_a_walk_wait_for_it_instead_of_walking_too() {
        let (hints, template) = (Hints::default(), template());
        let (mut first, mut second) = (Listing, Silent);
        let (a, b) = tokio::join!(
            hints.idempotent(&mut first, &template, 1 << 20, "t"),
            hints.idempotent(&mut second, &template, 1 << 20, "t"),
        );
        // The second never asked its silent server: it took the first's walk.
        assert!(a && b);
    }
}
