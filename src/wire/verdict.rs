//! Whether the answer to a `tools/call` failed, read from its bytes as they
//! pass to the client, for the call observer
//! ([`observe::calls`](crate::observe::calls)). Nothing is buffered or
//! decoded: a small state machine follows the JSON structure (and, on an
//! SSE answer, the `data` lines of each event) and looks at three member
//! names only.
//!
//! | The answer holds…                                               | [`Verdict`]            |
//! |-----------------------------------------------------------------|------------------------|
//! | a top-level `error` member (other than `null`)                  | answered, failed       |
//! | a top-level `result` object whose own `isError` is `true`       | answered, failed       |
//! | a top-level `result` otherwise (`input_required` included)      | answered               |
//! | neither: not JSON-RPC, or a stream that ended without a response | not answered          |
//!
//! | Why this shape                         |                                                     |
//! |----------------------------------------|-----------------------------------------------------|
//! | its state kept across frames           | a JSON body streams through unbuffered; any frame may end mid-name |
//! | depth and containers, not substrings   | `"isError":true` may sit in `structuredContent`, `"error"` in a tool's text: neither is the call's |
//! | a string read to its end in one search; a value below the result skipped to the next string or bracket; only a member's name at depth 1 or in the result kept, 8 bytes at most, compared as one number | a result is mostly string content and nesting the verdict does not look into (about 1.5 ns a byte for a 100-byte answer, a few hundredths for long text) |
//! | names matched as written               | writers do not escape `error`, `result`, `isError`; a name with a `\u` escape is not recognized |
//! | SSE: only `data` lines, reset per event | notifications and the server's requests carry `method`/`params`, never a top-level `result` or `error`; a broken event cannot leak into the next |
//!
//! A parked call's result is read whole when its task records it; there
//! [`is_error_result`] reads the same `isError`.

use serde_json::value::RawValue;

/// Whether a tool's result, read whole (a parked call's, as its task
/// records it), says `"isError": true`.
pub(crate) fn is_error_result(result: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(rename = "isError")]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Head>(result.get()).is_ok_and(|head| head.is_error == Some(true))
}

/// How an answer is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// One JSON-RPC message, the whole body.
    Json,
    /// A `text/event-stream`: one message per event, in its `data` lines.
    Sse,
}

/// What the bytes fed so far say about the call.
#[derive(Debug)]
pub(crate) struct Verdict {
    json: Json,
    /// Where an SSE answer's reader stands; `None` for a JSON body.
    sse: Option<Lines>,
    flags: Flags,
}

#[derive(Clone, Copy, Debug, Default)]
struct Flags {
    answered: bool,
    failed: bool,
}

impl Verdict {
    /// A verdict on an answer framed as `format`, before any byte.
    pub(crate) fn new(format: Format) -> Self {
        Self {
            json: Json::default(),
            sse: (format == Format::Sse).then(Lines::default),
            flags: Flags::default(),
        }
    }

    /// Reads the next bytes of the answer.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        match &mut self.sse {
            Some(lines) => lines.feed(bytes, &mut self.json, &mut self.flags),
            None => self.json.feed(bytes, &mut self.flags),
        }
    }

    /// Whether a response (a top-level `result` or `error`) was seen.
    pub(crate) fn answered(&self) -> bool {
        self.flags.answered
    }

    /// Whether the response says the call failed.
    pub(crate) fn failed(&self) -> bool {
        self.flags.failed
    }
}

/// A member name the verdict looks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Name {
    Error,
    Result,
    IsError,
    #[default]
    Other,
}

/// The longest name looked for, `isError`, fits.
const WORD: usize = 8;

/// A string being read.
#[derive(Debug, Default)]
struct Str {
    /// The byte after a backslash comes next.
    escaped: bool,
    /// Whether it may be a name looked for: a member's name at depth 1, or
    /// in the result, not yet longer than any such name nor escaped.
    capture: bool,
    word: [u8; WORD],
    len: usize,
}

impl Str {
    /// More of the string's text, without quote or backslash.
    fn take(&mut self, piece: &[u8]) {
        if self.capture {
            match self.word.get_mut(self.len..self.len + piece.len()) {
                Some(slot) => slot.copy_from_slice(piece),
                // Longer than any name looked for.
                None => self.capture = false,
            }
        }
        self.len += piece.len();
    }

    fn name(&self) -> Name {
        // The word as one number (the bytes past `len` are zeros): three
        // comparisons of a register, not three of memory.
        const fn word(name: &[u8]) -> u64 {
            let mut bytes = [0; WORD];
            let mut at = 0;
            while at < name.len() {
                bytes[at] = name[at];
                at += 1;
            }
            u64::from_le_bytes(bytes)
        }
        const ERROR: u64 = word(b"error");
        const RESULT: u64 = word(b"result");
        const IS_ERROR: u64 = word(b"isError");
        if !self.capture {
            return Name::Other;
        }
        match u64::from_le_bytes(self.word) {
            ERROR => Name::Error,
            RESULT => Name::Result,
            IS_ERROR => Name::IsError,
            _ => Name::Other,
        }
    }
}

/// The JSON structure read so far: only depths 1 (the message) and 2 (the
/// `result` object) matter.
#[derive(Debug, Default)]
struct Json {
    depth: u32,
    /// The message (depth 1) is an object.
    message: bool,
    /// The container at depth 2 is the message's `result` object.
    in_result: bool,
    /// The next container opened is the `result` object.
    result_opens: bool,
    /// A member's name may come next (after `{` or `,`).
    key: bool,
    string: Option<Str>,
    /// The last name read where a name looked for may be.
    last: Name,
    /// The member whose value comes next (a `:` followed `last`).
    value_of: Name,
}

impl Json {
    fn feed(&mut self, bytes: &[u8], flags: &mut Flags) {
        let mut at = 0;
        while at < bytes.len() {
            if self.string.is_some() {
                at = self.string_run(bytes, at);
                continue;
            }
            if !self.watched() {
                // Deep in a value: only strings and nesting count here.
                let stop = bytes[at..]
                    .iter()
                    .position(|byte| matches!(byte, b'"' | b'{' | b'}' | b'[' | b']'));
                match stop {
                    Some(skip) => at += skip,
                    None => return,
                }
            }
            let byte = bytes[at];
            at += 1;
            match byte {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b':' => {
                    self.value_of = self.last;
                    self.last = Name::Other;
                    self.key = false;
                }
                b',' => self.between(),
                b'"' => {
                    let capture = self.key && self.watched();
                    self.value(byte, flags);
                    self.string = Some(Str {
                        capture,
                        ..Str::default()
                    });
                }
                b'{' | b'[' => {
                    self.value(byte, flags);
                    self.depth = self.depth.saturating_add(1);
                    self.key = byte == b'{';
                    match self.depth {
                        1 => self.message = byte == b'{',
                        2 => self.in_result = std::mem::take(&mut self.result_opens),
                        _ => {}
                    }
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth < 2 {
                        self.in_result = false;
                    }
                    self.between();
                    self.key = false;
                }
                _ => self.value(byte, flags),
            }
        }
    }

    /// Whether a name looked for may be read at this depth: in the message
    /// object, or in its result object.
    fn watched(&self) -> bool {
        match self.depth {
            0 => true,
            1 => self.message,
            2 => self.in_result,
            _ => false,
        }
    }

    /// Reads the open string from `at` to its closing quote or the end of
    /// `bytes`; where reading goes on.
    fn string_run(&mut self, bytes: &[u8], mut at: usize) -> usize {
        let Some(string) = &mut self.string else {
            return at;
        };
        while at < bytes.len() {
            if std::mem::take(&mut string.escaped) {
                at += 1;
                continue;
            }
            let Some(stop) = string_stop(&bytes[at..]) else {
                string.take(&bytes[at..]);
                return bytes.len();
            };
            string.take(&bytes[at..at + stop]);
            at += stop + 1;
            if bytes[at - 1] == b'\\' {
                // An escaped name is not one looked for.
                string.escaped = true;
                string.capture = false;
                continue;
            }
            self.last = string.name();
            self.string = None;
            return at;
        }
        at
    }

    /// Past a member or an element: a name may come next, none is pending.
    fn between(&mut self) {
        self.last = Name::Other;
        self.value_of = Name::Other;
        self.key = true;
    }

    /// A value starts with `byte`: the value of `value_of`, if a name led
    /// to it.
    fn value(&mut self, byte: u8, flags: &mut Flags) {
        let of = std::mem::take(&mut self.value_of);
        self.last = Name::Other;
        self.key = false;
        match (self.depth, of) {
            (1, Name::Error) if self.message && byte != b'n' => {
                flags.answered = true;
                flags.failed = true;
            }
            (1, Name::Result) if self.message => {
                flags.answered = true;
                self.result_opens = byte == b'{';
            }
            (2, Name::IsError) if self.in_result && byte == b't' => flags.failed = true,
            _ => {}
        }
    }
}

/// Where the first quote or backslash of `text` is: a plain look at the
/// first bytes (most names and short values end there; `memchr`'s setup
/// would cost them more), then `memchr` for the rest of a long string.
fn string_stop(text: &[u8]) -> Option<usize> {
    const PLAIN: usize = 16;
    let head = &text[..text.len().min(PLAIN)];
    match head.iter().position(|byte| matches!(byte, b'"' | b'\\')) {
        Some(stop) => Some(stop),
        None if text.len() <= PLAIN => None,
        None => memchr::memchr2(b'"', b'\\', &text[PLAIN..]).map(|stop| stop + PLAIN),
    }
}

/// Where an SSE reader stands in its line.
#[derive(Debug, Default)]
enum Line {
    /// At the start of a line.
    #[default]
    Start,
    /// In a field's name (up to the length of `data`).
    Field { name: [u8; 4], len: usize },
    /// In a `data` line's value; `first`: before its first byte (a space
    /// there is not part of it).
    Data { first: bool },
    /// In a line that carries no data (a comment, another field).
    Skip,
}

/// An SSE answer's reader: the `data` of each event goes to [`Json`], which
/// starts afresh at each event.
#[derive(Debug, Default)]
struct Lines {
    line: Line,
    /// The last line ended with a CR (a LF right after it ends no line).
    after_cr: bool,
}

impl Lines {
    fn feed(&mut self, bytes: &[u8], json: &mut Json, flags: &mut Flags) {
        let mut at = 0;
        while at < bytes.len() {
            match &mut self.line {
                Line::Data { first } => {
                    let end = line_end(bytes, at);
                    let mut value = &bytes[at..end];
                    if *first && !value.is_empty() {
                        *first = false;
                        value = value.strip_prefix(b" ").unwrap_or(value);
                    }
                    json.feed(value, flags);
                    at = end;
                }
                Line::Skip => at = line_end(bytes, at),
                Line::Start | Line::Field { .. } => {
                    let byte = bytes[at];
                    if byte == b'\n' && std::mem::take(&mut self.after_cr) {
                        at += 1;
                        continue;
                    }
                    self.after_cr = false;
                    // A line end is handled below, with every other.
                    if byte != b'\n' && byte != b'\r' {
                        self.name(byte);
                        at += 1;
                        continue;
                    }
                }
            }
            let Some(&end) = bytes.get(at) else {
                return;
            };
            self.end_line(json, flags);
            self.after_cr = end == b'\r';
            at += 1;
        }
    }

    /// One more byte of a line before its value.
    fn name(&mut self, byte: u8) {
        self.line = match std::mem::take(&mut self.line) {
            Line::Start if byte == b':' => Line::Skip,
            Line::Start => Line::Field {
                name: [byte, 0, 0, 0],
                len: 1,
            },
            Line::Field { name, len } if byte == b':' => {
                if is_data(&name, len) {
                    Line::Data { first: true }
                } else {
                    Line::Skip
                }
            }
            Line::Field { mut name, len } => {
                if let Some(slot) = name.get_mut(len) {
                    *slot = byte;
                }
                Line::Field { name, len: len + 1 }
            }
            other => other,
        };
    }

    /// A line ended: a blank one ends the event.
    fn end_line(&mut self, json: &mut Json, flags: &mut Flags) {
        match std::mem::take(&mut self.line) {
            Line::Start => *json = Json::default(),
            // Lines of one event's data join with a line feed.
            Line::Data { .. } => json.feed(b"\n", flags),
            Line::Field { name, len } if is_data(&name, len) => json.feed(b"\n", flags),
            Line::Field { .. } | Line::Skip => {}
        }
    }
}

fn is_data(name: &[u8; 4], len: usize) -> bool {
    len == 4 && name == b"data"
}

/// Where the line that `at` is in ends in `bytes` (its CR or LF), or the
/// end of `bytes`.
fn line_end(bytes: &[u8], at: usize) -> usize {
    memchr::memchr2(b'\n', b'\r', &bytes[at..]).map_or(bytes.len(), |end| at + end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(answered, failed)` for `text` fed whole, and fed split at every
    /// point, byte by byte: all must agree.
    fn read(format: Format, text: &str) -> (bool, bool) {
        let bytes = text.as_bytes();
        let whole = {
            let mut verdict = Verdict::new(format);
            verdict.feed(bytes);
            (verdict.answered(), verdict.failed())
        };
        for split in 0..=bytes.len() {
            let mut verdict = Verdict::new(format);
            verdict.feed(&bytes[..split]);
            verdict.feed(&bytes[split..]);
            assert_eq!((verdict.answered(), verdict.failed()), whole, "{split}");
        }
        let mut verdict = Verdict::new(format);
        for byte in bytes {
            verdict.feed(std::slice::from_ref(byte));
        }
        assert_eq!(
            (verdict.answered(), verdict.failed()),
            whole,
            "byte by byte"
        );
        whole
    }

    const OK: (bool, bool) = (true, false);
    const FAILED: (bool, bool) = (true, true);
    const NO_ANSWER: (bool, bool) = (false, false);

    #[test]
    fn a_json_answer_fails_by_its_error_or_its_results_own_is_error() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, OK),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}"#,
                OK,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#,
                FAILED,
            ),
            (
                r#" { "id" : 1 , "result" : { "isError" : true } } "#,
                FAILED,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such tool"}}"#,
                FAILED,
            ),
            // JSON-RPC 1.0 writers send a null error beside the result.
            (r#"{"id":1,"result":{"content":[]},"error":null}"#, OK),
            (
                r#"{"id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#,
                OK,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(read(Format::Json, text), expected, "{text}");
        }
    }

    #[test]
    fn names_elsewhere_do_not_count() {
        let cases = [
            // In structured content, an item, the text, an id, a key's tail.
            r#"{"id":1,"result":{"structuredContent":{"isError":true,"error":1},"content":[{"isError":true}]}}"#,
            r#"{"id":1,"result":{"content":[{"type":"text","text":"\"error\":{\"isError\":true}"}]}}"#,
            r#"{"id":"error","result":{"content":[],"is_error":true,"isErrors":true}}"#,
            r#"{"id":1,"result":{"content":[],"isError":"true"}}"#,
            // An escaped name is not recognized.
            r#"{"id":1,"result":{"content":[],"is\u0045rror":true}}"#,
            // Values, not names; names below the result; longer names.
            r#"{"id":1,"result":{"content":["error","isError"],"resultType":"isError"}}"#,
            r#"{"id":1,"meta":{"a":{"isError":true}},"result":{"x":{"isError":true}}}"#,
            r#"{"id":1,"errors":[1],"result":{"isErrorToo":true,"content":[]}}"#,
        ];
        for text in cases {
            assert_eq!(read(Format::Json, text), OK, "{text}");
        }
        let not_answers = [
            "",
            "not json at all",
            r#"[{"id":1,"result":{}}]"#,
            r#"{"id":1,"params":{"result":{},"error":{}}}"#,
            r#"{"id":1,"resultx":{}}"#,
        ];
        for text in not_answers {
            assert_eq!(read(Format::Json, text), NO_ANSWER, "{text}");
        }
    }

    #[test]
    fn an_sse_answer_is_read_by_its_data_lines_event_by_event() {
        let progress = "event: message\ndata: {\"method\":\"notifications/progress\",\"params\":{\"error\":1,\"result\":{\"isError\":true}}}\n\n";
        let cases = [
            (
                format!("{progress}data: {{\"id\":1,\"result\":{{\"content\":[]}}}}\n\n"),
                OK,
            ),
            (
                format!(
                    "{progress}id: 7\r\ndata: {{\"id\":1,\r\ndata:\"result\":{{\"isError\":true}}}}\r\n\r\n"
                ),
                FAILED,
            ),
            (
                ": keep-alive\r\r\ndata: {\"id\":1,\"error\":{\"code\":-32603}}\r\r".to_owned(),
                FAILED,
            ),
            // A priming event, then the response in two data lines.
            (
                "id: 0\nretry: 500\ndata\n\ndata: {\"id\":1,\ndata: \"result\":{}}\n\n".to_owned(),
                OK,
            ),
            (progress.to_owned(), NO_ANSWER),
            // Names in comments and other fields are no data.
            (
                ": {\"result\":{}}\nevent: {\"error\":1}\ndatum: {\"error\":1}\n\n".to_owned(),
                NO_ANSWER,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(read(Format::Sse, &text), expected, "{text:?}");
        }
    }

    #[test]
    fn a_whole_result_is_an_error_by_its_own_is_error() {
        let read = |text: &str| is_error_result(&RawValue::from_string(text.to_owned()).unwrap());
        assert!(read(r#"{"content":[],"isError":true}"#));
        assert!(!read(r#"{"content":[],"isError":false}"#));
        assert!(!read(r#"{"structuredContent":{"isError":true}}"#));
        assert!(!read(r#"{"isError":"true"}"#));
        assert!(!read("[]"));
    }

    #[test]
    fn a_broken_event_does_not_leak_into_the_next() {
        let text = "data: {\"x\":\"unterminated\n\ndata: {\"id\":1,\"result\":{}}\n\n";
        assert_eq!(read(Format::Sse, text), OK);
        let text = "data: {\"a\":{\"b\":[\n\ndata: {\"id\":1,\"error\":{}}\n\n";
        assert_eq!(read(Format::Sse, text), FAILED);
    }
}
