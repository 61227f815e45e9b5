//! The start's word on the fallback: which of the upstream's tools a client
//! without tasks gets its task for, and after how long (logged once the
//! upstream lists them; the first page of its `tools/list`).

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http_body_util::{BodyExt, Full};
use mcp_tasks::{MODERN_VERSION, TasksConfig};
use serde::Deserialize;
use tower::ServiceExt;

use crate::upstream::Upstream;

/// How long the listing may take.
const LIST_WAIT: Duration = Duration::from_secs(30);

/// The most bytes of the listing read.
const LIST_LIMIT: usize = 16 * 1024 * 1024;

/// Lists the upstream's tools in the background and logs, for each, when
/// the fallback answers for it (`config`'s rules); a failure is a warning.
pub fn log_fallback(upstream: Upstream, config: TasksConfig) {
    tokio::spawn(async move {
        let listed = tokio::time::timeout(LIST_WAIT, names(upstream)).await;
        let names = match listed {
            Ok(Ok(names)) => names,
            Ok(Err(why)) => {
                tracing::warn!(%why, "the upstream's tools could not be listed at start, to say which the fallback answers for");
                return;
            }
            Err(_) => {
                tracing::warn!(waited = ?LIST_WAIT, "the upstream did not list its tools at start, to say which the fallback answers for");
                return;
            }
        };
        let (answered, never): (Vec<_>, Vec<_>) = names
            .iter()
            .map(|name| (name, config.fallback_after(name)))
            .partition(|(_, after)| after.is_some());
        let answered: Vec<String> = answered
            .into_iter()
            .filter_map(|(name, after)| Some(format!("{name} after {:?}", after?)))
            .collect();
        let never: Vec<&str> = never.into_iter().map(|(name, _)| name.as_str()).collect();
        tracing::info!(
            answered = %answered.join(", "),
            never = %never.join(", "),
            "the fallback answers clients without tasks for these tools (one with an outputSchema is listed with a wider one)"
        );
    });
}

#[derive(Deserialize)]
struct Answer {
    result: Listed,
}

#[derive(Deserialize)]
struct Listed {
    tools: Vec<Named>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

/// The names of the upstream's tools (the first page), asked as a
/// 2026-07-28 client, which both upstreams serve.
async fn names(upstream: Upstream) -> Result<Vec<String>, String> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"mcp-tasks-gateway-start","method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN_VERSION}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let request = http::Request::post("/")
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN_VERSION)
        .header("mcp-method", "tools/list")
        .body(Full::new(Bytes::from(body)))
        .map_err(|error| error.to_string())?;
    let Ok(response) = upstream.oneshot(request).await;
    let status = response.status();
    // Read with a plain error type: a boxed one held across an await keeps
    // the future from being `Send` (rust-lang/rust#102211).
    let mut body = response
        .into_body()
        .map_err(|error| std::io::Error::other(error.to_string()));
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| error.to_string())?;
        if let Ok(data) = frame.into_data() {
            read.extend_from_slice(&data);
        }
        if read.len() > LIST_LIMIT {
            return Err(format!("its tool list is over {LIST_LIMIT} bytes"));
        }
    }
    let text = String::from_utf8_lossy(&read);
    // A JSON body, or the data of the SSE event that holds the result.
    let message = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.contains("\"result\""))
        .unwrap_or(&text);
    let answer: Answer = serde_json::from_str(message)
        .map_err(|_| format!("the upstream answered HTTP {status} without a tool list"))?;
    Ok(answer
        .result
        .tools
        .into_iter()
        .map(|tool| tool.name)
        .collect())
}
