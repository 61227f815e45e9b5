//! What the inner server's `tools/list` says of its tools that the layer
//! needs: which are marked safe to run twice
//! (`annotations.idempotentHint: true`), for re-runs, which declare an
//! `outputSchema`, which the fallback's answer could not match, and which
//! the server runs only as tasks of its own (`execution.taskSupport:
//! "required"`, 2025-11-25), whose tasks the layer follows (`legacy::call`).
//!
//! | Rule                                                         | Why                                                          |
//! |--------------------------------------------------------------|--------------------------------------------------------------|
//! | asked only when a call of a tool without an explicit `tool_retry` is parked over a store that keeps re-runs, or a call falls back | the fast path and every other store pay nothing |
//! | one `tools/list` walk (at most [`PAGES`] pages, [`WALK_TIMEOUT`] in all) per protocol generation, kept for [`FRESH`] | a parked call waits for it once, and not long; a server may list its tools differently to each generation |
//! | a failed or unreadable answer counts as "no tool is marked", kept as long | an inner server that cannot list is not asked on every park |
//! | sent with the parked call's credentials and the 2026-07-28 request `_meta`, or, for a call of an older session, in that session as its version | what the inner server needs to answer it as a client's own |

use std::collections::HashSet;
use std::time::{Duration, Instant};

use http::HeaderValue;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Mutex;

use crate::flight::ask::{self, Declares};
use crate::flight::caller::CallInner;
use crate::mrtr::Template;

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
    read: Mutex<[Option<(Instant, Marked)>; 2]>,
}

/// The names of the tools with each mark.
#[derive(Default)]
struct Marked {
    idempotent: HashSet<String>,
    structured: HashSet<String>,
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
    #[serde(rename = "outputSchema", default)]
    output_schema: Option<serde::de::IgnoredAny>,
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

    /// Whether `tool` declares an `outputSchema`, read as
    /// [`idempotent`](Self::idempotent) is; `older`: the
    /// `MCP-Protocol-Version` of a session-based client, asked as its own.
    pub(crate) async fn structured(
        &self,
        caller: &mut dyn CallInner,
        (template, older): (&Template, Option<&HeaderValue>),
        limit: usize,
        tool: &str,
    ) -> bool {
        self.with_marks(caller, (template, older), limit, |marked| {
            marked.structured.contains(tool)
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
        let mut slots = self.read.lock().await;
        let read = &mut slots[usize::from(older.is_some())];
        let stale = read.as_ref().is_none_or(|(at, _)| at.elapsed() >= FRESH);
        if stale {
            let walk = walk(caller, template, limit, older);
            let walked = tokio::time::timeout(WALK_TIMEOUT, walk).await;
            let marked = walked
                .unwrap_or_else(|_| Err("tools/list took too long".to_owned()))
                .unwrap_or_else(|reason| {
                    tracing::info!(reason, "the inner server's tools/list could not be read");
                    Marked::default()
                });
            *read = Some((Instant::now(), marked));
        }
        read.as_ref().is_some_and(|(_, marked)| ask(marked))
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
            if tool.output_schema.is_some() {
                marked.structured.insert(tool.name.clone());
            }
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
