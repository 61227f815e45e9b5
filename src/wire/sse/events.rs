//! An SSE stream read event by event as the SSE standard reads it (WHATWG
//! HTML, "Interpreting an event stream"): [`Events`].
//!
//! Why not the `sse-stream` crate's reader, which the layer used before:
//! it fails the whole stream on lines the standard reads without fault, and
//! the layer then cut a client's answer that the server without it would
//! have delivered whole (found by `fuzz/`'s `answer` target, where it also
//! depended on how the bytes were cut into frames). The events are still
//! `sse-stream`'s [`Sse`], and a broken body still its `Error::Body`, so
//! every reader of the layer and the gateway changed only its constructor.
//!
//! | The stream has…                                  | `sse-stream` 0.2       | [`Events`] (the standard)         |
//! |--------------------------------------------------|------------------------|-----------------------------------|
//! | a field it does not know (`foo: 1`)              | fails                  | ignored                           |
//! | a line without a colon (`data`)                  | fails                  | the field, with an empty value    |
//! | two `event:` or `id:` lines in one event         | fails                  | the last one counts               |
//! | `retry:` with anything but digits                | fails                  | ignored                           |
//! | bytes that are not UTF-8                         | fails                  | read as U+FFFD                    |
//! | an `id:` with a NUL in it                        | ignored                | ignored                           |
//! | a byte order mark first, lines ended by CR, LF or CR LF, comments | read | read                             |
//!
//! Two things differ from a browser's `EventSource`, as they did with
//! `sse-stream`: an event is handed out at the blank line that ends it when
//! any of its fields was set (so an event of an `id:` alone is one, without
//! data), and its `id` is its own (`None` when it has no `id:` line; the
//! standard's last event id, carried from event to event, is the reader's
//! caller's to keep). An event the stream ends in the middle of is dropped,
//! as the standard says.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use futures_util::Stream;
use http_body::Body;
use sse_stream::{Error, Sse};

/// The byte order mark a stream may start with.
const BOM: &[u8] = b"\xEF\xBB\xBF";

pin_project_lite::pin_project! {
    /// The events of an SSE body, as the standard reads them; the body's
    /// own error ends it as `Error::Body`. Frames other than data
    /// (trailers) are skipped.
    ///
    /// ```
    /// use futures_util::{FutureExt, StreamExt};
    /// use http_body_util::Full;
    /// use mcp_tasks::wire::sse::Events;
    ///
    /// let body = Full::new(bytes::Bytes::from_static(b"event: a\nfoo: ignored\ndata: 1\ndata\n\n"));
    /// let mut events = Events::new(body);
    /// let event = events.next().now_or_never().flatten().unwrap().unwrap();
    /// assert_eq!(event.event.as_deref(), Some("a"));
    /// assert_eq!(event.data.as_deref(), Some("1\n"));
    /// ```
    pub struct Events<B> {
        #[pin]
        body: B,
        lines: Lines,
        ended: bool,
    }
}

impl<B> Events<B> {
    /// Reads `body` from its start.
    pub fn new(body: B) -> Self {
        Self {
            body,
            lines: Lines::default(),
            ended: false,
        }
    }
}

impl<B> Stream for Events<B>
where
    B: Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<Sse, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if let Some(event) = this.lines.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if *this.ended {
                return Poll::Ready(None);
            }
            match ready!(this.body.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Ok(mut data) = frame.into_data() {
                        // Every piece of a buffer that is not one slice.
                        while data.has_remaining() {
                            let piece = data.chunk();
                            let length = piece.len();
                            this.lines.feed(piece);
                            data.advance(length);
                        }
                    }
                }
                Some(Err(error)) => {
                    *this.ended = true;
                    return Poll::Ready(Some(Err(Error::Body(Box::new(error)))));
                }
                None => *this.ended = true,
            }
        }
    }
}

/// The reader's state between frames.
#[derive(Default)]
struct Lines {
    /// A line not yet ended.
    partial: Vec<u8>,
    /// The last frame ended in CR: a LF first in the next one ends nothing.
    after_cr: bool,
    /// Past the first line (a BOM counts only before it).
    begun: bool,
    /// The event being read; `None` until a field of it is set.
    event: Option<Sse>,
    ready: VecDeque<Sse>,
}

impl Lines {
    fn feed(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if std::mem::take(&mut self.after_cr)
            && let Some(rest) = bytes.strip_prefix(b"\n")
        {
            bytes = rest;
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.partial.is_empty() {
                self.line(&bytes[..end]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&bytes[..end]);
                self.line(&line);
                line.clear();
                self.partial = line;
            }
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.partial.extend_from_slice(bytes);
    }

    /// One line, without its end.
    fn line(&mut self, mut line: &[u8]) {
        if !std::mem::replace(&mut self.begun, true) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.ready.extend(self.event.take());
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(0) => return,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let text = || String::from_utf8_lossy(value).into_owned();
        match name {
            b"data" => {
                let event = self.event.get_or_insert_default();
                match &mut event.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&String::from_utf8_lossy(value));
                    }
                    None => event.data = Some(text()),
                }
            }
            b"event" => self.event.get_or_insert_default().event = Some(text()),
            b"id" if !value.contains(&0) => self.event.get_or_insert_default().id = Some(text()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(retry) = std::str::from_utf8(value).unwrap_or_default().parse() {
                    self.event.get_or_insert_default().retry = Some(retry);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    /// The events of `text`, fed in pieces cut at `cuts`.
    fn read(pieces: &[&[u8]]) -> Vec<Sse> {
        let mut lines = Lines::default();
        for piece in pieces {
            lines.feed(piece);
        }
        lines.ready.into_iter().collect()
    }

    fn event(event: Option<&str>, data: Option<&str>, id: Option<&str>) -> Sse {
        Sse {
            event: event.map(str::to_owned),
            data: data.map(str::to_owned),
            id: id.map(str::to_owned),
            retry: None,
        }
    }

    #[test]
    fn what_sse_stream_refused_is_read_as_the_standard_reads_it() {
        let text = b"foo: bar\ndata\ndata: 1\nevent: a\nevent: b\nid: 1\nid: 2\nretry: x\n\n";
        assert_eq!(
            read(&[text]),
            vec![event(Some("b"), Some("\n1"), Some("2"))]
        );
        let odd = b"data: \xff\xfe ok\nid: a\0b\n\n";
        assert_eq!(
            read(&[odd]),
            vec![event(None, Some("\u{fffd}\u{fffd} ok"), None)]
        );
    }

    #[test]
    fn lines_end_at_cr_lf_or_both_and_a_bom_first_is_skipped() {
        let text = b"\xEF\xBB\xBFdata: a\r\ndata: b\rdata: c\n\r: comment\nid: 7\nretry: 30\n\n";
        let mut expected = event(None, None, Some("7"));
        expected.retry = Some(30);
        assert_eq!(
            read(&[text]),
            vec![event(None, Some("a\nb\nc"), None), expected]
        );
    }

    #[test]
    fn an_event_needs_a_field_and_a_blank_line() {
        assert_eq!(read(&[b": only a comment\n\n\n\ndata: cut off"]), vec![]);
        assert_eq!(read(&[b"unknown: 1\n\n"]), vec![]);
        assert_eq!(read(&[b"data:\n\n"]), vec![event(None, Some(""), None)]);
    }

    /// A frame whose data is not one slice is read whole.
    #[test]
    fn a_buffer_in_several_slices_is_read_whole() {
        use futures_util::{FutureExt, StreamExt};
        let data = Bytes::from_static(b"data: a").chain(Bytes::from_static(b"b\n\n"));
        let frames = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
            http_body::Frame::data(data),
        )]);
        let mut events = Events::new(http_body_util::StreamBody::new(frames));
        let event = events.next().now_or_never().flatten().unwrap().unwrap();
        assert_eq!(event.data.as_deref(), Some("ab"));
    }

    /// Every way of cutting some streams in two or three reads the same.
    #[test]
    fn where_the_frames_are_cut_changes_nothing() {
        let texts: [&[u8]; 3] = [
            b"\xEF\xBB\xBFevent: m\r\ndata: {\"a\":1}\r\n\r\nid: 2\rdata: x\r\rdata: \xc3\xa9\n\n",
            b"data: 1\n\ndata: 2\r\n\r\n: c\r\r",
            b"id\nretry: 5\nfoo\ndata: \xe2\x82\xac\n\n",
        ];
        for text in texts {
            let whole = read(&[text]);
            for i in 0..=text.len() {
                for j in i..=text.len() {
                    let cut = read(&[&text[..i], &text[i..j], &text[j..]]);
                    assert_eq!(cut, whole, "cut at {i} and {j}");
                }
            }
        }
    }
}
