//! Any answer of a 2025-11-25 upstream to a 2026-07-28 client's fast
//! `tools/call`, through the layer and the gateway's generation bridge
//! (`GenerationBridge`, the upstream's generation given), as JSON or SSE,
//! cut into any frames; `@@` in the answer stands for the id the bridge
//! gave the call. Checked:
//!
//! - the call ends within an hour of paused time;
//! - a `200` JSON answer to the client is JSON, under the client's id;
//! - what the client gets does not depend on where the frames were cut.
#![no_main]

use std::convert::Infallible;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use mcp_tasks::{MemoryTaskStore, TasksLayer};
use mcp_tasks_fuzz::{Got, Pieces, call, declaring_call, paused_runtime, pieces};
use mcp_tasks_gateway::GenerationBridge;
use mcp_tasks_gateway::generation::UpstreamGeneration;
use serde_json::Value;
use tower::Layer;

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","id":@@,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fuzz","version":"1"}}}"#;

#[derive(Clone)]
struct Script {
    answer: Bytes,
    cuts: Vec<usize>,
    sse: bool,
    status: u16,
}

fn respond(status: u16, sse: bool, body: Pieces) -> Response<Pieces> {
    let kind = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, kind.parse().unwrap());
    response
        .headers_mut()
        .insert("mcp-session-id", "s-1".parse().unwrap());
    response
}

/// The older upstream: a session for `initialize`, `202` for
/// notifications, `tools/list` of one tool, and the script for the call.
async fn upstream<B>(script: Script, request: Request<B>) -> Result<Response<Pieces>, Infallible>
where
    B: http_body::Body<Data = Bytes>,
{
    let body = request.into_body().collect().await.map(|c| c.to_bytes());
    let message: Value = body
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let id = message["id"].to_string();
    let with_id = |text: &[u8]| {
        let text = String::from_utf8_lossy(text).replace("@@", &id);
        Bytes::from(text)
    };
    Ok(match message["method"].as_str() {
        Some("initialize") => respond(200, false, pieces(&with_id(INITIALIZED.as_bytes()), &[])),
        Some(method) if method.starts_with("notifications/") => {
            respond(202, false, pieces(&Bytes::new(), &[]))
        }
        Some("tools/list") => {
            let list = r#"{"jsonrpc":"2.0","id":@@,"result":{"tools":[{"name":"greet","inputSchema":{"type":"object"}}]}}"#;
            respond(200, false, pieces(&with_id(list.as_bytes()), &[]))
        }
        _ => {
            let answer = with_id(&script.answer);
            respond(script.status, script.sse, pieces(&answer, &script.cuts))
        }
    })
}

/// What the client got.
fn run(script: Script) -> Got {
    paused_runtime().block_on(async move {
        let inner = tower::service_fn(move |request| upstream(script.clone(), request));
        let bridge = GenerationBridge::new(inner, UpstreamGeneration::Legacy);
        let service = TasksLayer::new(MemoryTaskStore::new()).layer(bridge);
        call(service, declaring_call()).await
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, answer) = data.split_at(4);
    let cuts: Vec<usize> = head[1..].iter().map(|&n| usize::from(n % 32) + 1).collect();
    let script = |cuts: Vec<usize>| Script {
        answer: Bytes::copy_from_slice(answer),
        cuts,
        sse: head[0] & 1 != 0,
        status: if head[0] & 2 != 0 { 500 } else { 200 },
    };
    let whole = run(script(vec![]));
    let cut = run(script(cuts.repeat(answer.len() / 32 + 1)));
    assert_eq!(
        (whole.status, &whole.content_type, &whole.body),
        (cut.status, &cut.content_type, &cut.body),
        "the client's answer depends on the cuts"
    );
    if whole.status == 200 && whole.content_type.starts_with("application/json") {
        let message: Value = serde_json::from_slice(&whole.body)
            .unwrap_or_else(|_| panic!("a JSON answer that is not JSON: {whole:?}"));
        assert_eq!(message["id"], 1, "not under the client's id: {message}");
    }
});
