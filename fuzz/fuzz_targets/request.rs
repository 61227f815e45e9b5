//! Any request body, under any of the headers a client of either
//! generation sends, through the layer to an inner server that answers at
//! once or past the threshold. Checked:
//!
//! - the layer answers, within an hour of paused time, and a JSON answer
//!   is JSON;
//! - no task method of 2026-07-28 reaches the inner server (the layer
//!   answers them all), nor a `tools/call` with related task ids, as a
//!   reader that keeps the last of two equal keys sees it or one that
//!   keeps the first;
//! - a body the layer changed was JSON, is JSON, and is the client's with
//!   the layer's documented edits only.
#![no_main]

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use libfuzzer_sys::fuzz_target;
use mcp_tasks_fuzz::{Answer, Harness, RELATED, VERSION, edited_view, first_wins};
use serde_json::Value;
use std::time::Duration;

const ANSWER: &str =
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;

fn request(flags: u8, body: &[u8]) -> Request<Full<Bytes>> {
    let view: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut request = Request::post("/mcp").header("content-type", "application/json");
    request = request.header(
        "accept",
        if flags & 0x08 != 0 {
            "application/json, text/event-stream"
        } else {
            "application/json"
        },
    );
    if flags & 0x01 != 0 {
        request = request.header("mcp-protocol-version", "2026-07-28");
    } else if flags & 0x20 != 0 {
        request = request.header("mcp-protocol-version", "2025-11-25");
    }
    if flags & 0x02 != 0
        && let Some(method) = view["method"].as_str()
        && let Ok(value) = http::HeaderValue::from_str(method)
    {
        request = request.header("mcp-method", value);
    }
    if flags & 0x04 != 0 {
        let name = view["params"]["name"]
            .as_str()
            .or(view["params"]["taskId"].as_str());
        if let Some(value) = name.and_then(|n| http::HeaderValue::from_str(n).ok()) {
            request = request.header("mcp-name", value);
        }
    }
    if flags & 0x10 != 0 {
        request = request.header("mcp-session-id", "s1");
    }
    request
        .body(Full::new(Bytes::copy_from_slice(body)))
        .expect("request")
}

/// `body` as JSON, its bytes that are not UTF-8 read as U+FFFD: serde_json
/// skips a member it ignores without checking its UTF-8, and so may the
/// layer, which then sends those bytes on as they came.
fn lossy(body: &[u8]) -> Option<Value> {
    serde_json::from_str(&String::from_utf8_lossy(body)).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let sse = flags & 0x40 != 0;
    let answer = Answer {
        body: if sse {
            Bytes::from(format!("event: message\ndata: {ANSWER}\n\n"))
        } else {
            Bytes::from_static(ANSWER.as_bytes())
        },
        pieces: vec![],
        sse,
        status: 200,
        delay: Duration::from_secs(if flags & 0x80 != 0 { 5 } else { 0 }),
    };
    let harness = Harness::new();
    let got = harness.send(request(flags, body), answer);
    if got.content_type.starts_with("application/json") {
        assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(&got.body).is_ok(),
            "a JSON answer that is not JSON: {got:?}"
        );
    }
    // The generation of the request: related task ids are of 2026-07-28;
    // a 2025-11-25 request goes on as it came (`legacy::route`).
    let modern = flags & 0x01 != 0
        || [serde_json::from_slice::<Value>(body).ok(), first_wins(body)]
            .into_iter()
            .flatten()
            .any(|view| view["params"]["_meta"][VERSION].is_string());
    for forwarded in harness.seen.lock().unwrap().iter() {
        let views = [
            serde_json::from_slice::<Value>(forwarded).ok(),
            first_wins(forwarded),
        ];
        for view in views.into_iter().flatten() {
            let method = view["method"].as_str().unwrap_or_default();
            assert!(
                !(modern && method.starts_with("tasks/")),
                "a task method reached the inner server: {}",
                String::from_utf8_lossy(forwarded)
            );
            if modern && method == "tools/call" {
                let related = view["params"]["_meta"].get(RELATED);
                assert!(
                    related.is_none_or(Value::is_null),
                    "related task ids reached the inner server: {}",
                    String::from_utf8_lossy(forwarded)
                );
            }
        }
        // A message of the layer's own: its fallback's `tools/list`, or the
        // cancel of a call it sent.
        let own = lossy(forwarded).is_some_and(|v| {
            [&v["id"], &v["params"]["requestId"]]
                .iter()
                .any(|id| id.as_str().is_some_and(|id| id.starts_with("mcp-tasks:")))
        });
        if !own && forwarded[..] != body[..] {
            let sent: Value = lossy(body).unwrap_or_else(|| {
                panic!(
                    "the layer changed a body that is not JSON into {}",
                    String::from_utf8_lossy(forwarded)
                )
            });
            let arrived: Value = lossy(forwarded).unwrap_or_else(|| {
                panic!(
                    "the layer's edit is not JSON: {}",
                    String::from_utf8_lossy(forwarded)
                )
            });
            let token = sent["params"]["_meta"].get("progressToken").is_some();
            assert_eq!(
                edited_view(arrived, token),
                edited_view(sent, token),
                "the layer changed more than it may"
            );
        }
    }
});
