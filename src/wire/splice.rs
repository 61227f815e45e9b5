//! The one routine that edits a message's bytes in place: every change the
//! layer makes to a body it forwards (the tasks extension cut out, the
//! related task ids cut out, a listen's `taskIds`, a 2025-11-25 call's id
//! and `task`) is an [`Edit`] of a byte range found by the one parse, and
//! [`splice`] writes them all in one copy. Every byte no edit covers stays
//! as the client sent it.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;

/// One change: the bytes at `range` become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit<'w> {
    /// The bytes of the body that change.
    pub range: Range<usize>,
    /// What they become (empty: they are cut).
    pub with: Cow<'w, [u8]>,
}

impl<'w> Edit<'w> {
    /// The bytes at `range` removed.
    pub fn cut(range: Range<usize>) -> Self {
        Self {
            range,
            with: Cow::Borrowed(b""),
        }
    }

    /// The bytes at `range` replaced by `with`.
    pub fn put(range: Range<usize>, with: impl Into<Cow<'w, [u8]>>) -> Self {
        Self {
            range,
            with: with.into(),
        }
    }

    /// The same edit `by` bytes earlier: for a slice of the body that
    /// starts at `by`. `None` when the edit starts before it.
    pub(crate) fn shifted(self, by: usize) -> Option<Self> {
        let start = self.range.start.checked_sub(by)?;
        Some(Self {
            range: start..self.range.end - by,
            with: self.with,
        })
    }
}

/// `body` with `edits` made, in one copy. `None` when an edit reaches past
/// the body or two overlap.
pub fn splice(body: &[u8], edits: &mut [Edit<'_>]) -> Option<Bytes> {
    // An insertion (an empty range) goes before a change that starts
    // where it does.
    edits.sort_unstable_by_key(|edit| (edit.range.start, edit.range.end));
    let mut len = body.len();
    let mut at = 0;
    for edit in edits.iter() {
        if edit.range.start < at || edit.range.end > body.len() || edit.range.start > edit.range.end
        {
            return None;
        }
        len = len - edit.range.len() + edit.with.len();
        at = edit.range.end;
    }
    let mut out = Vec::with_capacity(len);
    let mut at = 0;
    for edit in edits.iter() {
        out.extend_from_slice(&body[at..edit.range.start]);
        out.extend_from_slice(&edit.with);
        at = edit.range.end;
    }
    out.extend_from_slice(&body[at..]);
    Some(Bytes::from(out))
}

/// `body` with the present `edits` made; `None` when there are none (or
/// they do not fit the body).
pub(crate) fn splice_present(body: &[u8], edits: [Option<Edit<'_>>; 3]) -> Option<Bytes> {
    match edits {
        [None, None, None] => None,
        [Some(a), None, None] | [None, Some(a), None] | [None, None, Some(a)] => {
            splice(body, &mut [a])
        }
        [Some(a), Some(b), None] | [Some(a), None, Some(b)] | [None, Some(a), Some(b)] => {
            splice(body, &mut [a, b])
        }
        [Some(a), Some(b), Some(c)] => splice(body, &mut [a, b, c]),
    }
}

/// The bytes to cut from `body` to remove the member `name` whose value is
/// at `value`: its plainly written key, the colon, the value, and the comma
/// before it (or, for the first member, the one after it). `None` when the
/// bytes around the value are not that shape (an escaped key, say).
pub(crate) fn member_cut(body: &[u8], value: Range<usize>, name: &str) -> Option<Range<usize>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spliced(body: &str, edits: &mut [Edit<'_>]) -> Option<String> {
        splice(body.as_bytes(), edits).map(|bytes| String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[test]
    fn edits_are_made_in_body_order_whatever_order_they_come_in() {
        let body = r#"{"a":1,"b":2,"c":3}"#;
        let mut edits = [Edit::put(17..18, &b"[9]"[..]), Edit::cut(6..12)];
        assert_eq!(spliced(body, &mut edits).unwrap(), r#"{"a":1,"c":[9]}"#);
        assert_eq!(spliced(body, &mut []).unwrap(), body);
    }

    #[test]
    fn overlapping_or_outlying_edits_are_refused() {
        let body = r#"{"a":1}"#;
        assert!(spliced(body, &mut [Edit::cut(1..4), Edit::cut(3..5)]).is_none());
        assert!(spliced(body, &mut [Edit::cut(5..9)]).is_none());
        let backwards = Edit {
            range: Range { start: 4, end: 2 },
            with: Cow::Borrowed(b""),
        };
        assert!(spliced(body, &mut [backwards]).is_none());
    }

    #[test]
    fn a_member_is_cut_with_one_comma_and_only_when_its_key_is_plain() {
        let cut = |body: &str, value: &str, name: &str| {
            let start = body.find(value).unwrap();
            member_cut(body.as_bytes(), start..start + value.len(), name)
                .map(|range| format!("{}{}", &body[..range.start], &body[range.end..]))
        };
        assert_eq!(
            cut(r#"{"a":1, "t" : {} }"#, "{}", "t").unwrap(),
            r#"{"a":1 }"#
        );
        assert_eq!(
            cut(r#"{ "t":{}, "a":1}"#, "{}", "t").unwrap(),
            r#"{  "a":1}"#
        );
        assert_eq!(cut(r#"{"t":[]}"#, "[]", "t").unwrap(), "{}");
        assert!(cut(r#"{"\u0074":[]}"#, "[]", "t").is_none());
        assert!(cut(r#"{"x":[]}"#, "[]", "t").is_none());
    }

    #[test]
    fn a_shifted_edit_keeps_its_length_and_refuses_to_start_before_the_slice() {
        let edit = Edit::put(10..14, &b"null"[..]);
        assert_eq!(edit.clone().shifted(4).unwrap().range, 6..10);
        assert!(edit.shifted(11).is_none());
    }
}
