//! The request and response bodies of [`TasksService`](crate::TasksService).
//!
//! Both are enums so that the pass-through path costs no boxing: a forwarded
//! response keeps the inner server's body, polled directly.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use http_body_util::combinators::UnsyncBoxBody;
use pin_project_lite::pin_project;
use tokio::time::Sleep;

use crate::wire::sse::KEEP_ALIVE;

/// The error type of boxed bodies and of [`ResponseBody`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A type-erased body, used where the layer itself produces or relays data.
pub type BoxBody = UnsyncBoxBody<Bytes, BoxError>;

/// A body error that is a `std::error::Error`, as `wire::sse::Events`
/// wants (its `Error::Body` boxes one).
#[derive(Debug)]
pub(crate) struct BodyError(pub(crate) BoxError);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BodyError {}

pin_project! {
    /// The body the inner service receives.
    ///
    /// POST bodies are buffered to be classified and are forwarded from that
    /// buffer; other requests keep the client's body.
    pub struct RequestBody<B> {
        #[pin]
        kind: RequestKind<B>,
    }
}

pin_project! {
    #[project = RequestKindProj]
    enum RequestKind<B> {
        Buffered { #[pin] body: Full<Bytes> },
        Streaming { #[pin] body: B },
    }
}

impl<B: fmt::Debug> fmt::Debug for RequestBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("RequestBody");
        match &self.kind {
            RequestKind::Buffered { body } => out.field("buffered", body),
            RequestKind::Streaming { body } => out.field("streaming", body),
        };
        out.finish()
    }
}

impl<B> RequestBody<B> {
    /// A buffered body.
    pub fn buffered(bytes: Bytes) -> Self {
        Self {
            kind: RequestKind::Buffered {
                body: Full::new(bytes),
            },
        }
    }

    /// The client's body, passed on as it is.
    pub fn streaming(body: B) -> Self {
        Self {
            kind: RequestKind::Streaming { body },
        }
    }
}

impl<B> Body for RequestBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.project().kind.project() {
            RequestKindProj::Buffered { body } => match body.poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
                Poll::Ready(Some(Err(never))) => match never {},
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            RequestKindProj::Streaming { body } => body.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            RequestKind::Buffered { body } => body.is_end_stream(),
            RequestKind::Streaming { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            RequestKind::Buffered { body } => body.size_hint(),
            RequestKind::Streaming { body } => body.size_hint(),
        }
    }
}

pin_project! {
    /// The body the client receives: the inner server's body untouched, a
    /// body the layer wrote, or bytes the layer relays from an inner body it
    /// had to read.
    pub struct ResponseBody<B> {
        #[pin]
        kind: ResponseKind<B>,
    }
}

pin_project! {
    #[project = ResponseKindProj]
    enum ResponseKind<B> {
        Inner { #[pin] body: B },
        Full { #[pin] body: Full<Bytes> },
        Boxed { body: BoxBody },
        Resumed { first: Option<Bytes>, body: Pin<Box<B>> },
        Beating { #[pin] body: B, beat: Beat },
    }
}

/// The keep-alive of an SSE body the layer passes through: after `every`
/// without a frame, at an event boundary, a comment frame.
struct Beat {
    every: Duration,
    sleep: Pin<Box<Sleep>>,
    /// The last bytes given, to tell an event boundary (nothing given yet
    /// counts as one).
    tail: [u8; 4],
}

impl Beat {
    fn new(every: Duration) -> Self {
        Self {
            every,
            sleep: Box::pin(tokio::time::sleep(every)),
            tail: *b"\n\n\n\n",
        }
    }

    fn saw(&mut self, data: &[u8]) {
        let keep = 4 - data.len().min(4);
        self.tail.copy_within(4 - keep.., 0);
        self.tail[keep..].copy_from_slice(&data[data.len() - (4 - keep)..]);
        self.restart();
    }

    fn restart(&mut self) {
        let next = tokio::time::Instant::now() + self.every;
        self.sleep.as_mut().reset(next);
    }

    /// Whether the bytes given so far end an event (a blank line).
    fn at_boundary(&self) -> bool {
        self.tail.ends_with(b"\n\n") || self.tail.ends_with(b"\r\r") || self.tail == *b"\r\n\r\n"
    }
}

impl<B: fmt::Debug> fmt::Debug for ResponseBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("ResponseBody");
        match &self.kind {
            ResponseKind::Inner { body } => out.field("inner", body),
            ResponseKind::Full { body } => out.field("full", body),
            ResponseKind::Boxed { .. } => out.field("boxed", &"the layer's own"),
            ResponseKind::Resumed { body, .. } => out.field("resumed", body),
            ResponseKind::Beating { body, beat } => {
                out.field("inner", body).field("keep_alive", &beat.every)
            }
        };
        out.finish()
    }
}

impl<B> ResponseBody<B> {
    /// The inner server's body.
    pub fn inner(body: B) -> Self {
        Self {
            kind: ResponseKind::Inner { body },
        }
    }

    /// A complete body.
    pub fn full(bytes: Bytes) -> Self {
        Self {
            kind: ResponseKind::Full {
                body: Full::new(bytes),
            },
        }
    }

    /// A relayed body.
    pub fn boxed(body: BoxBody) -> Self {
        Self {
            kind: ResponseKind::Boxed { body },
        }
    }

    /// The inner server's SSE body, with a comment after `every` without
    /// a frame (at an event boundary), for proxies that cut idle streams.
    pub(crate) fn beating(body: B, every: Duration) -> Self {
        Self {
            kind: ResponseKind::Beating {
                body,
                beat: Beat::new(every),
            },
        }
    }

    /// The inner server's body after the layer read its first frame,
    /// `first`: that frame, then the rest as the inner body gives it.
    pub(crate) fn resumed(first: Bytes, body: Pin<Box<B>>) -> Self {
        Self {
            kind: ResponseKind::Resumed {
                first: Some(first),
                body,
            },
        }
    }
}

impl<B> Body for ResponseBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.project().kind.project() {
            ResponseKindProj::Inner { body } => boxed_error(body.poll_frame(cx)),
            ResponseKindProj::Full { body } => match body.poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
                Poll::Ready(Some(Err(never))) => match never {},
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            ResponseKindProj::Boxed { body } => Pin::new(body).poll_frame(cx),
            ResponseKindProj::Resumed { first, body } => match first.take() {
                Some(first) => Poll::Ready(Some(Ok(Frame::data(first)))),
                None => boxed_error(body.as_mut().poll_frame(cx)),
            },
            ResponseKindProj::Beating { body, beat } => match body.poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    match frame.data_ref() {
                        Some(data) => beat.saw(data),
                        None => beat.restart(),
                    }
                    Poll::Ready(Some(Ok(frame)))
                }
                Poll::Ready(other) => boxed_error(Poll::Ready(other)),
                Poll::Pending => {
                    if beat.at_boundary() && beat.sleep.as_mut().poll(cx).is_ready() {
                        beat.restart();
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))));
                    }
                    Poll::Pending
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            ResponseKind::Inner { body } => body.is_end_stream(),
            ResponseKind::Full { body } => body.is_end_stream(),
            ResponseKind::Boxed { body } => body.is_end_stream(),
            ResponseKind::Resumed { first, body } => first.is_none() && body.is_end_stream(),
            ResponseKind::Beating { body, .. } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            ResponseKind::Inner { body } => body.size_hint(),
            ResponseKind::Full { body } => body.size_hint(),
            ResponseKind::Boxed { body } => body.size_hint(),
            // Comments may come on top of what the inner body holds.
            ResponseKind::Beating { .. } => SizeHint::new(),
            ResponseKind::Resumed { first, body } => {
                let (hint, first) = (body.size_hint(), first.as_ref().map_or(0, Bytes::len));
                let first = first as u64;
                let mut sum = SizeHint::new();
                sum.set_lower(hint.lower().saturating_add(first));
                if let Some(upper) = hint.upper() {
                    sum.set_upper(upper.saturating_add(first));
                }
                sum
            }
        }
    }
}

/// A frame polled from a body, its error boxed.
pub(crate) fn boxed_error<E: Into<BoxError>>(
    polled: Poll<Option<Result<Frame<Bytes>, E>>>,
) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
    polled.map(|frame| frame.map(|frame| frame.map_err(Into::into)))
}

/// The inner server's response as the client gets it: an SSE stream with
/// a comment after `keep_alive` without a frame, any other body untouched.
pub(crate) fn passed<B>(
    response: http::Response<B>,
    keep_alive: Duration,
) -> http::Response<ResponseBody<B>> {
    if crate::wire::sse::is_sse(response.headers()) {
        response.map(|body| ResponseBody::beating(body, keep_alive))
    } else {
        response.map(ResponseBody::inner)
    }
}

/// A JSON response carrying `reply`, with its HTTP status.
pub(crate) fn reply_response<B>(
    reply: crate::wire::jsonrpc::Reply,
) -> http::Response<ResponseBody<B>> {
    let mut response = http::Response::new(ResponseBody::full(reply.body));
    *response.status_mut() = reply.status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if let Some(code) = reply.code {
        response
            .extensions_mut()
            .insert(crate::observe::ErrorCode(code));
    }
    response
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn a_resumed_body_gives_the_frame_read_then_the_rest_and_counts_both() {
        let rest = Full::new(Bytes::from_static(b"world"));
        let body = ResponseBody::resumed(Bytes::from_static(b"hello "), Box::pin(rest));
        assert_eq!(body.size_hint().exact(), Some(11));
        assert!(!body.is_end_stream());
        let all = body.collect().await.expect("no error").to_bytes();
        assert_eq!(&all[..], b"hello world");
    }

    /// A body fed from a channel: the test says what comes and when.
    fn scripted() -> (
        tokio::sync::mpsc::Sender<&'static [u8]>,
        ResponseBody<impl Body<Data = Bytes, Error = std::convert::Infallible>>,
    ) {
        let (send, receive) = tokio::sync::mpsc::channel::<&'static [u8]>(4);
        let frames = futures_util::stream::unfold(receive, |mut receive| async move {
            let bytes = receive.recv().await?;
            Some((
                Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(bytes))),
                receive,
            ))
        });
        let body = http_body_util::StreamBody::new(frames);
        (send, ResponseBody::beating(body, Duration::from_secs(1)))
    }

    async fn next(body: &mut (impl Body<Data = Bytes> + Unpin)) -> Option<Bytes> {
        let frame = body.frame().await?.ok()?;
        frame.into_data().ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_sse_body_gets_a_comment_between_events_and_never_inside_one() {
        let (send, body) = scripted();
        let mut body = Box::pin(body);
        // Quiet from the start: a comment after the interval.
        assert_eq!(next(&mut body).await.as_deref(), Some(KEEP_ALIVE));
        send.send(b"event: message\ndata: {\"a\"").await.unwrap();
        assert_eq!(
            next(&mut body).await.as_deref(),
            Some(&b"event: message\ndata: {\"a\""[..])
        );
        // Inside an event: however long the wait, no comment.
        let waited = tokio::time::timeout(Duration::from_secs(5), next(&mut body)).await;
        assert!(waited.is_err(), "a comment inside an event: {waited:?}");
        send.send(b":1}\n").await.unwrap();
        send.send(b"\n").await.unwrap();
        assert_eq!(next(&mut body).await.as_deref(), Some(&b":1}\n"[..]));
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"\n"[..]));
        // The event ended (across two frames): quiet again, a comment.
        let started = tokio::time::Instant::now();
        assert_eq!(next(&mut body).await.as_deref(), Some(KEEP_ALIVE));
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        drop(send);
        assert_eq!(next(&mut body).await, None);
    }
}
