//! A checking JSON scanner for [`pass`](super::pass): steps through a
//! body, checks every value it steps over, and tells where keys and values
//! lie; it decodes nothing.
//!
//! It accepts a subset of what serde_json accepts and answers `None` on
//! everything else, so that the caller can leave the body to serde:
//!
//! | Text                                          | Here                         |
//! |-----------------------------------------------|------------------------------|
//! | objects, arrays, strings, numbers, literals as RFC 8259 writes them | stepped over, checked |
//! | whitespace other than space, tab, CR and LF   | `None`                       |
//! | a control character in a string, an unknown escape, a short `\u` | `None`    |
//! | a `\u` surrogate escape that is not a high-low pair | `None` (serde_json skips a lone one over in a value it ignores, and refuses it in a string it keeps) |
//! | a number outside the grammar (`01`, `1.`, `.5`, `+1`) | `None`              |
//! | nesting deeper than [`MAX_DEPTH`]             | `None` (serde then reads it)   |
//!
//! Why not a JSON crate: the layer reads every `tools/call` it may park, and
//! jiter, the lightest general reader measured, took about 7,000
//! instructions for the 351 bytes of a typical call, about 2% of what the
//! whole call costs the server (BENCHMARKS.md, issue #11). This scanner
//! does only what the envelope needs. The text is UTF-8 already (the caller
//! checked it as a whole), so a string is checked for its quote, its
//! escapes and its control characters only.

/// Objects and arrays nested deeper than this are left to serde.
pub(super) const MAX_DEPTH: u32 = 100;

/// Whether `byte` ends the plain run of a string: the quote, the
/// backslash or a control character (what [`first_stop`] finds eight at a
/// time).
fn stops(byte: u8) -> bool {
    matches!(byte, b'"' | b'\\' | 0..0x20)
}

/// Where the first byte of `word` (read little-endian) that stops a
/// string's plain run is (a quote, a backslash or a control character), as
/// a bit index (a multiple of 8); 64 when there is none. The classic tests
/// for a zero byte and for a byte below 0x20: a byte past a stopping one
/// may be flagged wrongly, the first flagged byte never is.
fn first_stop(word: u64) -> u32 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    ((below(quote, 1) | below(backslash, 1) | below(word, 0x20)) & HIGHS).trailing_zeros() & !7
}

/// A string's contents: `text[start..end]`, between its quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Str {
    pub start: usize,
    pub end: usize,
    /// Whether it holds an escape (its text is then not its value).
    pub escaped: bool,
}

/// The scanner over one text; `at` is the point.
pub(super) struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

impl<'a> Scan<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
        }
    }

    /// The point, as an index into the text.
    pub(super) fn at(&self) -> usize {
        self.at
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The first byte of the value at the point, after its whitespace
    /// (stepped over); nothing is consumed of the value.
    pub(super) fn peek(&mut self) -> Option<u8> {
        self.whitespace();
        self.bytes.get(self.at).copied()
    }

    /// Consumes `byte` after whitespace.
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Enters the object at the point: its first key, `None` when empty.
    pub(super) fn object_first(&mut self) -> Option<Option<Str>> {
        self.expect(b'{')?;
        self.enter()?;
        if self.peek()? == b'}' {
            self.at += 1;
            self.depth -= 1;
            return Some(None);
        }
        self.key().map(Some)
    }

    /// After a member's value: the object's next key, or `None` at its end
    /// (then left).
    pub(super) fn object_next(&mut self) -> Option<Option<Str>> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                self.key().map(Some)
            }
            b'}' => {
                self.at += 1;
                self.depth -= 1;
                Some(None)
            }
            _ => None,
        }
    }

    /// A key and its colon.
    fn key(&mut self) -> Option<Str> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        self.expect(b':')?;
        Some(key)
    }

    /// The string at the point (its opening quote).
    pub(super) fn string(&mut self) -> Option<Str> {
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            // Eight bytes at a time, then byte by byte near the end.
            while let Some(word) = self.bytes.get(at..at + 8) {
                let word = u64::from_le_bytes(word.try_into().ok()?);
                let stop = first_stop(word);
                at += (stop / 8) as usize;
                if stop < 64 {
                    break;
                }
            }
            while !stops(*self.bytes.get(at)?) {
                at += 1;
            }
            match self.bytes[at] {
                b'"' => {
                    self.at = at + 1;
                    return Some(Str {
                        start,
                        end: at,
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    at = self.escape(at + 1)?;
                }
                _ => return None,
            }
        }
    }

    /// Checks the escape whose letter is at `at`; where the string goes on.
    fn escape(&self, at: usize) -> Option<usize> {
        match self.bytes.get(at)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 1),
            b'u' => match self.hex(at + 1)? {
                0xD800..=0xDBFF => {
                    // A high surrogate counts only with its low half.
                    let next = at + 5;
                    (self.bytes.get(next..next + 2)? == b"\\u").then_some(())?;
                    matches!(self.hex(next + 2)?, 0xDC00..=0xDFFF).then_some(next + 6)
                }
                0xDC00..=0xDFFF => None,
                _ => Some(at + 5),
            },
            _ => None,
        }
    }

    /// The four hex digits at `at`.
    fn hex(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        digits.iter().try_fold(0, |value, digit| {
            Some(value * 16 + char::from(*digit).to_digit(16)?)
        })
    }

    /// Steps over the value at the point, checking it.
    pub(super) fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => {
                let mut key = self.object_first()?;
                while key.is_some() {
                    self.skip()?;
                    key = self.object_next()?;
                }
                Some(())
            }
            b'[' => self.array(),
            b'"' => self.string().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.null(),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn array(&mut self) -> Option<()> {
        self.at += 1;
        self.enter()?;
        if self.peek()? != b']' {
            loop {
                self.skip()?;
                match self.peek()? {
                    b',' => self.at += 1,
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.at += 1;
        self.depth -= 1;
        Some(())
    }

    /// The `null` at the point.
    pub(super) fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.whitespace();
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    fn number(&mut self) -> Option<()> {
        let mut at = self.at;
        if self.bytes[at] == b'-' {
            at += 1;
        }
        match self.bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = self.digits(at),
            _ => return None,
        }
        if self.bytes.get(at) == Some(&b'.') {
            at = self.some_digits(at + 1)?;
        }
        if let Some(b'e' | b'E') = self.bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(at) {
                at += 1;
            }
            at = self.some_digits(at)?;
        }
        self.at = at;
        Some(())
    }

    /// Past the digits from `at` (none or more).
    fn digits(&self, mut at: usize) -> usize {
        while let Some(b'0'..=b'9') = self.bytes.get(at) {
            at += 1;
        }
        at
    }

    /// Past the digits from `at`: at least one.
    fn some_digits(&self, at: usize) -> Option<usize> {
        let end = self.digits(at);
        (end > at).then_some(end)
    }

    /// Whether only whitespace is left.
    pub(super) fn finish(&mut self) -> Option<()> {
        self.whitespace();
        (self.at == self.bytes.len()).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the scanner takes `text` as one JSON value.
    fn takes(text: &str) -> bool {
        let mut scan = Scan::new(text);
        scan.skip().is_some() && scan.finish().is_some()
    }

    fn serde_takes(text: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }

    #[test]
    fn what_the_scanner_takes_serde_json_takes() {
        let taken = [
            r#"{}"#,
            r#" { "a" : [ 1 , -2.5e+3 , 0 , 0.0 , 1E9 , true , false , null ] } "#,
            r#"{"a":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 é"}"#,
            r#"[[[[{"k":[]}]]]]"#,
            "\"plain\"",
            "-0",
            "\t\r\n[]\n",
        ];
        for text in taken {
            assert!(takes(text), "the scanner refused {text}");
            assert!(serde_takes(text), "serde refused {text}");
        }
    }

    #[test]
    fn what_the_scanner_refuses_it_leaves_to_serde() {
        let refused = [
            r#"{"a":1,}"#,
            r#"[1,]"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"01"#,
            r#"1."#,
            r#".5"#,
            r#"+1"#,
            r#"1e"#,
            r#"-"#,
            r#"tru"#,
            r#"nul"#,
            r#""a	b""#,
            r#""\q""#,
            r#""\u12""#,
            r#""\uD800""#,
            r#""\uDC00""#,
            r#""\uD800\u0041""#,
            r#""open"#,
            r#"{"a":1} x"#,
            "\u{c}{}",
            "",
        ];
        for text in refused {
            assert!(!takes(text), "the scanner took {text}");
        }
    }

    #[test]
    fn the_first_stopping_byte_of_a_word_is_found_exactly() {
        // Every byte, at every place, after plain bytes and before any
        // (stopping ones included): the word test agrees with `stops`.
        for position in 0..8 {
            for byte in 0..=u8::MAX {
                for after in [b'a', 0xff, 0x00, b'"'] {
                    let mut word = [b'a'; 8];
                    word[position] = byte;
                    word[position + 1..].fill(after);
                    let found = first_stop(u64::from_le_bytes(word));
                    let expected = match (stops(byte), stops(after) && position < 7) {
                        (true, _) => 8 * position as u32,
                        (false, true) => 8 * (position as u32 + 1),
                        (false, false) => 64,
                    };
                    assert_eq!(found, expected, "{word:?}");
                }
            }
        }
        for plain in [
            *b"        ",
            [0xc3, 0xa9, b'~', 0x7f, 0xff, 0x80, b'!', b'#'],
        ] {
            assert_eq!(first_stop(u64::from_le_bytes(plain)), 64, "{plain:?}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(takes(&nested(MAX_DEPTH as usize)));
        assert!(!takes(&nested(MAX_DEPTH as usize + 1)));
        let objects = |depth: usize| format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        assert!(takes(&objects(MAX_DEPTH as usize)));
        assert!(!takes(&objects(MAX_DEPTH as usize + 1)));
    }

    #[test]
    fn keys_and_strings_are_located_between_their_quotes() {
        let text = r#"{ "plain" : "v", "e\nx" : 1 }"#;
        let mut scan = Scan::new(text);
        let first = scan.object_first().unwrap().unwrap();
        assert_eq!(&text[first.start..first.end], "plain");
        assert!(!first.escaped);
        assert_eq!(scan.peek(), Some(b'"'));
        let value = scan.string().unwrap();
        assert_eq!(&text[value.start..value.end], "v");
        let second = scan.object_next().unwrap().unwrap();
        assert_eq!(&text[second.start..second.end], r"e\nx");
        assert!(second.escaped);
        scan.skip().unwrap();
        assert_eq!(scan.object_next(), Some(None));
        assert_eq!(scan.finish(), Some(()));
    }

    /// Every cut and every one-byte change of some bodies: whatever the
    /// scanner takes, serde_json takes too.
    #[test]
    fn mutated_bodies_the_scanner_takes_serde_json_takes_too() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"n":[1,-2.5e3,true,null]},"_meta":{"v":"\u00e9\n"}}}"#,
            r#"[{"a":"\uD83D\uDE00"},0.5,false,"x\\y"]"#,
        ];
        let replacements = b"{}[],:\"\\ 0123456789.-+eEtrufalsn\tx\x01";
        let mut checked = 0;
        for body in bodies {
            let bytes = body.as_bytes();
            for cut in 0..bytes.len() {
                let variants = std::iter::once(bytes[..cut].to_vec()).chain(
                    replacements.iter().map(|&byte| {
                        let mut changed = bytes.to_vec();
                        changed[cut] = byte;
                        changed
                    }),
                );
                for variant in variants {
                    let Ok(text) = std::str::from_utf8(&variant) else {
                        continue;
                    };
                    if takes(text) {
                        assert!(
                            serde_takes(text),
                            "the scanner took what serde refuses: {text}"
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 5_000, "only {checked} variants");
    }
}
