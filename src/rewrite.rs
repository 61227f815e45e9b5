//! The two edits the layer makes to messages it forwards.
//!
//! | Message                         | Edit                                                        | Why                                              |
//! |---------------------------------|-------------------------------------------------------------|--------------------------------------------------|
//! | a declaring client's `tools/call` | remove the tasks extension from `clientCapabilities`      | the inner server must never make tasks of its own |
//! | the `server/discover` result (JSON or SSE) | add `capabilities.extensions["io.modelcontextprotocol/tasks"] = {}` | the layer serves the extension |

use std::ops::Range;

use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use http::header::CONTENT_LENGTH;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, StreamBody};
use serde_json::value::RawValue;
use sse_stream::SseStream;

use crate::body::{BoxError, ResponseBody};
use crate::flight::tap::BodyError;
use crate::wire::raw::{Members, edit_members, edit_object, span};
use crate::wire::{TASKS_EXTENSION, content_type};

/// Removes the tasks extension from the `extensions` object found at
/// `extensions` in `body`. Every other byte of the body is kept as the client
/// sent it. `None` when that object has no such member.
pub(crate) fn strip_tasks_extension(body: &Bytes, extensions: Range<usize>) -> Option<Bytes> {
    let text = std::str::from_utf8(body.get(extensions.clone())?).ok()?;
    let members = Members::parse(text).ok()?;
    members.get(TASKS_EXTENSION)?;
    let object = edit_members(&members, text.len(), &[(TASKS_EXTENSION, None)]);
    let mut out = Vec::with_capacity(body.len());
    out.extend_from_slice(&body[..extensions.start]);
    out.extend_from_slice(object.as_bytes());
    out.extend_from_slice(&body[extensions.end..]);
    Some(Bytes::from(out))
}

/// Adds the tasks extension to a `server/discover` response.
pub(crate) async fn advertise<B>(response: Response<B>) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    edit_response(response, with_extension).await
}

/// Applies `edit` to the JSON-RPC message of a JSON response, or to every
/// message of an SSE response as it streams. `edit` answers `None` for a
/// message it leaves alone. Error statuses and other bodies pass unchanged.
pub(crate) async fn edit_response<B, E>(response: Response<B>, edit: E) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    E: Fn(&str) -> Option<String> + Send + 'static,
{
    let kind = content_type(response.headers());
    let sse = kind.starts_with("text/event-stream");
    if !response.status().is_success() || !(sse || kind.starts_with("application/json")) {
        return response.map(ResponseBody::inner);
    }
    let (mut head, body) = response.into_parts();
    head.headers.remove(CONTENT_LENGTH);
    if sse {
        // Event by event, as the events arrive: the inner server may keep
        // the stream open after its response.
        let events = SseStream::new(body.map_err(|error| BodyError(error.into())));
        let frames = events.map(move |event| match event {
            Ok(mut event) => {
                if let Some(data) = event.data.as_deref()
                    && let Some(rewritten) = edit(data)
                {
                    event.data = Some(rewritten);
                }
                Ok(Frame::data(Bytes::from(event)))
            }
            Err(error) => Err(BoxError::from(error.to_string())),
        });
        let body = BodyExt::boxed_unsync(StreamBody::new(frames));
        return Response::from_parts(head, ResponseBody::boxed(body));
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            let error: BoxError = error.into();
            tracing::warn!(%error, "a response to edit could not be read");
            head.status = http::StatusCode::BAD_GATEWAY;
            return Response::from_parts(head, ResponseBody::full(Bytes::new()));
        }
    };
    let rewritten = std::str::from_utf8(&bytes)
        .ok()
        .and_then(edit)
        .map(Bytes::from)
        .unwrap_or(bytes);
    Response::from_parts(head, ResponseBody::full(rewritten))
}

/// `message` with the JSON text `target` (a slice of it) replaced by
/// `replacement`.
pub(crate) fn splice(message: &str, target: &str, replacement: &str) -> Option<String> {
    let range = span(message.as_bytes(), target)?;
    Some(format!(
        "{}{replacement}{}",
        &message[..range.start],
        &message[range.end..]
    ))
}

/// `message` (a `server/discover` response) with the tasks extension in
/// `result.capabilities.extensions`; every other byte stays as it was.
/// `None` when it is not such a response or already has the extension.
fn with_extension(message: &str) -> Option<String> {
    let result = Members::parse(message).ok()?.get("result")?;
    let capabilities = Members::parse(result.get()).ok()?.get("capabilities")?;
    let existing = Members::parse(capabilities.get()).ok()?.get("extensions");
    let extensions = existing.map_or("{}", RawValue::get);
    if Members::parse(extensions)
        .ok()?
        .get(TASKS_EXTENSION)
        .is_some()
    {
        return None;
    }
    let declared = edit_object(extensions, &[(TASKS_EXTENSION, Some("{}"))])?;
    match existing {
        Some(existing) => splice(message, existing.get(), &declared),
        None => {
            let edits = [("extensions", Some(declared.as_str()))];
            splice(
                message,
                capabilities.get(),
                &edit_object(capabilities.get(), &edits)?,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::wire::META_CLIENT_CAPABILITIES;

    /// Strips at the `extensions` object, found as a test would.
    fn strip(body: &[u8]) -> Bytes {
        let start = body
            .windows(14)
            .position(|w| w == b"\"extensions\":{")
            .unwrap()
            + 13;
        let end = start + body[start..].windows(3).position(|w| w == b"{}}").unwrap() + 3;
        strip_tasks_extension(&Bytes::copy_from_slice(body), start..end).unwrap()
    }

    #[test]
    fn stripping_keeps_every_other_byte_of_the_body() {
        let body = br#"{"id":1,"params":{"arguments":{"n":123456789012345678901234567890,"f":1e400},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":{},"io.modelcontextprotocol/tasks":{},"z":{}}}}},"method":"tools/call"}"#;
        let stripped = strip(body);
        assert_eq!(
            std::str::from_utf8(&stripped).unwrap(),
            r#"{"id":1,"params":{"arguments":{"n":123456789012345678901234567890,"f":1e400},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":{},"z":{}}}}},"method":"tools/call"}"#
        );
    }

    #[test]
    fn stripping_removes_only_the_tasks_extension() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"other":{}}},"progressToken":7}}}"#;
        let stripped: Value = serde_json::from_slice(&strip(body)).unwrap();
        let meta = &stripped["params"]["_meta"];
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(
            meta[META_CLIENT_CAPABILITIES]["extensions"],
            serde_json::json!({"other":{}})
        );
    }

    #[test]
    fn discover_results_keep_every_other_byte() {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{},"extensions":{"a":{"n":123456789012345678901234567890}}},"ttlMs":0}}"#;
        assert_eq!(
            with_extension(body).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{},"extensions":{"a":{"n":123456789012345678901234567890},"io.modelcontextprotocol/tasks":{}}},"ttlMs":0}}"#
        );
        let declared = with_extension(body).unwrap();
        assert_eq!(with_extension(&declared), None, "added once only");
    }

    #[test]
    fn discover_results_gain_the_extension_and_keep_everything_else() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","capabilities":{"tools":{}},"ttlMs":5}}"#;
        let out: Value = serde_json::from_slice(
            with_extension(std::str::from_utf8(body).unwrap())
                .unwrap()
                .as_bytes(),
        )
        .unwrap();
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
