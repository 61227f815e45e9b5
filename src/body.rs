//! The request and response bodies of [`TasksService`](crate::TasksService).
//!
//! Both are enums so that the pass-through path costs no boxing: a forwarded
//! response keeps the inner server's body, polled directly.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use http_body_util::combinators::UnsyncBoxBody;
use pin_project_lite::pin_project;

/// The error type of boxed bodies and of [`ResponseBody`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A type-erased body, used where the layer itself produces or relays data.
pub type BoxBody = UnsyncBoxBody<Bytes, BoxError>;

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
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            ResponseKind::Inner { body } => body.is_end_stream(),
            ResponseKind::Full { body } => body.is_end_stream(),
            ResponseKind::Boxed { body } => body.is_end_stream(),
            ResponseKind::Resumed { first, body } => first.is_none() && body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            ResponseKind::Inner { body } => body.size_hint(),
            ResponseKind::Full { body } => body.size_hint(),
            ResponseKind::Boxed { body } => body.size_hint(),
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
}
