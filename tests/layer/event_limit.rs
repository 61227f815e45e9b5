//! An SSE answer in time is bounded one event at a time as well: an event
//! larger than `max_result_bytes` is not held whole. The client gets the
//! events before it and then a JSON-RPC error for its call that names the
//! limit, and the inner stream is dropped, not read to its end.

use crate::support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response};
use http_body_util::{Full, StreamBody};
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer};
use serde_json::{Value, json};
use support::in_process::{discover_answer, post, read_message, send_raw, tasks_declared};
use tower::Layer;

/// The layer's event limit here.
const LIMIT: usize = 64 * 1024;
/// The inner server's one big event is sent in this many chunks…
const CHUNKS: usize = 64;
/// …of this size: 1 MiB in all, sixteen times the limit.
const CHUNK: usize = 16 * 1024;

type InnerBody = StreamBody<
    futures_util::stream::BoxStream<'static, Result<http_body::Frame<Bytes>, Infallible>>,
>;

/// An inner server whose `tools/call` answers an SSE stream: `first`
/// (whole events), then one response event of `CHUNKS` chunks; `pulled`
/// counts the chunks read from it.
fn inner(
    first: &'static str,
    pulled: Arc<AtomicUsize>,
) -> impl tower::Service<
    Request<RequestBody<Full<Bytes>>>,
    Response = Response<InnerBody>,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    tower::service_fn(move |request: Request<RequestBody<Full<Bytes>>>| {
        let pulled = pulled.clone();
        async move {
            let message = read_message(request.into_body()).await;
            if let Some(answer) = discover_answer::<String>(&message) {
                let (parts, body) = answer.into_parts();
                let frame = Ok(http_body::Frame::data(Bytes::from(body)));
                let stream = futures_util::stream::once(async move { frame });
                let body: InnerBody = StreamBody::new(Box::pin(stream));
                return Ok(Response::from_parts(parts, body));
            }
            let id = message["id"].to_string();
            let opening = format!(
                r#"data: {{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            );
            let chunks = (0..=CHUNKS).map(move |n| match n {
                0 => Bytes::from(first),
                1 => Bytes::from(format!("{opening}{}", "x".repeat(CHUNK))),
                _ => Bytes::from("x".repeat(CHUNK)),
            });
            let tail = std::iter::once(Bytes::from_static(b"\"}]}}\n\n"));
            let stream = futures_util::stream::iter(chunks.chain(tail)).then(move |bytes| {
                let pulled = pulled.clone();
                async move {
                    pulled.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    Ok(http_body::Frame::data(bytes))
                }
            });
            let body: InnerBody = StreamBody::new(Box::pin(stream));
            Ok(Response::builder()
                .header("content-type", "text/event-stream")
                .body(body)
                .expect("a response"))
        }
    })
}

/// The JSON-RPC messages of an SSE body.
fn messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

async fn call_through_the_layer(first: &'static str) -> (Vec<Value>, usize) {
    let pulled = Arc::new(AtomicUsize::new(0));
    let layer = TasksLayer::new(MemoryTaskStore::new())
        .threshold(Duration::from_secs(30))
        .max_result_bytes(LIMIT);
    let service = layer.layer(inner(first, pulled.clone()));
    let call = post(
        "tools/call",
        json!({"name": "big", "arguments": {}}),
        Some("big"),
        tasks_declared(),
    );
    let (status, body) = send_raw(&service, call).await;
    assert_eq!(status, 200);
    (messages(&body), pulled.load(Ordering::SeqCst))
}

fn assert_cut_at_the_limit(last: &Value, pulled: usize) {
    assert_eq!(last["id"], 1, "{last}");
    assert_eq!(last["error"]["code"], -32603, "{last}");
    let message = last["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("limit of {LIMIT} bytes")),
        "{message}"
    );
    assert!(
        pulled < CHUNKS,
        "the inner stream was read to its end: {pulled} chunks"
    );
}

#[tokio::test]
async fn a_big_event_after_a_comment_is_cut_with_an_error_that_names_the_limit() {
    let (messages, pulled) = call_through_the_layer(": opening\n\n").await;
    let last = messages.last().expect("an answer");
    assert_cut_at_the_limit(last, pulled);
}

#[tokio::test]
async fn a_big_event_after_progress_is_cut_too_and_the_progress_still_arrives() {
    let progress = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"client-7\",\"progress\":1}}\n\n";
    let (messages, pulled) = call_through_the_layer(progress).await;
    let (last, before) = messages.split_last().expect("an answer");
    assert_cut_at_the_limit(last, pulled);
    assert_eq!(before.len(), 1, "{messages:?}");
    assert_eq!(before[0]["params"]["progressToken"], "client-7");
}
