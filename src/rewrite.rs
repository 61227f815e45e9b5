//! The two edits the layer makes to messages it forwards.
//!
//! | Message                         | Edit                                                        | Why                                              |
//! |---------------------------------|-------------------------------------------------------------|--------------------------------------------------|
//! | a declaring client's `tools/call` | remove the tasks extension from `clientCapabilities`      | the inner server must never make tasks of its own |
//! | any `tools/call`                | remove `_meta["io.modelcontextprotocol/relatedTaskIds"]`     | task ids are bearer secrets: none reaches the inner server |
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
use crate::wire::{RELATED_TASK_IDS, TASKS_EXTENSION, content_type};

/// Removes the tasks extension from the `extensions` object found at
/// `extensions` in `body`. Every other byte of the body is kept as the client
/// sent it. `None` when that object has no such member.
///
/// With `tasks`, the place of that member's value (the only member of that
/// name, its key written plainly), the member and one comma are cut out of
/// the body; otherwise the object is read and written again without it.
pub(crate) fn strip_tasks_extension(
    body: &Bytes,
    extensions: Range<usize>,
    tasks: Option<Range<usize>>,
) -> Option<Bytes> {
    if let Some(cut) = tasks.and_then(|value| member_cut(body, value, TASKS_EXTENSION)) {
        let mut out = Vec::with_capacity(body.len() - cut.len());
        out.extend_from_slice(&body[..cut.start]);
        out.extend_from_slice(&body[cut.end..]);
        return Some(Bytes::from(out));
    }
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

/// [`strip_tasks_extension`], and without the related task ids whose value
/// is at `related` (when given): what a `tools/call` is forwarded as.
/// `None` when neither is there to remove.
pub(crate) fn forwarded_call(
    body: &Bytes,
    extensions: Range<usize>,
    tasks: Option<Range<usize>>,
    related: Option<Range<usize>>,
) -> Option<Bytes> {
    let Some(related) = related else {
        return strip_tasks_extension(body, extensions, tasks);
    };
    // The later edit first, so that the earlier one's place holds.
    if related.start >= extensions.end {
        let body = without_related(body, related);
        Some(strip_tasks_extension(&body, extensions, tasks).unwrap_or(body))
    } else {
        let stripped = strip_tasks_extension(body, extensions, tasks);
        Some(without_related(stripped.as_ref().unwrap_or(body), related))
    }
}

/// `body` without the related task ids whose value is at `value`: the member
/// cut out, or, when its key is not written plainly, its value made `null`.
pub(crate) fn without_related(body: &Bytes, value: Range<usize>) -> Bytes {
    let (cut, with) = match member_cut(body, value.clone(), RELATED_TASK_IDS) {
        Some(cut) => (cut, &b""[..]),
        None => (value, &b"null"[..]),
    };
    let mut out = Vec::with_capacity(body.len() - cut.len() + with.len());
    out.extend_from_slice(&body[..cut.start]);
    out.extend_from_slice(with);
    out.extend_from_slice(&body[cut.end..]);
    Bytes::from(out)
}

/// The bytes to cut from `body` to remove the member `name` whose value is
/// at `value`: its plainly written key, the colon, the value, and the comma
/// before it (or, for the first member, the one after it). `None` when the
/// bytes around the value are not that shape.
fn member_cut(body: &[u8], value: Range<usize>, name: &str) -> Option<Range<usize>> {
    let skip_back = |end: usize| body[..end].iter().rposition(|b| !b.is_ascii_whitespace());
    let colon = skip_back(value.start)?;
    let key_end = skip_back(colon)? + 1;
    let key_start = key_end.checked_sub(name.len() + 2)?;
    let key = &body[key_start..key_end];
    let quoted = key.first() == Some(&b'"') && key.last() == Some(&b'"');
    if body[colon] != b':' || !quoted || &key[1..key.len() - 1] != name.as_bytes() {
        return None;
    }
    let before = skip_back(key_start)?;
    match body[before] {
        b',' => Some(before..value.end),
        b'{' => {
            let after = body.get(value.end..)?;
            let next = after.iter().position(|b| !b.is_ascii_whitespace())?;
            let end = if after[next] == b',' {
                value.end + next + 1
            } else {
                value.end
            };
            Some(key_start..end)
        }
        _ => None,
    }
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

    /// Strips at the `extensions` object, found as a test would, and as
    /// classify does: by a cut when the member allows one.
    fn strip(body: &[u8]) -> Bytes {
        let (stripped, _) = strip_both_ways(body);
        stripped
    }

    /// The body stripped as `strip_tasks_extension` does it, and whether it
    /// took the cut; checked against the object written again without it.
    fn strip_both_ways(body: &[u8]) -> (Bytes, bool) {
        let start = body
            .windows(13)
            .position(|w| w == b"\"extensions\":")
            .unwrap()
            + 13;
        let mut reader = serde_json::Deserializer::from_slice(&body[start..]);
        let raw = <&RawValue as serde::Deserialize>::deserialize(&mut reader).unwrap();
        let extensions = span(body, raw.get()).unwrap();
        let member = crate::wire::read::tasks_member(Some(raw.into()));
        let tasks = member.value.and_then(|value| span(body, value.get()));
        let bytes = Bytes::copy_from_slice(body);
        let stripped = strip_tasks_extension(&bytes, extensions.clone(), tasks.clone()).unwrap();
        let rewritten = strip_tasks_extension(&bytes, extensions, None).unwrap();
        // The same but for spacing (no test body has spaces in strings).
        let unspaced = |bytes: &[u8]| -> Vec<u8> {
            bytes
                .iter()
                .copied()
                .filter(|b| !b.is_ascii_whitespace())
                .collect()
        };
        assert_eq!(unspaced(&stripped), unspaced(&rewritten), "{stripped:?}");
        let cut = tasks.is_some_and(|value| member_cut(body, value, TASKS_EXTENSION).is_some());
        (stripped, cut)
    }

    #[test]
    fn the_member_is_cut_out_wherever_it_stands_and_however_it_is_spaced() {
        let cases = [
            (
                r#"{"a":{},"io.modelcontextprotocol/tasks":{},"z":{}}"#,
                r#"{"a":{},"z":{}}"#,
            ),
            (
                r#"{"io.modelcontextprotocol/tasks":{"x":1},"z":{}}"#,
                r#"{"z":{}}"#,
            ),
            (
                r#"{ "io.modelcontextprotocol/tasks" : {} , "z":{}}"#,
                r#"{  "z":{}}"#,
            ),
            (
                r#"{"a":{} ,"io.modelcontextprotocol/tasks":{}}"#,
                r#"{"a":{} }"#,
            ),
            (r#"{"io.modelcontextprotocol/tasks":{}}"#, r#"{}"#),
            (r#"{ "io.modelcontextprotocol/tasks" : {} }"#, r#"{  }"#),
        ];
        for (extensions, expected) in cases {
            let body = format!(r#"{{"params":{{"_meta":{{"extensions":{extensions}}}}},"id":1}}"#);
            let (stripped, cut) = strip_both_ways(body.as_bytes());
            assert!(cut, "{extensions}");
            assert_eq!(
                std::str::from_utf8(&stripped).unwrap(),
                format!(r#"{{"params":{{"_meta":{{"extensions":{expected}}}}},"id":1}}"#)
            );
        }
    }

    #[test]
    fn escaped_or_repeated_members_are_removed_by_rewriting_the_object() {
        for extensions in [
            r#"{"io.modelcontextprotocol\/tasks":{},"z":{}}"#,
            r#"{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/tasks":{}}"#,
        ] {
            let body = format!(r#"{{"extensions":{extensions}}}"#);
            let (stripped, cut) = strip_both_ways(body.as_bytes());
            assert!(!cut, "{extensions}");
            let out: Value = serde_json::from_slice(&stripped).unwrap();
            assert!(out["extensions"].get(TASKS_EXTENSION).is_none(), "{out}");
        }
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

    /// The related task ids' value in `body`, found as the scanner does.
    fn related_of(body: &str) -> Range<usize> {
        let key = format!("\"{RELATED_TASK_IDS}\":");
        let start = body.find(&key).expect("the key") + key.len();
        let end = start + body[start..].find(']').expect("an array") + 1;
        start..end
    }

    #[test]
    fn related_task_ids_are_cut_out_wherever_the_member_stands() {
        for (body, expected) in [
            (
                r#"{"_meta":{"a":1,"io.modelcontextprotocol/relatedTaskIds":["x"]}}"#,
                r#"{"_meta":{"a":1}}"#,
            ),
            (
                r#"{"_meta":{"io.modelcontextprotocol/relatedTaskIds": ["x"] , "a":1}}"#,
                r#"{"_meta":{ "a":1}}"#,
            ),
            (
                r#"{"_meta":{"io.modelcontextprotocol/relatedTaskIds":["x"]}}"#,
                r#"{"_meta":{}}"#,
            ),
        ] {
            let cut = without_related(&Bytes::from(body), related_of(body));
            assert_eq!(std::str::from_utf8(&cut).unwrap(), expected, "{body}");
        }
    }

    #[test]
    fn related_task_ids_under_an_escaped_key_become_null() {
        let body = r#"{"_meta":{"io.modelcontextprotocol\/relatedTaskIds":["x"]}}"#;
        let start = body.find("[").unwrap();
        let cut = without_related(&Bytes::from(body), start..start + 5);
        let text = std::str::from_utf8(&cut).unwrap();
        assert!(!text.contains("\"x\""), "{text}");
        let _: Value = serde_json::from_str(text).expect("still JSON");
    }

    #[test]
    fn both_edits_apply_whichever_comes_first_in_the_body() {
        let caps = META_CLIENT_CAPABILITIES;
        let related_first = format!(
            r#"{{"params":{{"_meta":{{"{RELATED_TASK_IDS}":["x"],"{caps}":{{"extensions":{{"{TASKS_EXTENSION}":{{}}}}}}}}}}}}"#
        );
        let related_last = format!(
            r#"{{"params":{{"_meta":{{"{caps}":{{"extensions":{{"{TASKS_EXTENSION}":{{}}}}}},"{RELATED_TASK_IDS}":["x"]}}}}}}"#
        );
        for body in [related_first, related_last] {
            let extensions_at = body.find("{\"io.modelcontextprotocol/tasks\"").unwrap();
            let extensions = extensions_at..extensions_at + TASKS_EXTENSION.len() + 7;
            assert_eq!(
                &body[extensions.clone()],
                format!("{{\"{TASKS_EXTENSION}\":{{}}}}")
            );
            let forwarded = forwarded_call(
                &Bytes::from(body.clone()),
                extensions,
                None,
                Some(related_of(&body)),
            )
            .expect("edited");
            let text = std::str::from_utf8(&forwarded).unwrap();
            let value: Value = serde_json::from_str(text).expect("still JSON");
            let meta = &value["params"]["_meta"];
            assert!(meta.get(RELATED_TASK_IDS).is_none(), "{text}");
            assert_eq!(meta[caps]["extensions"], serde_json::json!({}), "{text}");
        }
    }
}
