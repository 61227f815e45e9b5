//! Reading a JSON answer up to a limit, without ever holding more.
//!
//! An answer within the limit is read whole, to be parsed. One that goes
//! past it is not buffered further: what was read and the rest of the body
//! are chained into a body that relays it unchanged, and a parked call that
//! would have to store it fails instead.

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{BodyExt, StreamBody};

use crate::body::{BoxBody, BoxError};

/// What reading a JSON body found.
pub(crate) enum Collected {
    /// The whole body, within the limit.
    Whole(Bytes),
    /// The body went past the limit: what was read, then the rest.
    Over(BoxBody),
    /// The body broke.
    Failed(BoxError),
}

/// Reads `body` whole if it takes at most `limit` bytes.
pub(crate) async fn collect(mut body: BoxBody, limit: usize) -> Collected {
    let mut read: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        match body.frame().await {
            None => break,
            Some(Err(error)) => return Collected::Failed(error),
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                total = total.saturating_add(data.len());
                read.push(data);
                if total > limit {
                    return Collected::Over(chain(read, body));
                }
            }
        }
    }
    Collected::Whole(match read.len() {
        1 => read.pop().unwrap_or_default(),
        _ => read.concat().into(),
    })
}

/// A body that gives `read`, then whatever `rest` still has.
fn chain(read: Vec<Bytes>, rest: BoxBody) -> BoxBody {
    let head = futures_util::stream::iter(
        read.into_iter()
            .map(|bytes| Ok(http_body::Frame::data(bytes))),
    );
    let tail = rest.into_data_stream().map_ok(http_body::Frame::data);
    BodyExt::boxed_unsync(StreamBody::new(futures_util::StreamExt::chain(head, tail)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: &[&'static str]) -> BoxBody {
        let frames = chunks
            .iter()
            .map(|chunk| {
                Ok::<_, BoxError>(http_body::Frame::data(Bytes::from_static(chunk.as_bytes())))
            })
            .collect::<Vec<_>>();
        BodyExt::boxed_unsync(StreamBody::new(futures_util::stream::iter(frames)))
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let Collected::Whole(bytes) = collect(body(&["ab", "cd"]), 4).await else {
            panic!("expected the whole body")
        };
        assert_eq!(&bytes[..], b"abcd");
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_relayed_unchanged_without_reading_the_rest() {
        let Collected::Over(relayed) = collect(body(&["ab", "cd", "ef"]), 3).await else {
            panic!("expected an overflow")
        };
        let bytes = relayed.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"abcdef");
    }
}
