//! The envelope read in one pass by [`scan`](super::scan), without serde's
//! visitors.
//!
//! [`Envelope::parse`](super::envelope::Envelope::parse) tries this reader
//! first on a UTF-8 body. It reads what serde's derived reader reads (the
//! same fields, `null` as absent, strings borrowed unless escaped) and
//! accepts only what that reader accepts the same way; on anything else it
//! gives up (`None`) and the serde reader decides, with its own errors:
//!
//! | The body has…                                              | Here      |
//! |------------------------------------------------------------|-----------|
//! | objects where the envelope expects them, fields once each  | read      |
//! | a field of the envelope twice                              | given up (serde: a duplicate field) |
//! | `params`, `_meta` or `clientCapabilities` neither an object nor `null` | given up (serde: an error, or an array read by position) |
//! | `method` or a version neither a string nor `null`          | given up  |
//! | malformed JSON, trailing bytes, a lone surrogate escape (`\ud800`, which serde_json skips over) | given up  |
//!
//! Why: the layer reads every POST, and serde's derived reader is a visitor
//! per struct, each its own copy of serde_json's generic code, which a
//! fast call pays for in instruction-cache misses more than in
//! instructions (BENCHMARKS.md, issue #11). The scanner is a few plain
//! functions that decode nothing. Skipped values are checked as JSON
//! either way (the scanner refuses what serde_json might; the body was
//! checked as UTF-8 as a whole). The values the layer only locates or
//! compares (`id`, `params.name`, `params.taskId`, the `extensions` object)
//! are handed out as the scanner checked them ([`Json`]), not checked again
//! by serde_json; the others are. A string with escapes that the layer
//! reads (`method`, a version) is decoded by serde_json.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::envelope::{Capabilities, Envelope, Json, Meta, Params, Spanned, TasksMember, Text};
use super::scan::{Scan, Str};
use super::{RELATED_TASK_IDS, TASKS_EXTENSION};

/// The envelope of `text` (the body, as UTF-8), or `None` to leave it to
/// serde. `params` keeps its place in the text, as [`Envelope::parse`]
/// does.
pub(super) fn envelope(text: &str) -> Option<Envelope<'_>> {
    let mut pass = Pass::new(text);
    let mut envelope = Envelope {
        id: None,
        method: None,
        params: None,
    };
    pass.members(["id", "method", "params"], |pass, index| {
        match index {
            // `null` kept: an id JSON-RPC forbids, not a notification.
            0 => envelope.id = pass.present()?,
            1 => envelope.method = pass.text()?,
            _ => envelope.params = pass.spanned()?,
        }
        Some(())
    })?;
    pass.scan.finish()?;
    Some(envelope)
}

/// The tasks extension's member of the `extensions` object `text`, or
/// `None` to leave it to serde (not an object, or a key with escapes).
pub(super) fn tasks_member(text: &str) -> Option<TasksMember<'_>> {
    let mut pass = Pass::new(text);
    let member = pass.tasks_members()?;
    pass.scan.finish()?;
    member
}

/// A key: its text when written without escapes.
enum Field<'a> {
    Known(&'a str),
    /// Written with escapes: no field of the envelope (whose names serde
    /// would match after decoding) unless decoded, so the pass gives up
    /// when that could matter.
    Escaped,
}

/// Which fields of one object were read, to refuse a second one.
#[derive(Default)]
struct Seen(u16);

impl Seen {
    fn once(&mut self, field: usize) -> Option<()> {
        let bit = 1 << field;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

struct Pass<'a> {
    scan: Scan<'a>,
    text: &'a str,
}

impl<'a> Pass<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            scan: Scan::new(text),
            text,
        }
    }

    /// Enters the object at the point: its first key (`None`: empty).
    fn first_key(&mut self) -> Option<Option<Field<'a>>> {
        let key = self.scan.object_first()?;
        Some(key.map(|key| self.field(key)))
    }

    /// The object's next key (`None`: its end).
    fn next_key(&mut self) -> Option<Option<Field<'a>>> {
        let key = self.scan.object_next()?;
        Some(key.map(|key| self.field(key)))
    }

    /// The key `key`: its text when it holds no escape.
    fn field(&self, key: Str) -> Field<'a> {
        match key.escaped {
            false => Field::Known(&self.text[key.start..key.end]),
            true => Field::Escaped,
        }
    }

    /// Steps over the value at the point.
    fn skip(&mut self) -> Option<()> {
        self.scan.skip()
    }

    /// Reads the `extensions` object at the point (`None`: not an object),
    /// and the tasks extension's member in it: `Some(None)` when a key
    /// written with escapes leaves that to serde (which compares decoded
    /// keys).
    fn tasks_members(&mut self) -> Option<Option<TasksMember<'a>>> {
        let (mut member, mut named, mut escaped) = (TasksMember::default(), 0, false);
        let mut key = self.first_key()?;
        while let Some(name) = key {
            match name {
                Field::Known(name) if name == TASKS_EXTENSION => {
                    let value = self.any()?;
                    named += 1;
                    if value.get().starts_with('{') {
                        member = TasksMember {
                            declared: true,
                            value: Some(value),
                        };
                    }
                }
                Field::Known(_) => self.skip()?,
                Field::Escaped => {
                    escaped = true;
                    self.skip()?;
                }
            }
            key = self.next_key()?;
        }
        if named != 1 {
            member.value = None;
        }
        Some((!escaped).then_some(member))
    }

    /// The `extensions` value at the point as written (`null`: none), with
    /// the tasks extension's member when it is an object read plainly.
    fn extensions(&mut self) -> Option<(Option<Json<'a>>, Option<TasksMember<'a>>)> {
        match self.scan.peek()? {
            b'n' => self.scan.null().map(|()| (None, None)),
            b'{' => {
                // At the object's `{`: the peek stepped over the whitespace only.
                let start = self.scan.at();
                let member = self.tasks_members()?;
                let text = self.text.get(start..self.scan.at())?;
                Some((Some(Json::checked(text)), member))
            }
            _ => Some((Some(self.spanned_value()?), None)),
        }
    }

    /// The value at the point as it is written.
    fn any(&mut self) -> Option<Json<'a>> {
        self.scan.peek()?;
        self.spanned_value()
    }

    /// The value at the point (after a peek), stepped over and so checked.
    fn spanned_value(&mut self) -> Option<Json<'a>> {
        let start = self.scan.at();
        self.scan.skip()?;
        let text = self.text.get(start..self.scan.at())?;
        Some(Json::checked(text))
    }

    /// A value as written, `null` included.
    fn present(&mut self) -> Option<Option<Json<'a>>> {
        self.scan.peek()?;
        self.spanned_value().map(Some)
    }

    /// An optional value as written: `null` is none.
    fn json(&mut self) -> Option<Option<Json<'a>>> {
        match self.scan.peek()? {
            b'n' => self.scan.null().map(|()| None),
            _ => self.spanned_value().map(Some),
        }
    }

    /// An optional raw value (for the fields that are handed on as such):
    /// `null` is none; serde_json checks the text too.
    fn raw(&mut self) -> Option<Option<&'a RawValue>> {
        let json = self.json()?;
        Some(json.map(Json::raw))
    }

    /// An optional string, borrowed unless it holds escapes.
    fn text(&mut self) -> Option<Option<Text<'a>>> {
        match self.scan.peek()? {
            b'n' => self.scan.null().map(|()| None),
            b'"' => {
                let string = self.scan.string()?;
                let text = match string.escaped {
                    false => Cow::Borrowed(&self.text[string.start..string.end]),
                    // Rare: decoded by serde_json, quotes included.
                    true => Cow::Owned(
                        serde_json::from_str(&self.text[string.start - 1..=string.end]).ok()?,
                    ),
                };
                Some(Some(Text(text)))
            }
            _ => None,
        }
    }

    /// Whether an optional object follows: `Some(true)` entered it,
    /// `Some(false)` read a `null`, `None` anything else.
    fn object(&mut self) -> Option<bool> {
        match self.scan.peek()? {
            b'n' => self.scan.null().map(|()| false),
            b'{' => Some(true),
            _ => None,
        }
    }

    /// `params`, with its raw text.
    fn spanned(&mut self) -> Option<Option<Spanned<'a>>> {
        if !self.object()? {
            return Some(None);
        }
        // At the object's `{`: the peek stepped over the whitespace only.
        let start = self.scan.at();
        let fields = self.params()?;
        // Checked by the scan, as every value it steps over.
        let raw = Json::checked(self.text.get(start..self.scan.at())?);
        Some(Some(Spanned {
            raw: Some(raw),
            fields,
        }))
    }

    /// Reads the object at the point: each member named in `names` by
    /// `read`, given its index there, and a second one of these names gives
    /// up (as serde refuses a duplicate field); any other member is skipped.
    fn members<const N: usize>(
        &mut self,
        names: [&str; N],
        mut read: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        let mut seen = Seen::default();
        let mut key = self.first_key()?;
        while let Some(field) = key {
            // An escaped key could decode to one of the names.
            let Field::Known(name) = field else {
                return None;
            };
            match names.iter().position(|known| *known == name) {
                Some(index) => {
                    seen.once(index)?;
                    read(self, index)?;
                }
                None => self.skip()?,
            }
            key = self.next_key()?;
        }
        Some(())
    }

    /// An optional object, read by `read`: `null` is none.
    fn nested<T>(&mut self, read: fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.object()? {
            read(self).map(Some)
        } else {
            Some(None)
        }
    }

    /// The fields of the `params` object at the point.
    fn params(&mut self) -> Option<Params<'a>> {
        const NAMES: [&str; 8] = [
            "name",
            "taskId",
            "task",
            "cursor",
            "requestId",
            "inputResponses",
            "_meta",
            "notifications",
        ];
        let mut params = Params::default();
        self.members(NAMES, |pass, index| {
            match index {
                0 => params.name = pass.json()?,
                1 => params.task_id = pass.json()?,
                2 => params.task = pass.raw()?,
                3 => params.cursor = pass.raw()?,
                4 => params.request_id = pass.raw()?,
                5 => params.input_responses = pass.raw()?,
                6 => params.meta = pass.nested(Self::meta)?,
                _ => params.notifications = pass.json()?,
            }
            Some(())
        })?;
        Some(params)
    }

    fn meta(&mut self) -> Option<Meta<'a>> {
        let names = [
            "io.modelcontextprotocol/protocolVersion",
            "io.modelcontextprotocol/clientCapabilities",
            RELATED_TASK_IDS,
            "progressToken",
        ];
        // At the object's `{`, as in `spanned`.
        let mut meta = Meta {
            open: Some(self.scan.at()),
            ..Meta::default()
        };
        self.members(names, |pass, index| {
            match index {
                0 => meta.version = pass.text()?,
                1 => meta.capabilities = pass.nested(Self::capabilities)?,
                2 => meta.related = pass.json()?,
                _ => meta.progress = pass.json()?,
            }
            Some(())
        })?;
        Some(meta)
    }

    fn capabilities(&mut self) -> Option<Capabilities<'a>> {
        let (mut extensions, mut tasks) = (None, None);
        self.members(["extensions"], |pass, _| {
            (extensions, tasks) = pass.extensions()?;
            Some(())
        })?;
        Some(Capabilities { extensions, tasks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `raw` lies in `body`, and its text.
    fn at<'a>(body: &str, raw: Option<impl Into<Json<'a>>>) -> String {
        raw.map_or("-".into(), |raw| {
            let raw = raw.into();
            let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
            format!("{start}:{}", raw.get())
        })
    }

    fn text(text: &Option<Text<'_>>) -> String {
        text.as_ref().map_or("-".into(), |text| match &text.0 {
            Cow::Borrowed(s) => format!("borrowed {s}"),
            Cow::Owned(s) => format!("owned {s}"),
        })
    }

    /// Everything the envelope holds, positions included.
    fn describe(body: &str, envelope: &Envelope<'_>) -> String {
        let mut out = format!(
            "id {} method {}",
            at(body, envelope.id),
            text(&envelope.method)
        );
        if let Some(params) = &envelope.params {
            let fields = &params.fields;
            out += &format!(
                " params {} name {} taskId {} task {} cursor {} requestId {} inputResponses {}",
                at(body, params.raw),
                at(body, fields.name),
                at(body, fields.task_id),
                at(body, fields.task),
                at(body, fields.cursor),
                at(body, fields.request_id),
                at(body, fields.input_responses),
            );
            if let Some(meta) = &fields.meta {
                out += &format!(
                    " version {} related {} progress {}",
                    text(&meta.version),
                    at(body, meta.related),
                    at(body, meta.progress)
                );
                if let Some(capabilities) = &meta.capabilities {
                    out += &format!(" extensions {}", at(body, capabilities.extensions));
                    // The pass's member, read with `extensions`; serde's,
                    // read after: the two readers must agree on it too.
                    let member = capabilities.tasks_member();
                    out += &format!(" tasks {} {}", member.declared, at(body, member.value));
                }
            }
            if let Some(filter) = fields.notifications {
                out += &format!(" notifications {}", at(body, Some(filter)));
            }
        }
        out
    }

    const READ: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#,
        r#" { "id" : "a\"b" , "method" : "tasks/get" , "params" : { "taskId" : "t-1" , "_meta" : null } } "#,
        r#"{"id":null,"method":null,"params":null}"#,
        r#"{"method":"tools/list"}"#,
        r#"{}"#,
        r#"{"id":[1,{"a":2}],"method":"x\u0079","params":{}}"#,
        r#"{"params":{"name":12,"task":{"ttl":5},"cursor":"c","requestId":7,"inputResponses":{"k":{}}}}"#,
        r#"{"params":{"notifications":{"taskIds":["a"]}}}"#,
        r#"{"params":{"notifications":{"taskIds":null}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":1,"io.modelcontextprotocol/tasks":{"x":[1]}}}}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/tasks":null}}}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":false}}}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":[]}}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":"x"}}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol\/tasks":{}}}}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a\u0062":1,"io.modelcontextprotocol/tasks":{}}}}}}"#,
        r#"{"params":{"name":1e400,"x":-0.5e-3,"y":[true,false,null]}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/relatedTaskIds":["a"],"io.modelcontextprotocol/protocolVersion":"v"}}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/relatedTaskIds":null}}}"#,
        r#"{"params":{"name":"x","_meta":{"progressToken":"p-1","io.modelcontextprotocol/relatedTaskIds":[]}}}"#,
        r#"{"params":{"_meta":{"progressToken":7}}}"#,
        r#"{"unknown":{"deep":[[[{"a":"\u00e9"}]]]},"id":2}"#,
    ];

    /// Given up here, so that serde decides.
    const LEFT: &[&str] = &[
        r#"{"id":1,"id":2}"#,
        r#"{"params":{"name":"a","name":"b"}}"#,
        r#"{"\u0069d":1}"#,
        r#"{"params":{"n\u0061me":"x"}}"#,
        r#"{"method":5}"#,
        r#"{"params":["greet"]}"#,
        r#"{"params":5}"#,
        r#"{"params":{"_meta":[]}}"#,
        r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}"#,
        r#"{"id":1} x"#,
        r#"{"id":1,}"#,
        r#"{"id":01}"#,
        r#"{"id":"a	b"}"#,
        r#"{"x":"\q"}"#,
        // A lone surrogate, which serde skips over and the scanner refuses.
        r#"{"x":"\ud800","id":2}"#,
        r#"[1]"#,
        r#"{"id":1"#,
    ];

    #[test]
    fn what_the_pass_reads_serde_reads_the_same() {
        for body in READ {
            let read = envelope(body).unwrap_or_else(|| panic!("the pass gave up on {body}"));
            let serde = Envelope::parse_with(serde_json::Deserializer::from_str(body))
                .unwrap_or_else(|error| panic!("serde refused {body}: {error}"));
            assert_eq!(describe(body, &read), describe(body, &serde), "{body}");
        }
    }

    /// The tasks member as the pass read it with `extensions` (`None`: left
    /// for later), in the body's `_meta.clientCapabilities`.
    fn folded(body: &str) -> Option<(bool, Option<&str>)> {
        let envelope = envelope(body).expect("the pass reads it");
        let meta = envelope.params?.fields.meta?;
        let tasks = meta.capabilities?.tasks?;
        Some((tasks.declared, tasks.value.map(|value| value.get())))
    }

    #[test]
    fn the_tasks_member_is_read_with_the_extensions_unless_a_key_is_escaped() {
        let body = |extensions: &str| {
            format!(
                r#"{{"params":{{"_meta":{{"io.modelcontextprotocol/clientCapabilities":{{"extensions":{extensions}}}}}}}}}"#
            )
        };
        let declared = body(r#"{"a":[1],"io.modelcontextprotocol/tasks":{"x":1}}"#);
        assert_eq!(folded(&declared), Some((true, Some(r#"{"x":1}"#))));
        let twice =
            body(r#"{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/tasks":{}}"#);
        assert_eq!(folded(&twice), Some((true, None)));
        assert_eq!(folded(&body("{}")), Some((false, None)));
        assert_eq!(folded(&body("null")), None);
        assert_eq!(
            folded(&body(r#"{"io.modelcontextprotocol\/tasks":{}}"#)),
            None
        );
    }

    #[test]
    fn the_pass_leaves_duplicates_escaped_keys_and_odd_types_to_serde() {
        for body in LEFT {
            assert!(envelope(body).is_none(), "{body}");
        }
    }

    #[test]
    fn the_tasks_member_is_read_as_serde_reads_it() {
        for (extensions, expected) in [
            (
                r#"{"a":1,"io.modelcontextprotocol/tasks":{}}"#,
                Some((true, Some("{}"))),
            ),
            (
                r#"{"io.modelcontextprotocol/tasks":null}"#,
                Some((false, None)),
            ),
            (
                r#"{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/tasks":{}}"#,
                Some((true, None)),
            ),
            (r#"{}"#, Some((false, None))),
            (r#"{"io.modelcontextprotocol\/tasks":{}}"#, None),
            (r#"[]"#, None),
        ] {
            let member = tasks_member(extensions).map(|m| (m.declared, m.value.map(|v| v.get())));
            assert_eq!(member, expected, "{extensions}");
        }
    }
}
