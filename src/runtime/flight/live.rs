//! An SSE answer relayed to its client as it comes, while the call races
//! the threshold: the full machinery, which `direct` hands a stream to when
//! its first event is not plainly the response.
//!
//! The client gets the inner response head at once, then each event once
//! the flight has looked at it ([`Relay`]). The body also drives the race
//! itself (a boxed future that reads the flight and, at the threshold, parks
//! the call); when the race ends, that future gives the tail of the stream:
//! the rest of the inner stream for an answer in time or a refused park, or
//! the one event carrying the task handle.
//!
//! Dropping the body (the client hung up) drops the race and with it the
//! call, as without the layer, unless parking has begun (the runtime then
//! owns the call).
//!
//! Released events go out before more is read: a client that reads slowly
//! slows the reading of the inner stream, as without the layer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};

use super::tap::Relay;
use crate::body::{BoxError, ResponseBody};

/// The race of a live call; it resolves to the rest of the client's stream.
pub(crate) type Racing<B> = Pin<Box<dyn Future<Output = ResponseBody<B>> + Send>>;

/// The body of a live SSE answer: the released events, then the tail.
pub(crate) struct Live<B> {
    relay: Relay,
    stage: Stage<B>,
}

enum Stage<B> {
    /// The call races the threshold.
    Racing(Racing<B>),
    /// The race is over: the rest of the stream.
    Tail(Pin<Box<ResponseBody<B>>>),
}

impl<B> Live<B> {
    /// A body that relays what `relay` releases while `racing` runs, then
    /// what it resolves to.
    pub(crate) fn new(relay: Relay, racing: Racing<B>) -> Self {
        Self {
            relay,
            stage: Stage::Racing(racing),
        }
    }
}

impl<B> Body for Live<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            // Released events go first, also once the tail is known: they
            // precede it in the stream.
            if let Some(bytes) = self.relay.pop() {
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            match &mut self.stage {
                Stage::Tail(tail) => return tail.as_mut().poll_frame(cx),
                // Driving the race reads the flight, which releases events.
                Stage::Racing(racing) => match racing.as_mut().poll(cx) {
                    Poll::Ready(tail) => self.stage = Stage::Tail(Box::pin(tail)),
                    Poll::Pending if self.relay.is_empty() => return Poll::Pending,
                    Poll::Pending => {}
                },
            }
        }
    }
}
