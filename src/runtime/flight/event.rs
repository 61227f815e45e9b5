//! What an SSE event of a live answer is, told by its bytes alone: the
//! plainly-the-response test and the no-message test that
//! [`Direct`](super::direct::Direct) and the race decide on.

use super::segment::Segmenter;
use crate::wire::{answers, names_no_method};

/// Whether `data`, the first bytes of an SSE answer, start with an event
/// that is plainly the response: then the whole stream can go to the client
/// as it is, with no [`Direct`](super::direct::Direct) to read it.
pub(crate) fn starts_with_the_response(data: &[u8]) -> bool {
    Segmenter::default()
        .event_end(data)
        .is_some_and(|end| plainly_the_response(&data[..end]))
}

/// Whether an SSE event is plainly the response (`wire::plainly_a_response`):
/// it names no method anywhere, and its data holds a result or an error (a
/// comment or an id that happens to hold one does not count).
pub(super) fn plainly_the_response(event: &[u8]) -> bool {
    names_no_method(event) && lines(event).filter_map(data_value).any(answers)
}

/// The lines of an SSE event (an empty one between `\r` and `\n`), found
/// with `memchr`: a byte-by-byte split cost more than the searches.
fn lines(event: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(event);
    std::iter::from_fn(move || {
        let bytes = rest?;
        match memchr::memchr2(b'\n', b'\r', bytes) {
            Some(end) => {
                rest = Some(&bytes[end + 1..]);
                Some(&bytes[..end])
            }
            None => {
                rest = None;
                Some(bytes)
            }
        }
    })
}

/// The value of a `data` line.
fn data_value(line: &[u8]) -> Option<&[u8]> {
    match line.strip_prefix(b"data")? {
        [] => Some(&[]),
        [b':', value @ ..] => Some(value),
        _ => None,
    }
}

/// Whether an SSE event carries no message: nothing but comments, `id`,
/// `event` and `retry` fields, and blank `data` (a priming event that only
/// sets an id for resumption, a keep-alive comment). The full read skips
/// such events too. Anything else (not UTF-8, a line without a colon, an
/// unknown field, a second `id`, `event` or `retry`, a `retry` that is no
/// number) is not vouched for here: the full read (`wire::sse::Events`)
/// reads it as the SSE standard does and finds what it is.
pub(super) fn carries_no_message(event: &[u8]) -> bool {
    if std::str::from_utf8(event).is_err() {
        return false;
    }
    let (mut ids, mut names, mut retries) = (0, 0, 0);
    lines(event).all(|line| {
        if line.is_empty() || line[0] == b':' {
            return true;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            return false;
        };
        let value = line[colon + 1..].trim_ascii();
        match &line[..colon] {
            b"data" => value.is_empty(),
            b"id" => {
                ids += 1;
                ids == 1
            }
            b"event" => {
                names += 1;
                names == 1
            }
            b"retry" => {
                retries += 1;
                retries == 1 && std::str::from_utf8(value).is_ok_and(|v| v.parse::<u64>().is_ok())
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_comments_known_fields_and_blank_data_carry_no_message() {
        for blank in [
            "id: 1\ndata:\n\n",
            ": ping\n\n",
            ": {\"error\":null}\n\n",
            "event: x\nretry: 10\ndata:  \n\n",
        ] {
            assert!(carries_no_message(blank.as_bytes()), "{blank:?}");
        }
        for other in [
            "data: hello\n\n",
            "data\n\n",
            "id: 1\nid: 2\n\n",
            "retry: soon\n\n",
            "retry: 1\nretry: 2\n\n",
            "foo: bar\n\n",
            "\u{feff}: bom\n\n",
        ] {
            assert!(!carries_no_message(other.as_bytes()), "{other:?}");
        }
    }

    #[test]
    fn lines_are_cut_at_every_terminator() {
        let cut: Vec<&[u8]> = lines(b"a\r\nb\rc\n\nd").collect();
        assert_eq!(cut, [&b"a"[..], b"", b"b", b"c", b"", b"d"]);
        assert_eq!(lines(b"").count(), 1);
    }

    #[test]
    fn only_a_result_or_error_in_the_data_makes_the_response() {
        let response =
            "id: 3\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert!(plainly_the_response(response.as_bytes()));
        assert!(plainly_the_response(
            b"data:{\"id\":1,\"error\":{}}\r\n\r\n"
        ));
        for other in [
            ": {\"error\":null}\n\n",
            "id: \"result\"\ndata: {}\n\n",
            ": \"result\"\ndata: {\"method\":\"notifications/progress\"}\n\n",
            "data: {\"result\":{},\"method\":\"x\"}\n\n",
        ] {
            assert!(!plainly_the_response(other.as_bytes()), "{other:?}");
        }
    }
}
