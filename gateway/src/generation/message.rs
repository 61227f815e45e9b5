//! One JSON-RPC message as the gateway's upstreams read it, from a client's
//! POST, a line of a stdio child or an HTTP upstream's answer, and the byte
//! edits they make to pass it on: the id and the progress token swapped for
//! their own, then back.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use mcp_tasks::wire::raw::{Members, span};
use mcp_tasks::wire::splice::{Edit, splice};

/// The members the bridge routes on; every other byte passes untouched.
#[derive(Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
    /// `null` included: `"result": null` is a response too.
    #[serde(borrow, default, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub error: Option<&'a RawValue>,
}

/// A member's value as written, `null` included (serde reads a `null`
/// into an `Option` as `None`).
fn present<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'a RawValue>, D::Error> {
    <&'a RawValue>::deserialize(deserializer).map(Some)
}

/// What a message is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request: it has an id and a method.
    Request,
    /// A notification: a method, no id.
    Notification,
    /// A response: an id and a result or an error, no method.
    Response,
    /// None of these.
    Invalid,
}

impl<'a> Message<'a> {
    /// Reads `text`; `None` when it is not a JSON object.
    pub(crate) fn read(text: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(text).ok()
    }

    /// `params._meta`, where a 2026-07-28 request carries its version,
    /// client capabilities and log level.
    pub(crate) fn meta(&self) -> Option<&'a RawValue> {
        member(self.params?, "_meta")
    }

    pub(crate) fn kind(&self) -> Kind {
        let id = self.id.is_some_and(|id| id.get() != "null");
        match (
            id,
            &self.method,
            self.result.is_some() || self.error.is_some(),
        ) {
            (true, Some(_), _) => Kind::Request,
            (false, Some(_), _) => Kind::Notification,
            (true, None, true) => Kind::Response,
            _ => Kind::Invalid,
        }
    }

    /// Whether it is an error response under a `null` (or no) id: the
    /// answer of a peer that could not read the request's id, which in a
    /// JSON answer is still the answer to that request.
    pub(crate) fn is_unattributed_error(&self) -> bool {
        self.method.is_none() && self.error.is_some() && self.id.is_none()
    }

    /// `params._meta.progressToken`, as sent.
    pub(crate) fn progress_token(&self) -> Option<&'a RawValue> {
        member(member(self.params?, "_meta")?, "progressToken")
    }

    /// `params.requestId` (of `notifications/cancelled`), as sent.
    pub(crate) fn request_id(&self) -> Option<&'a RawValue> {
        member(self.params?, "requestId")
    }
}

/// The member `name` of the object `object`.
pub(crate) fn member<'a>(object: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    Members::parse(object.get()).ok()?.get(name)
}

/// `body` with the values at `places` (slices of it) replaced, each by its
/// text. `None` when one is not a slice of `body`.
pub(crate) fn replaced(body: &[u8], places: &[(&RawValue, &str)]) -> Option<Bytes> {
    let mut edits = Vec::with_capacity(places.len());
    for (value, with) in places {
        let range: Range<usize> = span(body, value.get())?;
        edits.push(Edit::put(range, with.as_bytes()));
    }
    splice(body, &mut edits)
}

/// `line` as one line of the framing: raw line breaks, which valid JSON
/// holds only as whitespace between tokens (a string escapes them), made
/// spaces. A client's pretty-printed JSON must not become several lines,
/// nor smuggle a line of its own to the child.
pub(crate) fn one_line(line: Bytes) -> Bytes {
    if !line.iter().any(|byte| matches!(byte, b'\n' | b'\r')) {
        return line;
    }
    let flat: Vec<u8> = line
        .iter()
        .map(|byte| match byte {
            b'\n' | b'\r' => b' ',
            other => *other,
        })
        .collect();
    Bytes::from(flat)
}

/// A JSON-RPC error response to `id` (its JSON text), as one line.
pub(crate) fn error_response(id: &str, code: i64, message: &str) -> Bytes {
    let error = serde_json::json!({"code": code, "message": message});
    Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#))
}

/// The `-32021` error response to `id` (its JSON text) of a call whose
/// client did not declare the client capability `needed` (`elicitation`,
/// `sampling`, `roots`), which the server asked for.
pub(crate) fn missing_capability(id: &str, needed: &str) -> Bytes {
    let error = serde_json::json!({
        "code": MISSING_CAPABILITY,
        "message": format!("The server needs the client capability {needed:?} for this call, which the request did not declare"),
        "data": {"requiredCapabilities": {needed: {}}},
    });
    Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#))
}

/// `-32021`: a client capability the call needs was not declared.
pub(crate) const MISSING_CAPABILITY: i64 = -32021;

/// Whether `message` is an error response with `code`.
pub(crate) fn is_error(message: &[u8], code: i64) -> bool {
    let code = code.to_string();
    // Most answers are results: only one that holds the code is read.
    message.windows(code.len()).any(|at| at == code.as_bytes())
        && Message::read(message)
            .and_then(|message| message.error)
            .and_then(|error| member(error, "code"))
            .is_some_and(|found| found.get() == code)
}

/// One SSE event carrying `message`.
pub(crate) fn event(message: &[u8]) -> Bytes {
    mcp_tasks::wire::sse::named_event(Some("message"), message)
}

/// A JSON-RPC result response to `id` (its JSON text), as one line.
pub(crate) fn result_response(id: &str, result: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_by_their_members() {
        let kind = |text: &str| Message::read(text.as_bytes()).map(|m| m.kind());
        assert_eq!(kind(r#"{"id":1,"method":"ping"}"#), Some(Kind::Request));
        assert_eq!(
            kind(r#"{"method":"notifications/progress"}"#),
            Some(Kind::Notification)
        );
        assert_eq!(kind(r#"{"id":"a","result":{}}"#), Some(Kind::Response));
        assert_eq!(kind(r#"{"id":2,"error":{"code":1}}"#), Some(Kind::Response));
        assert_eq!(
            kind(r#"{"id":null,"method":"x"}"#),
            Some(Kind::Notification)
        );
        assert_eq!(kind(r#"{"id":3}"#), Some(Kind::Invalid));
        assert_eq!(kind("[1]"), None);
        assert_eq!(kind("not json"), None);
    }

    #[test]
    fn ids_and_tokens_are_swapped_and_every_other_byte_kept() {
        let body = br#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"x","arguments":{"n":1e400},"_meta":{"progressToken":"tok"}}}"#;
        let message = Message::read(body).unwrap();
        let token = message.progress_token().unwrap();
        assert_eq!(token.get(), r#""tok""#);
        let out = replaced(body, &[(message.id.unwrap(), "7"), (token, "7")]).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"n":1e400},"_meta":{"progressToken":7}}}"#
        );
    }

    #[test]
    fn a_pretty_printed_message_stays_one_line_and_means_the_same() {
        let pretty = "{\n  \"id\": 1,\r\n  \"method\": \"ping\",\n  \"x\": \"a\\nb\"\n}";
        let flat = one_line(Bytes::from(pretty));
        assert!(!flat.contains(&b'\n') && !flat.contains(&b'\r'));
        let before: serde_json::Value = serde_json::from_str(pretty).unwrap();
        let after: serde_json::Value = serde_json::from_slice(&flat).unwrap();
        assert_eq!(before, after);
        assert_eq!(after["x"], "a\nb");
    }
}
