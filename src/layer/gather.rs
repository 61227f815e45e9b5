//! Reading a POST body whole, up to a limit, into one buffer.
//!
//! The layer reads a POST it must route before anything else happens to
//! it. Such a body nearly always arrives as one data frame: that frame is
//! then the buffer, nothing copied and nothing allocated (a general collector
//! keeps a list of frames and a slot for trailers). A body in several frames
//! is copied into one buffer as it comes, reserved at the size the body
//! announces (its `Content-Length`), so it holds one copy of the data and no
//! bookkeeping per frame, however small the frames; a body that announces
//! nothing grows the buffer by doubling, within twice the limit.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::Body;
use http_body_util::LengthLimitError;
use pin_project_lite::pin_project;

use crate::body::BoxError;

pin_project! {
    /// A body read whole: `Ok` with its bytes, or why not.
    pub(crate) struct Gather<B> {
        #[pin]
        body: B,
        // The first data frame, while it is the only one.
        first: Bytes,
        // All the data, once a second frame came (empty before).
        joined: Vec<u8>,
        limit: usize,
    }
}

/// Why a body could not be read whole.
#[derive(Debug)]
pub(crate) enum Unread {
    /// It is larger than the limit, this one or one set further out (a body
    /// limited by tower-http's `RequestBodyLimitLayer`, say, fails with
    /// http-body-util's `LengthLimitError`).
    TooLarge,
    /// Reading it failed.
    Failed(BoxError),
}

impl<B> Gather<B> {
    /// Reads `body`, refusing it once it holds more than `limit` bytes.
    pub(crate) fn new(body: B, limit: usize) -> Self {
        Self {
            body,
            first: Bytes::new(),
            joined: Vec::new(),
            limit,
        }
    }
}

impl<B> Future for Gather<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Output = Result<Bytes, Unread>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        // A body that announces more than the limit is refused before any
        // of it is read (or waited for).
        if this.first.is_empty()
            && this.joined.is_empty()
            && this.body.size_hint().lower() > *this.limit as u64
        {
            return Poll::Ready(Err(Unread::TooLarge));
        }
        loop {
            let frame = match ready!(this.body.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(error)) => {
                    let error: BoxError = error.into();
                    let unread = match error.is::<LengthLimitError>() {
                        true => Unread::TooLarge,
                        false => Unread::Failed(error),
                    };
                    return Poll::Ready(Err(unread));
                }
                None => break,
            };
            // Trailers carry nothing the layer reads.
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let held = this.first.len().max(this.joined.len());
            if data.len() > *this.limit - held {
                return Poll::Ready(Err(Unread::TooLarge));
            }
            if this.first.is_empty() && this.joined.is_empty() {
                *this.first = data;
                // A body that knows it has ended (one whose length was
                // announced, as every real POST's is) is not polled again.
                if this.body.is_end_stream() {
                    break;
                }
                continue;
            }
            if this.joined.is_empty() {
                let announced = held + data.len() + this.body.size_hint().lower() as usize;
                this.joined.reserve_exact(announced.min(*this.limit));
                this.joined.extend_from_slice(&std::mem::take(this.first));
            }
            this.joined.extend_from_slice(&data);
        }
        Poll::Ready(Ok(if this.joined.is_empty() {
            std::mem::take(this.first)
        } else {
            Bytes::from(std::mem::take(this.joined))
        }))
    }
}

#[cfg(test)]
mod tests {
    use http_body::Frame;
    use http_body_util::StreamBody;

    use super::*;

    fn body(
        frames: Vec<Result<Frame<Bytes>, BoxError>>,
    ) -> StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, BoxError>>> {
        StreamBody::new(futures_util::stream::iter(frames))
    }

    fn data(text: &'static str) -> Result<Frame<Bytes>, BoxError> {
        Ok(Frame::data(Bytes::from_static(text.as_bytes())))
    }

    #[tokio::test]
    async fn one_frame_is_the_buffer_itself() {
        let sent = Bytes::from_static(b"{\"jsonrpc\":\"2.0\"}");
        let one = http_body_util::Full::new(sent.clone());
        let read = Gather::new(one, 1024).await.unwrap();
        assert_eq!(read, sent);
        assert_eq!(read.as_ptr(), sent.as_ptr(), "the frame was copied");
    }

    #[tokio::test]
    async fn frames_are_joined_in_order_and_trailers_skipped() {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-end", http::HeaderValue::from_static("1"));
        let frames = vec![
            data("{\"a\":"),
            data(""),
            data("1,"),
            data("\"b\":2}"),
            Ok(Frame::trailers(trailers)),
        ];
        let read = Gather::new(body(frames), 1024).await.unwrap();
        assert_eq!(&read[..], b"{\"a\":1,\"b\":2}");
        assert!(
            Gather::new(body(Vec::new()), 1024)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_thousand_one_byte_frames_are_one_buffer() {
        let frames = (0..1000)
            .map(|i| data(if i % 2 == 0 { "a" } else { "b" }))
            .collect();
        let read = Gather::new(body(frames), 1000).await.unwrap();
        assert_eq!(read, "ab".repeat(500).as_bytes());
    }

    #[tokio::test]
    async fn a_limit_set_further_out_is_too_large_too() {
        let outer = http_body_util::Limited::new(
            http_body_util::Full::new(Bytes::from(vec![b'x'; 100])),
            10,
        );
        let read = Gather::new(outer, 1024).await;
        assert!(matches!(read, Err(Unread::TooLarge)), "{read:?}");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_or_failing_is_refused() {
        let exactly = Gather::new(body(vec![data("12345"), data("678")]), 8).await;
        assert_eq!(&exactly.unwrap()[..], b"12345678");
        let over = Gather::new(body(vec![data("12345"), data("6789")]), 8).await;
        assert!(matches!(over, Err(Unread::TooLarge)), "{over:?}");
        let failed = Gather::new(body(vec![data("1"), Err("reset".into())]), 8).await;
        assert!(matches!(failed, Err(Unread::Failed(ref error)) if error.to_string() == "reset"));
    }
}
