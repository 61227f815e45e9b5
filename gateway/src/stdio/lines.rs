//! What the child writes, one line at a time, each bounded.
//!
//! `tokio_util`'s `LinesCodec` bounds a line but forgets all of one that is
//! too long; the bridge must still tell which call such a line answered,
//! or that call would wait forever. This codec keeps the first and the last
//! [`END`] bytes of a line over the limit (an id is near one end: Python
//! servers write it first, TypeScript ones last) and drops the rest as it
//! arrives, so it never holds more than the limit.

use bytes::{Buf, BytesMut};
use futures_util::StreamExt;
use tokio::io::AsyncRead;
use tokio::process::ChildStdout;
use tokio_util::codec::{Decoder, FramedRead};

/// How many bytes of each end of a line over the limit are kept.
pub(super) const END: usize = 256;

/// One read from an output of the child.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// A whole line.
    Text(String),
    /// A line longer than the limit, skipped: its first and last bytes.
    TooLong { head: Vec<u8>, tail: Vec<u8> },
    /// A line that is not UTF-8: skipped.
    NotText,
    /// The output broke or closed: nothing more comes.
    End(Option<String>),
}

/// The lines of an output of the child.
pub(super) struct Lines<R = ChildStdout> {
    framed: FramedRead<R, Bounded>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(super) fn new(output: R, max_line_bytes: usize) -> Self {
        Self {
            framed: FramedRead::new(output, Bounded::new(max_line_bytes)),
        }
    }

    pub(super) async fn next(&mut self) -> Line {
        match self.framed.next().await {
            Some(Ok(line)) => line,
            Some(Err(error)) => Line::End(Some(error.to_string())),
            None => Line::End(None),
        }
    }
}

/// The end of a line over the limit that is being dropped.
struct Dropping {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Dropping {
    /// Keeps the last [`END`] bytes of what was dropped so far and `more`.
    fn push(&mut self, more: &[u8]) {
        self.tail
            .extend_from_slice(&more[more.len().saturating_sub(END)..]);
        let extra = self.tail.len().saturating_sub(END);
        self.tail.drain(..extra);
    }
}

/// Newline-delimited lines of at most `max` bytes (the newline, and a
/// carriage return before it, not counted).
struct Bounded {
    max: usize,
    /// How far the buffer was searched for a newline.
    searched: usize,
    dropping: Option<Dropping>,
}

impl Bounded {
    fn new(max: usize) -> Self {
        Self {
            max,
            searched: 0,
            dropping: None,
        }
    }

    fn line(&self, mut line: BytesMut) -> Line {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max {
            let head = line[..END.min(line.len())].to_vec();
            let tail = line[line.len().saturating_sub(END)..].to_vec();
            return Line::TooLong { head, tail };
        }
        match String::from_utf8(line.to_vec()) {
            Ok(text) => Line::Text(text),
            Err(_) => Line::NotText,
        }
    }
}

impl Decoder for Bounded {
    type Item = Line;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        let newline = buf[self.searched..]
            .iter()
            .position(|byte| *byte == b'\n')
            .map(|at| at + self.searched);
        match (self.dropping.as_mut(), newline) {
            (Some(dropping), Some(at)) => {
                dropping.push(&buf[..at]);
                buf.advance(at + 1);
                self.searched = 0;
                let Dropping { head, tail } = self.dropping.take().expect("dropping");
                Ok(Some(Line::TooLong { head, tail }))
            }
            (Some(dropping), None) => {
                dropping.push(buf);
                buf.clear();
                self.searched = 0;
                Ok(None)
            }
            (None, Some(at)) => {
                let mut line = buf.split_to(at + 1);
                line.truncate(at);
                self.searched = 0;
                Ok(Some(self.line(line)))
            }
            // One more byte than the limit may be the carriage return of a
            // line exactly at it.
            (None, None) if buf.len() > self.max + 1 => {
                let mut dropping = Dropping {
                    head: buf[..END.min(buf.len())].to_vec(),
                    tail: Vec::new(),
                };
                dropping.push(buf);
                buf.clear();
                self.searched = 0;
                self.dropping = Some(dropping);
                Ok(None)
            }
            (None, None) => {
                self.searched = buf.len();
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        // The last line, without its newline.
        if let Some(Dropping { head, tail }) = self.dropping.take() {
            return Ok(Some(Line::TooLong { head, tail }));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let line = buf.split();
        self.searched = 0;
        Ok(Some(self.line(line)))
    }
}

/// The ids the bridge gave (numbers) that `text`, an end of a line,
/// holds as `"id":N`.
pub(super) fn ids_in(text: &[u8]) -> Vec<u64> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = find(rest, b"\"id\"") {
        rest = &rest[at + 4..];
        let after = rest
            .iter()
            .position(|byte| !byte.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let Some(b':') = rest.get(after) else {
            continue;
        };
        let value = &rest[after + 1..];
        let start = value
            .iter()
            .position(|byte| !byte.is_ascii_whitespace())
            .unwrap_or(value.len());
        let digits: Vec<u8> = value[start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .copied()
            .collect();
        if let Some(id) = std::str::from_utf8(&digits)
            .ok()
            .and_then(|digits| digits.parse().ok())
        {
            found.push(id);
        }
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(max: usize, chunks: &[&[u8]]) -> Vec<Line> {
        let mut codec = Bounded::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(line) = codec.decode(&mut buf).unwrap() {
                out.push(line);
            }
        }
        while let Some(line) = codec.decode_eof(&mut buf).unwrap() {
            out.push(line);
        }
        out
    }

    #[test]
    fn lines_within_the_limit_come_whole_and_a_last_one_without_newline_too() {
        let lines = decode_all(8, &[b"one\r\ntw", b"o\n", b"12345678\nend"]);
        let text = |text: &str| Line::Text(text.to_owned());
        assert_eq!(
            lines,
            [text("one"), text("two"), text("12345678"), text("end")]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_dropped_as_it_comes_but_its_ends_are_kept() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","result":{{"text":"{}"}},"id":42}}"#,
            "x".repeat(5_000)
        );
        let bytes = long.as_bytes();
        let mut chunks: Vec<&[u8]> = bytes.chunks(700).collect();
        chunks.push(b"\nnext\n");
        let mut codec = Bounded::new(1024);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in &chunks {
            buf.extend_from_slice(chunk);
            while let Some(line) = codec.decode(&mut buf).unwrap() {
                out.push(line);
            }
            assert!(
                buf.len() <= 1024 + 700,
                "never holds much more than the limit"
            );
        }
        let Line::TooLong { head, tail } = &out[0] else {
            panic!("{:?}", out[0]);
        };
        assert_eq!(head.as_slice(), &bytes[..END]);
        assert_eq!(tail.as_slice(), &bytes[bytes.len() - END..]);
        assert_eq!(ids_in(tail), [42]);
        assert_eq!(out[1], Line::Text("next".into()));
    }

    #[test]
    fn a_line_that_is_not_utf8_is_skipped_and_reading_goes_on() {
        let lines = decode_all(64, &[b"\xff\xfe\nok\n"]);
        assert_eq!(lines, [Line::NotText, Line::Text("ok".into())]);
    }

    #[test]
    fn ids_are_found_by_their_member_name() {
        assert_eq!(ids_in(br#"{"jsonrpc":"2.0","id" : 7,"result""#), [7]);
        assert_eq!(ids_in(br#"..."id":"text","x":1}"#), Vec::<u64>::new());
        assert_eq!(ids_in(br#"no id here"#), Vec::<u64>::new());
    }
}
