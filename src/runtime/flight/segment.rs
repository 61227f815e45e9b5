//! Cutting an SSE byte stream at event boundaries.
//!
//! The layer relays a live SSE answer event by event, and only once it knows
//! what an event is (a request of the inner server must not reach the client
//! of a call that will be parked). For that the bytes handed to the parser
//! are cut so that each piece ends at most at the end of one event: when the
//! parser yields an event, every byte read so far belongs to it or to the
//! events before it.
//!
//! An event ends with a blank line: a line terminator (`\r\n`, `\n` or `\r`)
//! right after another one. A `\r` at the end of a chunk may be the first
//! half of `\r\n`; the cut is then made after the `\r`, and the parser skips
//! the `\n` that starts the next piece, as the SSE rules require.

use bytes::Bytes;

/// Where the scan stands between two bytes.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Segmenter {
    /// The last byte ended a line (so a terminator now ends an event).
    line_start: bool,
    /// The last byte was `\r`: a `\n` now completes the same terminator.
    after_cr: bool,
    /// That `\r` ended an event: the cut falls after it, or after its `\n`.
    cut_pending: bool,
}

impl Segmenter {
    /// The length of the first piece of `bytes` that ends an event, or
    /// `None` if `bytes` holds no event end. The state moves past the bytes
    /// of that piece (or all of them).
    pub(crate) fn event_end(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut at = 0;
        while let Some(&byte) = bytes.get(at) {
            match byte {
                b'\n' if self.after_cr => {
                    self.after_cr = false;
                    if std::mem::take(&mut self.cut_pending) {
                        return Some(at + 1);
                    }
                }
                b'\n' => {
                    if self.line_start {
                        return Some(at + 1);
                    }
                    self.line_start = true;
                }
                b'\r' => {
                    if std::mem::take(&mut self.cut_pending) {
                        // `\r\r` after a blank `\r`: the event ended before this.
                        self.after_cr = false;
                        return Some(at);
                    }
                    self.cut_pending = self.line_start;
                    self.line_start = true;
                    self.after_cr = true;
                }
                _ => {
                    if std::mem::take(&mut self.cut_pending) {
                        self.after_cr = false;
                        return Some(at);
                    }
                    self.after_cr = false;
                    self.line_start = false;
                    // The rest of the line changes nothing: jump to its end.
                    let rest = &bytes[at + 1..];
                    at += 1 + memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
                    continue;
                }
            }
            at += 1;
        }
        if self.cut_pending {
            // A blank `\r` at the end: cut here; a `\n` that follows belongs
            // to it and is skipped by the parser.
            self.cut_pending = false;
            return Some(bytes.len());
        }
        None
    }

    /// The next piece to hand on from `rest`, and whether it ends an event:
    /// up to the first event end, or all of it. `None` when `rest` is empty.
    pub(crate) fn next_piece(&mut self, rest: &mut Bytes) -> Option<(Bytes, bool)> {
        if rest.is_empty() {
            return None;
        }
        match self.event_end(rest) {
            Some(end) => Some((rest.split_to(end), true)),
            None => Some((std::mem::take(rest), false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cuts `chunks` (as they arrive) into pieces.
    fn pieces(chunks: &[&str]) -> Vec<String> {
        let mut segmenter = Segmenter::default();
        let mut out = Vec::new();
        for chunk in chunks {
            let mut rest = Bytes::copy_from_slice(chunk.as_bytes());
            while let Some((piece, _)) = segmenter.next_piece(&mut rest) {
                out.push(String::from_utf8(piece.to_vec()).unwrap());
            }
        }
        out
    }

    #[test]
    fn cuts_after_each_blank_line_with_lf() {
        assert_eq!(
            pieces(&["data: a\n\ndata: b\n\ndata: c"]),
            ["data: a\n\n", "data: b\n\n", "data: c"]
        );
    }

    #[test]
    fn cuts_after_crlf_blank_lines() {
        assert_eq!(
            pieces(&["id: 1\r\ndata: a\r\n\r\ndata: b\r\n\r\n"]),
            ["id: 1\r\ndata: a\r\n\r\n", "data: b\r\n\r\n"]
        );
    }

    #[test]
    fn cuts_after_cr_only_blank_lines() {
        assert_eq!(
            pieces(&["data: a\r\rdata: b\r\r"]),
            ["data: a\r\r", "data: b\r\r"]
        );
    }

    #[test]
    fn a_single_line_end_is_not_an_event_end() {
        assert_eq!(
            pieces(&["data: a\n", "data: b\r\n", "more"]),
            ["data: a\n", "data: b\r\n", "more"]
        );
    }

    #[test]
    fn an_event_end_split_across_chunks_is_found() {
        assert_eq!(
            pieces(&["data: a\n", "\ndata: b\r\n\r", "\ndata: c\n", "\n"]),
            ["data: a\n", "\n", "data: b\r\n\r", "\ndata: c\n", "\n"]
        );
    }

    #[test]
    fn mixed_terminators_end_an_event() {
        assert_eq!(
            pieces(&["data: a\r\n\ndata: b\n\r\ndata: c\r\n\r"]),
            ["data: a\r\n\n", "data: b\n\r\n", "data: c\r\n\r"]
        );
    }

    #[test]
    fn a_piece_says_whether_it_ends_an_event() {
        let mut segmenter = Segmenter::default();
        let mut rest = Bytes::from_static(b"data: a\n\ndata: b");
        let ends: Vec<bool> = std::iter::from_fn(|| segmenter.next_piece(&mut rest))
            .map(|(_, ends)| ends)
            .collect();
        assert_eq!(ends, [true, false]);
    }

    #[test]
    fn every_byte_is_handed_on_once_in_order() {
        let stream = "id: 7\r\n\r\n: keep\n\ndata: {\"x\":1}\r\rdata: z\n";
        for split in 0..stream.len() {
            let (a, b) = stream.split_at(split);
            assert_eq!(pieces(&[a, b]).concat(), stream, "split at {split}");
        }
    }

    /// Where events end in `bytes`, read one line terminator at a time: after
    /// a terminator that follows another one (a blank line).
    fn blank_line_ends(bytes: &[u8]) -> Vec<usize> {
        let (mut ends, mut line_start, mut at) = (Vec::new(), false, 0);
        while at < bytes.len() {
            let terminator = match (bytes[at], bytes.get(at + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r' | b'\n', _) => 1,
                _ => 0,
            };
            if terminator == 0 {
                line_start = false;
                at += 1;
                continue;
            }
            at += terminator;
            if line_start {
                ends.push(at);
            }
            line_start = true;
        }
        ends
    }

    #[test]
    fn event_ends_match_blank_lines_in_every_short_stream() {
        // Every stream of up to 8 bytes over text and both terminators,
        // handed over whole: the cuts are exactly after the blank lines.
        let alphabet = [b'a', b':', b'\r', b'\n'];
        for len in 0..=8u32 {
            for code in 0..4usize.pow(len) {
                let bytes: Vec<u8> = (0..len)
                    .map(|i| alphabet[code / 4usize.pow(i) % 4])
                    .collect();
                let mut segmenter = Segmenter::default();
                let mut rest = Bytes::from(bytes.clone());
                let (mut at, mut ends) = (0, Vec::new());
                while let Some((piece, end)) = segmenter.next_piece(&mut rest) {
                    at += piece.len();
                    if end {
                        ends.push(at);
                    }
                }
                assert_eq!(ends, blank_line_ends(&bytes), "{bytes:?}");
            }
        }
    }
}
