//! Editing JSON objects without touching what is not edited.
//!
//! Parsing a message into `serde_json::Value` and back loses precision (large
//! integers, `1e400`) and key order. The layer edits only the members it must
//! and copies every other member as the exact text the client sent.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

/// The members of a JSON object, in order, each value as its original text.
#[derive(Debug)]
pub struct Members<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Members<'de>, M::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

impl<'a> Members<'a> {
    /// Reads the members of the object `text`.
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The value of member `key`.
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// Writes `{"key":value,…}` from keys and raw value texts.
pub(crate) fn write_object<'k>(
    out: &mut String,
    members: impl Iterator<Item = (&'k str, &'k str)>,
) {
    out.push('{');
    for (index, (key, value)) in members.enumerate() {
        if index > 0 {
            out.push(',');
        }
        // Serializing a string cannot fail.
        out.push_str(&serde_json::to_string(key).unwrap_or_default());
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
}

/// `object` with members replaced: each `(key, Some(value))` of `edits` is
/// removed where it stood and written last with `value`; each `(key, None)`
/// is removed. Every other member keeps its place and exact text. `None`
/// when `object` is not a JSON object.
pub fn edit_object(object: &str, edits: &[(&str, Option<&str>)]) -> Option<String> {
    let members = Members::parse(object).ok()?;
    Some(edit_members(&members, object.len(), edits))
}

/// [`edit_object`] over members read already; `len` is the object's length.
pub(crate) fn edit_members(
    members: &Members<'_>,
    len: usize,
    edits: &[(&str, Option<&str>)],
) -> String {
    let mut out = String::with_capacity(len + 64);
    let kept = members
        .0
        .iter()
        .filter(|(key, _)| !edits.iter().any(|(edited, _)| key == edited))
        .map(|(key, value)| (key.as_ref(), value.get()));
    let added = edits
        .iter()
        .filter_map(|(key, value)| Some((*key, (*value)?)));
    write_object(&mut out, kept.chain(added));
    out
}

/// The JSON object `{}`.
pub fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("`{}` is valid JSON")
}

/// The JSON string at `at` in `body` (a tool's name, found by the one
/// parse), decoded; `None` when there is none or it is not a string.
pub(crate) fn string_at(body: &[u8], at: Option<std::ops::Range<usize>>) -> Option<String> {
    serde_json::from_slice(body.get(at?)?).ok()
}

/// The JSON string at `at` in `body`, as [`string_at`] reads it, but
/// borrowed from `body` when it holds no escape (nothing allocated).
pub(crate) fn str_at(body: &[u8], at: Option<std::ops::Range<usize>>) -> Option<Cow<'_, str>> {
    let raw = body.get(at?)?;
    match raw.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")) {
        Some(inner) if !inner.contains(&b'\\') => {
            std::str::from_utf8(inner).ok().map(Cow::Borrowed)
        }
        _ => serde_json::from_slice::<String>(raw).ok().map(Cow::Owned),
    }
}

/// The byte range `inner` occupies in `outer`, when it is a slice of it.
pub fn span(outer: &[u8], inner: &str) -> Option<std::ops::Range<usize>> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    let end = start + inner.len();
    (end <= outer.len()).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edited_objects_keep_other_members_and_put_replacements_last() {
        let text = r#"{"a":1,"b":1e400,"c":{"x" : 1},"d":null}"#;
        assert_eq!(
            edit_object(text, &[("a", Some("2")), ("d", None), ("e", Some("[]"))]).unwrap(),
            r#"{"b":1e400,"c":{"x" : 1},"a":2,"e":[]}"#
        );
        assert_eq!(edit_object("[]", &[]), None);
    }

    #[test]
    fn a_string_without_escapes_is_borrowed_and_one_with_them_decoded() {
        let body = br#"{"a":"plain","b":"t\u00e9\"x","c":1}"#;
        let text = std::str::from_utf8(body).unwrap();
        let at = |key: &str| span(body, Members::parse(text).unwrap().get(key).unwrap().get());
        assert!(matches!(
            str_at(body, at("a")),
            Some(Cow::Borrowed("plain"))
        ));
        assert_eq!(str_at(body, at("b")).as_deref(), Some("t\u{e9}\"x"));
        assert_eq!(str_at(body, at("c")), None);
        assert_eq!(str_at(body, None), None);
    }

    #[test]
    fn members_keep_their_order_and_exact_text() {
        let text = r#"{"z":123456789012345678901234567890,"a":1e400,"m":{"x" : 1}}"#;
        let members = Members::parse(text).unwrap();
        let mut out = String::new();
        write_object(
            &mut out,
            members.0.iter().map(|(k, v)| (k.as_ref(), v.get())),
        );
        assert_eq!(
            out,
            r#"{"z":123456789012345678901234567890,"a":1e400,"m":{"x" : 1}}"#
        );
        assert_eq!(
            span(text.as_bytes(), members.get("a").unwrap().get()),
            Some(40..45)
        );
    }
}
