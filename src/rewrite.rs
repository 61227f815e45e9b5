//! The two edits the layer makes to messages it forwards.
//!
//! | Message                         | Edit                                                        | Why                                              |
//! |---------------------------------|-------------------------------------------------------------|--------------------------------------------------|
//! | a declaring client's `tools/call` | remove the tasks extension from `clientCapabilities`      | the inner server must never make tasks of its own |
//! | the `server/discover` result (JSON or SSE) | add `capabilities.extensions["io.modelcontextprotocol/tasks"] = {}` | the layer serves the extension |

use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::{Map, Value};
use sse_stream::SseStream;

use crate::body::{BoxError, ResponseBody};
use crate::wire::raw::{Members, span, write_object};
use crate::wire::{META_CLIENT_CAPABILITIES, TASKS_EXTENSION};

/// The request body without the tasks extension in its client capabilities;
/// `None` when there was nothing to remove or the body could not be edited.
///
/// Only the `extensions` object is rewritten; every other byte of the body is
/// kept as the client sent it (no number or key-order changes).
pub(crate) fn strip_tasks_extension(body: &[u8]) -> Option<Bytes> {
    let text = std::str::from_utf8(body).ok()?;
    let params = Members::parse(text).ok()?.get("params")?;
    let meta = Members::parse(params.get()).ok()?.get("_meta")?;
    let capabilities = Members::parse(meta.get())
        .ok()?
        .get(META_CLIENT_CAPABILITIES)?;
    let raw_extensions = Members::parse(capabilities.get()).ok()?.get("extensions")?;
    let extensions = Members::parse(raw_extensions.get()).ok()?;
    extensions.get(TASKS_EXTENSION)?;
    let range = span(text, raw_extensions.get())?;
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..range.start]);
    let kept = extensions
        .0
        .iter()
        .filter(|(key, _)| key != TASKS_EXTENSION);
    write_object(
        &mut out,
        kept.map(|(key, value)| (key.as_ref(), value.get())),
    );
    out.push_str(&text[range.end..]);
    Some(Bytes::from(out))
}

/// Adds the tasks extension to a `server/discover` response.
pub(crate) async fn advertise<B>(response: Response<B>) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let kind = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let sse = kind.starts_with("text/event-stream");
    if !response.status().is_success() || !(sse || kind.starts_with("application/json")) {
        return response.map(ResponseBody::inner);
    }
    let (mut head, body) = response.into_parts();
    head.headers.remove(CONTENT_LENGTH);
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            let error: BoxError = error.into();
            tracing::warn!(%error, "server/discover body could not be read");
            head.status = http::StatusCode::BAD_GATEWAY;
            return Response::from_parts(head, ResponseBody::full(Bytes::new()));
        }
    };
    let rewritten = if sse {
        rewrite_sse(bytes).await
    } else {
        rewrite_json(&bytes).unwrap_or(bytes)
    };
    Response::from_parts(head, ResponseBody::full(rewritten))
}

fn add_extension(message: &mut Value) -> bool {
    let Some(capabilities) = message
        .get_mut("result")
        .and_then(|result| result.get_mut("capabilities"))
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    match extensions.as_object_mut() {
        Some(extensions) => {
            extensions.insert(TASKS_EXTENSION.to_owned(), Value::Object(Map::new()));
            true
        }
        None => false,
    }
}

fn rewrite_json(bytes: &[u8]) -> Option<Bytes> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    if !add_extension(&mut message) {
        return None;
    }
    serde_json::to_vec(&message).ok().map(Bytes::from)
}

async fn rewrite_sse(bytes: Bytes) -> Bytes {
    let original = bytes.clone();
    let body = http_body_util::Full::new(bytes);
    let mut events = SseStream::new(body);
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        let Ok(mut event) = event else {
            return original;
        };
        if let Some(data) = event.data.as_deref()
            && let Ok(mut message) = serde_json::from_str::<Value>(data)
            && add_extension(&mut message)
        {
            event.data = serde_json::to_string(&message).ok();
        }
        out.extend_from_slice(&Bytes::from(event));
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_keeps_every_other_byte_of_the_body() {
        let body = br#"{"id":1,"params":{"arguments":{"n":123456789012345678901234567890,"f":1e400},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":{},"io.modelcontextprotocol/tasks":{},"z":{}}}}},"method":"tools/call"}"#;
        let stripped = strip_tasks_extension(body).unwrap();
        assert_eq!(
            std::str::from_utf8(&stripped).unwrap(),
            r#"{"id":1,"params":{"arguments":{"n":123456789012345678901234567890,"f":1e400},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":{},"z":{}}}}},"method":"tools/call"}"#
        );
    }

    #[test]
    fn stripping_removes_only_the_tasks_extension() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"other":{}}},"progressToken":7}}}"#;
        let stripped: Value =
            serde_json::from_slice(&strip_tasks_extension(body).unwrap()).unwrap();
        let meta = &stripped["params"]["_meta"];
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(
            meta[META_CLIENT_CAPABILITIES]["extensions"],
            serde_json::json!({"other":{}})
        );
    }

    #[test]
    fn discover_results_gain_the_extension_and_keep_everything_else() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","capabilities":{"tools":{}},"ttlMs":5}}"#;
        let out: Value = serde_json::from_slice(&rewrite_json(body).unwrap()).unwrap();
        assert_eq!(
            out["result"]["capabilities"]["extensions"][TASKS_EXTENSION],
            serde_json::json!({})
        );
        assert_eq!(
            out["result"]["capabilities"]["tools"],
            serde_json::json!({})
        );
        assert_eq!(out["result"]["ttlMs"], 5);
    }
}
