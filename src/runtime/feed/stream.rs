//! What every task-status stream is made of, whichever generation asked:
//!
//! | Piece | What it is |
//! |-------|------------|
//! | [`BUFFER`], [`RESYNC`], [`RETRY`] | a stream's bound on unread events, the re-read period without a change feed, the wait after a failed store read |
//! | [`event_stream`], [`events_from`] | the SSE response the layer writes from a channel (unbuffered for status streams) |
//! | [`expiry`], [`sleep_until`] | when a watched task's TTL runs out, and the wait for it |
//! | [`inner_events`] | the inner server's answer read as SSE events, when the layer adds its own between them |

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use http::Response;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, StreamBody};
use sse_stream::Sse;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::body::{BodyError, BoxError, ResponseBody};
use crate::task::{TaskSnapshot, Timestamp};
use crate::wire::sse;

/// Events a stream may hold unread before its client counts as too slow.
pub(crate) const BUFFER: usize = 64;

/// How often a subscription reads its tasks again when the store has no
/// change feed.
pub(crate) const RESYNC: Duration = Duration::from_secs(5);

/// How long after a failed store read a task is read again.
pub(crate) const RETRY: Duration = Duration::from_secs(1);

/// A task-status SSE response whose events come from `rx`, which a proxy
/// in front must pass on unbuffered.
pub(crate) fn event_stream<B>(rx: mpsc::Receiver<Bytes>) -> Response<ResponseBody<B>> {
    let mut response = events_from(rx);
    sse::unbuffered(response.headers_mut());
    response
}

/// An SSE response whose events come from `rx`.
pub(crate) fn events_from<B>(mut rx: mpsc::Receiver<Bytes>) -> Response<ResponseBody<B>> {
    let frames = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|next| next.map(|bytes| Ok::<_, BoxError>(Frame::data(bytes))))
    });
    let body = BodyExt::boxed_unsync(StreamBody::new(frames));
    let mut response = Response::new(ResponseBody::boxed(body));
    sse::head(response.headers_mut());
    response
}

/// When `task`'s TTL runs out, as a local instant; not sooner than 50 ms
/// from now (clocks differ: Redis expires by its own).
pub(crate) fn expiry(task: &TaskSnapshot) -> Option<Instant> {
    let deadline = task.created_at.saturating_add(task.ttl?);
    let left = deadline
        .as_millis()
        .saturating_sub(Timestamp::now().as_millis());
    Some(Instant::now() + Duration::from_millis(left.max(50)))
}

/// Sleeps until `at`; forever when there is none.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The events of an inner server's SSE stream.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// What the inner server answered a request the layer adds to.
pub(crate) enum Inner<RB> {
    /// A stream: its head and its events.
    Stream(http::response::Parts, Events),
    /// Anything else (an error, a JSON body), for the client as it is.
    Answer(Response<ResponseBody<RB>>),
}

/// The inner server's `response` as its SSE events, or whole when it is
/// no successful stream.
pub(crate) fn inner_events<RB>(response: Response<RB>) -> Inner<RB>
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let streams = response.status().is_success() && sse::is_sse(response.headers());
    if !streams {
        return Inner::Answer(response.map(ResponseBody::inner));
    }
    let (head, body) = response.into_parts();
    let events = crate::wire::sse::Events::new(body.map_err(|error| BodyError(error.into())));
    Inner::Stream(head, Box::pin(events))
}
