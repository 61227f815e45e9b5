//! Reading a POST body whole, up to a limit, into one buffer.
//!
//! The layer reads a POST it must route before anything else happens to
//! it. Such a body nearly always arrives as one data frame: that frame is
//! then the buffer, nothing copied and nothing allocated (a general collector
//! keeps a list of frames and a slot for trailers). A body in several frames
//! is kept as its frames and copied once, at its end, into a buffer of
//! exactly its size.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http_body::Body;
use pin_project_lite::pin_project;

use crate::body::BoxError;

pin_project! {
    /// A body read whole: `Ok` with its bytes, or why not.
    pub(crate) struct Gather<B> {
        #[pin]
        body: B,
        // The first data frame.
        first: Bytes,
        // The data frames after it, if any.
        more: Vec<Bytes>,
        // Bytes read so far.
        size: usize,
        limit: usize,
    }
}

/// Why a body could not be read whole.
#[derive(Debug)]
pub(crate) enum Unread {
    /// It is larger than the limit.
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
            more: Vec::new(),
            size: 0,
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
        loop {
            let frame = match ready!(this.body.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(error)) => return Poll::Ready(Err(Unread::Failed(error.into()))),
                None => break,
            };
            // Trailers carry nothing the layer reads.
            let Ok(data) = frame.into_data() else {
                continue;
            };
            *this.size = this.size.saturating_add(data.len());
            if *this.size > *this.limit {
                return Poll::Ready(Err(Unread::TooLarge));
            }
            if this.first.is_empty() {
                *this.first = data;
            } else if !data.is_empty() {
                this.more.push(data);
            }
        }
        if this.more.is_empty() {
            return Poll::Ready(Ok(std::mem::take(this.first)));
        }
        let mut joined = BytesMut::with_capacity(*this.size);
        joined.extend_from_slice(this.first);
        for frame in this.more.drain(..) {
            joined.extend_from_slice(&frame);
        }
        Poll::Ready(Ok(joined.freeze()))
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
    async fn a_body_over_the_limit_or_failing_is_refused() {
        let exactly = Gather::new(body(vec![data("12345"), data("678")]), 8).await;
        assert_eq!(&exactly.unwrap()[..], b"12345678");
        let over = Gather::new(body(vec![data("12345"), data("6789")]), 8).await;
        assert!(matches!(over, Err(Unread::TooLarge)), "{over:?}");
        let failed = Gather::new(body(vec![data("1"), Err("reset".into())]), 8).await;
        assert!(matches!(failed, Err(Unread::Failed(ref error)) if error.to_string() == "reset"));
    }
}
