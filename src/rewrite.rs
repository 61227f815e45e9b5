//! The edits the layer makes to messages it forwards.
//!
//! | Message                         | Edit                                                        | Why                                              |
//! |---------------------------------|-------------------------------------------------------------|--------------------------------------------------|
//! | a declaring client's `tools/call` | remove the tasks extension from `clientCapabilities`, unless the inner server has tasks of its own (`own_tasks`) | only the layer makes tasks, where the inner server has none |
//! | a gateway's `502`/`504` answer to such a call | the call's id for `null` (`with_call_id`) | the proxy answers without reading the request |
//! | any `tools/call`                | remove `_meta["io.modelcontextprotocol/relatedTaskIds"]`     | task ids are bearer secrets: none reaches the inner server |
//! | a `tools/call` the layer may park, without `_meta.progressToken`, of a tool not known quiet (`runtime::quiet`) | add a progress token of the layer's (`wire::progress`) | the task's `statusMessage` comes from the progress the server reports |
//! | the `server/discover` result (JSON or SSE) | add `capabilities.extensions["io.modelcontextprotocol/tasks"] = {}` | the layer serves the extension |

use std::ops::Range;

use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use http::header::CONTENT_LENGTH;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, StreamBody};
use serde_json::value::RawValue;

use crate::body::{BodyError, BoxError, ResponseBody};
use crate::wire::progress::{self, Place, Token};
use crate::wire::raw::{Members, edit_members, edit_object, span};
use crate::wire::splice::{Edit, member_cut, splice, splice_present};
use crate::wire::sse::Events;
use crate::wire::{RELATED_TASK_IDS, TASKS_EXTENSION, content_type};

/// The edit that removes the tasks extension from the `extensions` object
/// found at `extensions` in `body`. `None` when that object has no such
/// member.
///
/// With `tasks`, the place of that member's value (the only member of that
/// name, its key written plainly), the member and one comma are cut out;
/// otherwise the object is read and written again without it.
fn tasks_edit(
    body: &[u8],
    extensions: Option<Range<usize>>,
    tasks: Option<Range<usize>>,
) -> Option<Edit<'static>> {
    let extensions = extensions?;
    if let Some(cut) = tasks.and_then(|value| member_cut(body, value, TASKS_EXTENSION)) {
        return Some(Edit::cut(cut));
    }
    let text = std::str::from_utf8(body.get(extensions.clone())?).ok()?;
    let members = Members::parse(text).ok()?;
    members.get(TASKS_EXTENSION)?;
    let object = edit_members(&members, text.len(), &[(TASKS_EXTENSION, None)]);
    Some(Edit::put(extensions, object.into_bytes()))
}

/// The edit that removes the related task ids whose value is at `value`:
/// the member cut out, or, when its key is not written plainly, its value
/// made `null`.
fn related_edit(body: &[u8], value: Range<usize>) -> Edit<'static> {
    match member_cut(body, value.clone(), RELATED_TASK_IDS) {
        Some(cut) => Edit::cut(cut),
        None => Edit::put(value, &b"null"[..]),
    }
}

/// Where a `tools/call` body holds what the inner server must not get: the
/// `extensions` object (and its tasks member's value, when a cut can
/// remove it), and the related task ids' value; and where a progress token
/// of the layer's may go.
#[derive(Debug, Clone)]
pub(crate) struct Strip {
    /// `None` for a client that declared nothing (a fallback call).
    pub extensions: Option<Range<usize>>,
    pub tasks: Option<Range<usize>>,
    pub related: Option<Range<usize>>,
    /// `None` when the client sent a token of its own, or the layer found
    /// no place for one.
    pub progress: Option<Place>,
}

impl Strip {
    /// Leaves the client's tasks extension in the call: the inner server
    /// has tasks of its own (`own_tasks`).
    pub(crate) fn keep_extension(&mut self) {
        self.extensions = None;
        self.tasks = None;
    }

    /// The edits that remove them from `body`, and write `token`, when
    /// there is anything to do.
    fn edits(&self, body: &[u8], token: Option<&Token>) -> [Option<Edit<'static>>; 3] {
        let tasks = tasks_edit(body, self.extensions.clone(), self.tasks.clone());
        let token = token.zip(self.progress);
        let related = self.related.clone();
        match (related, token) {
            // The token takes the related ids' place: a `_meta` left with
            // no other member stays an object of one.
            (Some(value), Some((token, Place::Meta(_))))
                if let Some(cut) = member_cut(body, value.clone(), RELATED_TASK_IDS) =>
            {
                [tasks, Some(progress::in_place_of(body, cut, token)), None]
            }
            (related, token) => [
                tasks,
                related.map(|value| related_edit(body, value)),
                token.and_then(|(token, place)| progress::insert(body, place, token)),
            ],
        }
    }
}

/// What a `tools/call` is forwarded as: `body` without the tasks extension
/// and the related task ids, with `token` if given. `None` when there is
/// nothing to change.
pub(crate) fn forwarded_call(body: &[u8], strip: &Strip, token: Option<&Token>) -> Option<Bytes> {
    splice_present(body, strip.edits(body, token))
}

/// The `params` object of that forwarded call, from `params`, its place in
/// `body`: what a parked call is re-issued with. Read from the spans the
/// one parse found, so nothing is parsed again.
pub(crate) fn forwarded_params(
    body: &[u8],
    params: Range<usize>,
    strip: &Strip,
    token: Option<&Token>,
) -> Option<Bytes> {
    let slice = body.get(params.clone())?;
    // All lie inside `params`; one outside `params` is not there.
    match strip
        .edits(body, token)
        .map(|edit| edit.and_then(|edit| edit.shifted(params.start)))
    {
        [None, None, None] => Some(Bytes::copy_from_slice(slice)),
        edits => splice_present(slice, edits),
    }
}

/// `body` without the related task ids whose value is at `value`.
pub(crate) fn without_related(body: &Bytes, value: Range<usize>) -> Bytes {
    splice(body, &mut [related_edit(body, value)]).unwrap_or_else(|| body.clone())
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
    let sse = crate::wire::sse::is_sse(response.headers());
    if !response.status().is_success() || !(sse || kind.starts_with("application/json")) {
        return response.map(ResponseBody::inner);
    }
    let (mut head, body) = response.into_parts();
    head.headers.remove(CONTENT_LENGTH);
    if sse {
        // Event by event, as the events arrive: the inner server may keep
        // the stream open after its response.
        let events = Events::new(body.map_err(|error| BodyError(error.into())));
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

/// A gateway error answer (`502`, `504`: the proxy answers them without
/// reading the request, so with `"id": null`) given the id of the call,
/// `id` (its JSON text); any other response as it is.
pub(crate) async fn with_call_id<B>(response: Response<B>, id: Bytes) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    with_call_id_in(response.map(ResponseBody::inner), id).await
}

/// [`with_call_id`] for a response the layer already holds as its own.
pub(crate) async fn with_call_id_in<B>(
    response: Response<ResponseBody<B>>,
    id: Bytes,
) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    if !is_gateway_error(&response) {
        return response;
    }
    let (head, body) = response.into_parts();
    let (head, bytes) = id_patched(head, body, &id).await;
    Response::from_parts(head, ResponseBody::full(bytes))
}

/// A `502` or `504` in JSON: a gateway's own error answer.
fn is_gateway_error<B>(response: &Response<B>) -> bool {
    use http::StatusCode;
    matches!(
        response.status(),
        StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT
    ) && content_type(response.headers()).starts_with("application/json")
}

/// The body of a gateway error answer, read, with `id` in place of its
/// `null` id.
async fn id_patched<B>(
    mut head: http::response::Parts,
    body: B,
    id: &[u8],
) -> (http::response::Parts, Bytes)
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    head.headers.remove(CONTENT_LENGTH);
    // Such an answer is a few hundred bytes; a larger one is not ours.
    let bytes = match http_body_util::Limited::new(body, 64 * 1024)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return (head, Bytes::new()),
    };
    let patched = std::str::from_utf8(&bytes)
        .ok()
        .zip(std::str::from_utf8(id).ok())
        .and_then(|(message, id)| {
            let current = Members::parse(message).ok()?.get("id")?;
            (current.get() == "null").then(|| replace(message, current.get(), id))?
        });
    (head, patched.map_or(bytes, Bytes::from))
}

/// `message` with the JSON text `target` (a slice of it) replaced by
/// `replacement`.
pub(crate) fn replace(message: &str, target: &str, replacement: &str) -> Option<String> {
    let range = span(message.as_bytes(), target)?;
    let edited = splice(
        message.as_bytes(),
        &mut [Edit::put(range, replacement.as_bytes())],
    )?;
    String::from_utf8(Vec::from(edited)).ok()
}

/// `message` (a `server/discover` response) with the tasks extension in
/// `result.capabilities.extensions`; every other byte stays as it was.
/// `None` when it is not such a response or already has the extension.
pub(crate) fn with_extension(message: &str) -> Option<String> {
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
        Some(existing) => replace(message, existing.get(), &declared),
        None => {
            let edits = [("extensions", Some(declared.as_str()))];
            replace(
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

    fn strip_tasks_extension(
        body: &[u8],
        extensions: Range<usize>,
        tasks: Option<Range<usize>>,
    ) -> Option<Bytes> {
        tasks_edit(body, Some(extensions), tasks).and_then(|edit| splice(body, &mut [edit]))
    }

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
    fn a_parked_call_is_re_issued_with_the_params_it_was_forwarded_with() {
        let caps = META_CLIENT_CAPABILITIES;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"n":123456789012345678901234567890}},"_meta":{{"{RELATED_TASK_IDS}":["t"],"{caps}":{{"extensions":{{"{TASKS_EXTENSION}":{{}},"b":{{}}}}}}}}}}}}"#
        );
        let bytes = body.as_bytes();
        // The spans the one parse finds, as classify takes them.
        let envelope = crate::wire::envelope::Envelope::parse(bytes).unwrap();
        let params = envelope.params.unwrap();
        let meta = params.fields.meta.as_ref().unwrap();
        let capabilities = meta.capabilities.as_ref().unwrap();
        let strip = Strip {
            extensions: span(bytes, capabilities.extensions.unwrap().get()),
            tasks: (capabilities.tasks_member().value).and_then(|v| span(bytes, v.get())),
            related: meta.related.and_then(|v| span(bytes, v.get())),
            progress: meta.open.map(Place::Meta),
        };
        let token = Token::next();
        let forwarded = forwarded_call(bytes, &strip, Some(&token)).unwrap();
        let forwarded: Value = serde_json::from_slice(&forwarded).unwrap();
        let sent = forwarded["params"]["_meta"]["progressToken"].to_string();
        assert!(token.is(&sent), "{forwarded}");
        let at = params.span(bytes).unwrap();
        let again = forwarded_params(bytes, at, &strip, Some(&token)).unwrap();
        let text = std::str::from_utf8(&again).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            forwarded["params"]
        );
        assert!(
            text.contains("123456789012345678901234567890"),
            "the client's bytes: {text}"
        );
        assert!(!text.contains(TASKS_EXTENSION) && !text.contains(RELATED_TASK_IDS));
    }

    #[test]
    fn every_edit_applies_whichever_comes_first_in_the_body() {
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
            let strip = Strip {
                extensions: Some(extensions),
                tasks: None,
                related: Some(related_of(&body)),
                progress: Some(Place::Meta(body.find("\"_meta\":{").unwrap() + 8)),
            };
            let token = Token::named("t");
            let forwarded = forwarded_call(body.as_bytes(), &strip, Some(&token)).expect("edited");
            let text = std::str::from_utf8(&forwarded).unwrap();
            let value: Value = serde_json::from_str(text).expect("still JSON");
            let meta = &value["params"]["_meta"];
            assert!(meta.get(RELATED_TASK_IDS).is_none(), "{text}");
            assert_eq!(meta[caps]["extensions"], serde_json::json!({}), "{text}");
            assert_eq!(meta["progressToken"], "mcp-tasks/t", "{text}");
        }
    }
}
