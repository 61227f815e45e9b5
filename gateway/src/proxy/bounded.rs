//! The upstream's response body, streamed as it comes; an SSE answer to a
//! POST is cut at its request's time limit.
//!
//! An upstream that answers with SSE sends its head at once, so the header
//! timeout no longer bounds the call: without this bound, a stream that
//! then says nothing would hold its call (and its client, whom the layer's
//! keep-alive comments keep from timing out) for ever. The bound is the
//! one the head had (`--upstream-header-timeout` for a `tools/call`,
//! `--upstream-request-timeout` for anything else), counted from the
//! request, so a call answered with SSE ends when one answered with JSON
//! would. There is no separate idle bound: a tool may run for minutes
//! without a word on its stream, and an idle bound shorter than that would
//! cut it. A GET stream (the session's notifications) is not bounded.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use mcp_tasks::body::BoxError;
use tokio::time::{Instant, Sleep};

/// The upstream's body, cut at a deadline when it has one.
#[derive(Debug)]
pub struct UpstreamBody {
    body: Incoming,
    /// When the stream is cut, and the bound it had (for the message).
    cut: Option<(Pin<Box<Sleep>>, Duration)>,
}

impl UpstreamBody {
    /// `body` with no bound.
    pub(super) fn open(body: Incoming) -> Self {
        Self { body, cut: None }
    }

    /// `body`, cut at `deadline` (`limit` after its request was sent).
    pub(super) fn until(body: Incoming, deadline: Instant, limit: Duration) -> Self {
        Self {
            body,
            cut: Some((Box::pin(tokio::time::sleep_until(deadline)), limit)),
        }
    }
}

/// The error a stream cut at its bound ends with.
#[derive(Debug, thiserror::Error)]
#[error("the upstream's stream was still open {0:?} after its request; it was cut")]
pub struct StreamTimedOut(pub Duration);

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let Some((sleep, limit)) = &mut self.cut else {
            return Poll::Pending;
        };
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                let limit = *limit;
                self.cut = None;
                tracing::warn!(
                    ?limit,
                    "the upstream's SSE answer ran past its time limit; it was cut"
                );
                Poll::Ready(Some(Err(Box::new(StreamTimedOut(limit)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
