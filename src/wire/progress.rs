//! The progress token the layer adds to a call whose client sent none.
//!
//! An MCP server reports progress only for a request that carries
//! `_meta.progressToken`. A parked task's `statusMessage` comes from those
//! reports, so the layer asks for them itself on every call it may park
//! (but those of a tool known to answer at once without progress:
//! `runtime::quiet`): it writes a [`Token`] of its own into the forwarded
//! call, and keeps the
//! notifications that name it from the client, which never asked for them
//! (`flight::tap` forgets their bytes).
//!
//! | The call's `params`…                 | The forwarded call gets                          |
//! |--------------------------------------|--------------------------------------------------|
//! | has `_meta.progressToken`            | nothing: the client's token and reports are its own |
//! | has a `_meta` object                 | `"progressToken":<token>` as its first member    |
//! | has no `_meta`                       | `"_meta":{"progressToken":<token>}` as its first member |
//! | has `_meta` that the scan could not place (`null`, escaped keys) | nothing |
//!
//! A token is `"mcp-tasks/<salt>-<n>"`: a random salt per process and a
//! counter, so no two calls a process forwards, and no two processes in
//! front of one server, share one while both run.

use std::ops::Range;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::splice::Edit;

/// A progress token of the layer's, as the JSON string it is written as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token(Box<str>);

/// Where a token goes in a call's body (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Into the `_meta` object whose `{` is at this offset.
    Meta(usize),
    /// As a new `_meta` into the `params` object whose `{` is at this offset.
    Params(usize),
}

impl Token {
    /// A token no other call of this process has.
    pub(crate) fn next() -> Self {
        static SALT: LazyLock<u32> = LazyLock::new(|| {
            let mut bytes = [0u8; 4];
            // Without the OS source, the process id still tells two
            // processes apart in most deployments.
            match getrandom::fill(&mut bytes) {
                Ok(()) => u32::from_le_bytes(bytes),
                Err(_) => std::process::id(),
            }
        });
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        Self(format!("\"mcp-tasks/{:08x}-{n}\"", *SALT).into_boxed_str())
    }

    /// A token of a fixed name, for tests.
    #[cfg(test)]
    pub(crate) fn named(unique: &str) -> Self {
        Self(format!("\"mcp-tasks/{unique}\"").into_boxed_str())
    }

    /// The token as JSON.
    pub(crate) fn json(&self) -> &str {
        &self.0
    }

    /// Whether the JSON value `raw` (a notification's `progressToken`, as
    /// the inner server wrote it) is this token.
    pub(crate) fn is(&self, raw: &str) -> bool {
        // The token holds no character a writer could escape.
        raw == &*self.0
    }

    /// The member, as written into `_meta`, between `before` and `after`.
    fn member(&self, before: &str, after: &str) -> Vec<u8> {
        const KEY: &str = "\"progressToken\":";
        let mut out = Vec::with_capacity(before.len() + KEY.len() + self.0.len() + after.len());
        for part in [before, KEY, &self.0, after] {
            out.extend_from_slice(part.as_bytes());
        }
        out
    }
}

/// The first byte after `open` that is not blank.
fn next_solid(body: &[u8], open: usize) -> Option<u8> {
    body.get(open + 1..)?
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// The edit that writes `token` at `place` in `body`. `None` when `place`
/// is not the `{` of a JSON object there.
pub(crate) fn insert(body: &[u8], place: Place, token: &Token) -> Option<Edit<'static>> {
    let (Place::Meta(open) | Place::Params(open)) = place;
    if body.get(open) != Some(&b'{') {
        return None;
    }
    let empty = next_solid(body, open)? == b'}';
    let text = match (place, empty) {
        (Place::Meta(_), true) => token.member("", ""),
        (Place::Meta(_), false) => token.member("", ","),
        (Place::Params(_), true) => token.member("\"_meta\":{", "}"),
        (Place::Params(_), false) => token.member("\"_meta\":{", "},"),
    };
    let at = open + 1;
    Some(Edit::put(at..at, text))
}

/// The edit that puts `token` where the member cut `cut` (of `_meta`, with
/// the comma before or after it, as `splice::member_cut` finds it) was:
/// for a call whose related task ids are removed, so that a `_meta` left
/// with no other member stays an object of one.
pub(crate) fn in_place_of(body: &[u8], cut: Range<usize>, token: &Token) -> Edit<'static> {
    let text = body.get(cut.clone()).unwrap_or_default();
    let solid = |mut bytes: std::slice::Iter<'_, u8>, back: bool| {
        let mut next = || {
            if back {
                bytes.next_back()
            } else {
                bytes.next()
            }
        };
        loop {
            match next() {
                Some(b) if b.is_ascii_whitespace() => continue,
                other => return other.copied(),
            }
        }
    };
    let with = if solid(text.iter(), false) == Some(b',') {
        token.member(",", "")
    } else if solid(text.iter(), true) == Some(b',') {
        token.member("", ",")
    } else {
        token.member("", "")
    };
    Edit::put(cut, with)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::splice::{member_cut, splice};

    fn edited(body: &str, edits: Vec<Edit<'_>>) -> serde_json::Value {
        let mut edits = edits;
        let out = splice(body.as_bytes(), &mut edits).expect("edits fit");
        serde_json::from_slice(&out).expect("still JSON")
    }

    #[test]
    fn tokens_differ_and_are_recognised_only_as_written() {
        let (a, b) = (Token::next(), Token::next());
        assert_ne!(a, b);
        assert!(a.is(a.json()) && !a.is(b.json()));
        assert!(a.json().starts_with("\"mcp-tasks/"));
        assert!(!a.is("7"));
        let named = Token::named("0abc");
        assert_eq!(named.json(), "\"mcp-tasks/0abc\"");
    }

    #[test]
    fn a_token_goes_into_meta_or_a_new_meta_and_the_body_stays_json() {
        let token = Token::named("t");
        for (body, place) in [
            (r#"{"params":{"name":"x","_meta":{"a":1}}}"#, "_meta"),
            (r#"{"params":{"name":"x","_meta":{ }}}"#, "_meta"),
            (r#"{"params":{"name":"x"}}"#, "params"),
            (r#"{"params":{ }}"#, "params"),
        ] {
            let open = match place {
                "_meta" => Place::Meta(body.find(r#""_meta":{"#).unwrap() + 8),
                _ => Place::Params(body.find('{').unwrap() + 10),
            };
            let edit = insert(body.as_bytes(), open, &token).expect(body);
            let value = edited(body, vec![edit]);
            assert_eq!(
                value["params"]["_meta"]["progressToken"], "mcp-tasks/t",
                "{body}"
            );
        }
        // Not at an object's `{`: no edit.
        assert!(insert(b"{\"a\":[1]}", Place::Meta(5), &token).is_none());
    }

    #[test]
    fn the_token_takes_the_place_of_the_related_ids_with_the_right_comma() {
        let token = Token::named("t");
        let key = crate::wire::RELATED_TASK_IDS;
        for body in [
            format!(r#"{{"_meta":{{"{key}":["a"]}}}}"#),
            format!(r#"{{"_meta":{{"{key}":["a"], "b":1}}}}"#),
            format!(r#"{{"_meta":{{"b":1 , "{key}":["a"]}}}}"#),
        ] {
            let start = body.find("[\"a\"]").unwrap();
            let cut = member_cut(body.as_bytes(), start..start + 5, key).unwrap();
            let edit = in_place_of(body.as_bytes(), cut, &token);
            let value = edited(&body, vec![edit]);
            assert_eq!(value["_meta"]["progressToken"], "mcp-tasks/t", "{body}");
            assert!(value["_meta"].get(key).is_none(), "{body}");
        }
    }
}
