//! The parsed request: one borrowing pass over a POST body, shared by
//! `classify` and `legacy::route`, with the header helpers both use.

use std::borrow::Cow;
use std::ops::Range;

use base64::Engine as _;
use http::HeaderMap;
use http::header::{AsHeaderName, HeaderName};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::TASKS_EXTENSION;
use super::progress::Place;
use super::raw::span;

/// The request, parsed in one pass over the buffer: every later step reads
/// this, or the places in the body it found, never the body again (see
/// `Envelope::parse`, in `wire::read`).
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    /// The id as written, `null` included (a request JSON-RPC forbids,
    /// not a notification); `None` only when there is no `id` member.
    #[serde(borrow, default, deserialize_with = "present")]
    pub id: Option<Json<'a>>,
    #[serde(borrow)]
    pub method: Option<Text<'a>>,
    #[serde(borrow)]
    pub params: Option<Spanned<'a>>,
}

/// A member's value as written, `null` included.
fn present<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Json<'a>>, D::Error> {
    Json::deserialize(deserializer).map(Some)
}

impl<'a> Envelope<'a> {
    /// Whether this is a request whose id JSON-RPC forbids: `null`, an
    /// object, an array or a boolean (MCP: a string or a number).
    pub(crate) fn has_invalid_id(&self) -> bool {
        self.method.is_some()
            && self.id.is_some_and(|id| {
                !matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
            })
    }

    pub(super) fn parse_with<R: serde_json::de::Read<'a>>(
        mut reader: serde_json::Deserializer<R>,
    ) -> serde_json::Result<Self> {
        let envelope = Self::deserialize(&mut reader)?;
        reader.end()?;
        Ok(envelope)
    }
}

/// `params` read, and kept as sent: where it is in the buffer matters to a
/// `tools/call` (re-issued byte for byte).
#[derive(Default)]
pub(crate) struct Spanned<'a> {
    /// The `params` value as sent.
    pub raw: Option<Json<'a>>,
    /// What the layer reads of it.
    pub fields: Params<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Spanned<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The raw value only marks where `params` starts and ends; its fields
        // are then read from that slice.
        // (`null` never gets here: the envelope reads it as no params.)
        let raw = <&'a RawValue>::deserialize(deserializer)?;
        let fields = serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
        Ok(Self {
            raw: Some(raw.into()),
            fields,
        })
    }
}

impl Spanned<'_> {
    /// Where `params.name` (the JSON value, as sent) is in `body`.
    pub(crate) fn name_span(&self, body: &[u8]) -> Option<Range<usize>> {
        self.fields.name.and_then(|raw| span(body, raw.get()))
    }

    /// Where `params` is in `body`, the buffer it was read from.
    pub(crate) fn span(&self, body: &[u8]) -> Option<Range<usize>> {
        span(body, self.raw?.get())
    }

    /// Where a progress token of the layer's goes (`wire::progress`):
    /// `None` when the client sent one, or when no place is certain (a
    /// `_meta` that is `null`, or one serde read, or `params` that may
    /// write the key with escapes).
    pub(crate) fn progress_place(&self, body: &[u8]) -> Option<Place> {
        match &self.fields.meta {
            Some(meta) if meta.progress.is_some() => None,
            Some(meta) => meta.open.map(Place::Meta),
            None => {
                let params = self.span(body)?;
                let text = body.get(params.clone())?;
                let unsure = memchr::memmem::find(text, b"\"_meta\"").is_some()
                    || memchr::memmem::find(text, b"\\u").is_some();
                (!unsure).then_some(Place::Params(params.start))
            }
        }
    }
}

/// The request with `params` left unread, for bodies [`Envelope`] refuses.
#[derive(Deserialize)]
pub(crate) struct Loose<'a> {
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub method: Option<Text<'a>>,
}

/// A JSON value as the body writes it, checked as JSON by the reader that
/// found it (the scanning pass, or serde_json): what a `&RawValue` holds,
/// without serde_json checking the same text a second time. Most of the
/// values the layer reads are only located or compared; the few that go
/// into a reply become a `&RawValue` there ([`Json::raw`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Json<'a>(&'a str);

impl<'a> Json<'a> {
    /// The text as written.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }

    /// The value as a `&RawValue`, checked again by serde_json, for a reply
    /// that carries it. serde_json takes as a raw value any JSON that the
    /// pass or itself read, however deep, so the `null` fallback is never used.
    pub(crate) fn raw(self) -> &'a RawValue {
        serde_json::from_str(self.0).unwrap_or(RawValue::NULL)
    }

    /// Wraps text that a JSON reader has just read as one value.
    pub(super) fn checked(text: &'a str) -> Self {
        Self(text)
    }
}

impl<'a> From<&'a RawValue> for Json<'a> {
    fn from(raw: &'a RawValue) -> Self {
        Self(raw.get())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| Self(raw.get()))
    }
}

/// A string, borrowed from the buffer unless it holds escapes.
#[derive(Deserialize)]
pub(crate) struct Text<'a>(#[serde(borrow)] pub(super) Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct Params<'a> {
    /// Kept raw: any value is accepted here (a name that is not a string,
    /// or not a decodable one, is no name, not an unreadable request).
    #[serde(borrow)]
    pub name: Option<Json<'a>>,
    #[serde(borrow, rename = "taskId")]
    pub task_id: Option<Json<'a>>,
    /// The 2025-11-25 task augmentation of a `tools/call`.
    #[serde(borrow)]
    pub task: Option<&'a RawValue>,
    /// The 2025-11-25 `tasks/list` cursor.
    #[serde(borrow)]
    pub cursor: Option<&'a RawValue>,
    /// The request a `notifications/cancelled` cancels.
    #[serde(borrow, rename = "requestId")]
    pub request_id: Option<&'a RawValue>,
    /// The answers of a `tasks/update`.
    #[serde(borrow, rename = "inputResponses")]
    pub input_responses: Option<&'a RawValue>,
    #[serde(borrow, rename = "_meta")]
    pub meta: Option<Meta<'a>>,
    /// The filter of `subscriptions/listen`, as sent (read further only
    /// on that path).
    #[serde(borrow)]
    pub notifications: Option<Json<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Meta<'a> {
    #[serde(borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    pub version: Option<Text<'a>>,
    #[serde(borrow, rename = "io.modelcontextprotocol/clientCapabilities")]
    pub capabilities: Option<Capabilities<'a>>,
    /// The draft's task ids a request relates to: never for the inner
    /// server, to which task ids mean nothing and must not leak.
    #[serde(borrow, rename = "io.modelcontextprotocol/relatedTaskIds")]
    pub related: Option<Json<'a>>,
    /// The client's own progress token.
    #[serde(borrow, rename = "progressToken")]
    pub progress: Option<Json<'a>>,
    /// Where the object's `{` is in the body, when the one-pass reader
    /// read it (`None` from serde): where a progress token of the layer's
    /// goes (`wire::progress`).
    #[serde(skip)]
    pub open: Option<usize>,
}

#[derive(Deserialize)]
pub(crate) struct Capabilities<'a> {
    #[serde(borrow)]
    pub extensions: Option<Json<'a>>,
    /// The tasks extension's member of `extensions`, when the one-pass
    /// reader found it on the way (`None`: not read, so `tasks_member`
    /// reads it, in `wire::read`).
    #[serde(skip)]
    pub tasks: Option<TasksMember<'a>>,
}

/// The tasks extension's member of an `extensions` object, read in one
/// pass that allocates nothing for keys written plainly.
#[derive(Clone, Copy, Default)]
pub(crate) struct TasksMember<'a> {
    /// An object value declares the extension (`null` or `false` does not).
    pub declared: bool,
    /// The declaring value, when a cut can remove its member: the only
    /// member of that name, its key written without escapes (so its text is
    /// exactly the quoted name).
    pub value: Option<Json<'a>>,
}

impl<'de> Deserialize<'de> for TasksMember<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = TasksMember<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let (mut member, mut named, mut plain) = (TasksMember::default(), 0, true);
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if *key != *TASKS_EXTENSION {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                    let value = map.next_value::<Json<'de>>()?;
                    named += 1;
                    plain &= matches!(key.0, Cow::Borrowed(_));
                    if value.get().starts_with('{') {
                        member = TasksMember {
                            declared: true,
                            value: Some(value),
                        };
                    }
                }
                if named != 1 || !plain {
                    member.value = None;
                }
                Ok(member)
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// Reads a JSON string out of a raw value, if it is one: the bytes between
/// its quotes when it holds no escape (no second parse), else decoded;
/// `None` when it is not a string or does not decode.
pub(crate) fn as_str(raw: Option<Json<'_>>) -> Option<Cow<'_, str>> {
    let text = raw?.get();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Some(Cow::Borrowed(inner)),
        _ => serde_json::from_str::<Cow<'_, str>>(text).ok(),
    }
}

/// The routing headers of the 2026-07-28 Streamable HTTP binding, named
/// once: a lookup by a ready `HeaderName` skips parsing the name.
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The value of header `name`, when it is visible ASCII.
pub(crate) fn header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// Decodes the `=?base64?…?=` form of a header that carries a value of the
/// body (`Mcp-Name`, `Mcp-Param-*`: standard Base64, padded, of UTF-8);
/// other values are literal. `None` for invalid Base64 or UTF-8.
pub fn decode_header_value(value: &str) -> Option<Cow<'_, str>> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::read::tasks_member;

    #[test]
    fn base64_names_are_decoded_and_plain_names_pass_as_they_are() {
        assert_eq!(
            decode_header_value("=?base64?aMOpbGxv?=").as_deref(),
            Some("héllo")
        );
        assert_eq!(decode_header_value("greet").as_deref(), Some("greet"));
        assert_eq!(decode_header_value("=?base64?***?="), None);
    }

    #[test]
    fn any_name_is_read_and_a_string_name_gives_its_text() {
        let read = |body: &str| {
            let envelope = Envelope::parse(body.as_bytes()).unwrap();
            let params = envelope.params.unwrap_or_default();
            let text = as_str(params.fields.name).map(Cow::into_owned);
            let sent = params
                .name_span(body.as_bytes())
                .map(|at| body[at].to_owned());
            (text, sent)
        };
        let named =
            |text: Option<&str>, sent: &str| (text.map(str::to_owned), Some(sent.to_owned()));
        assert_eq!(
            read(r#"{"params":{"name":"greet","arguments":{}}}"#),
            named(Some("greet"), r#""greet""#)
        );
        assert_eq!(
            read(r#"{"params":{"name" : "gr\u0065et"}}"#),
            named(Some("greet"), r#""gr\u0065et""#)
        );
        assert_eq!(read(r#"{"params":{"name":""}}"#), named(Some(""), "\"\""));
        // Not a string, or not a decodable one: no name, yet the request
        // is read (a raw value is only skipped over, never decoded).
        for other in [
            "12",
            "1e400",
            "true",
            "[1,{}]",
            r#"{"a":"b"}"#,
            r#""\ud800""#,
        ] {
            let body = format!(r#"{{"params":{{"name":{other},"x":1}}}}"#);
            assert_eq!(read(&body), named(None, other), "{other}");
        }
        assert_eq!(read(r#"{"params":{"name":null}}"#), (None, None));
        assert_eq!(read(r#"{"params":{}}"#), (None, None));
    }

    #[test]
    fn the_extension_is_declared_by_a_member_of_extensions() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let member = |s: &str| {
            let raw = raw(s);
            let member = tasks_member(Some(Json::from(&*raw)));
            (member.declared, member.value.map(|v| v.get().to_owned()))
        };
        let declared = |value: &str| (true, Some(value.to_owned()));
        assert_eq!(
            member(r#"{"a":1,"io.modelcontextprotocol/tasks":{}}"#),
            declared("{}")
        );
        assert_eq!(
            member(r#"{"io.modelcontextprotocol/tasks" : {"x":[1]} }"#),
            declared(r#"{"x":[1]}"#)
        );
        assert_eq!(member(r#"{"tasks":{"list":{}}}"#), (false, None));
        assert_eq!(member(r#"[]"#), (false, None));
        assert_eq!(
            member(r#"{"io.modelcontextprotocol/tasks":null}"#),
            (false, None)
        );
        assert_eq!(
            member(r#"{"io.modelcontextprotocol/tasks":false}"#),
            (false, None)
        );
        // Declared, but no plain single member a cut could remove.
        assert_eq!(
            member(r#"{"io.modelcontextprotocol\/tasks":{}}"#),
            (true, None)
        );
        assert_eq!(
            member(r#"{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/tasks":null}"#),
            (true, None)
        );
        assert!(!tasks_member(None).declared);
    }
}
