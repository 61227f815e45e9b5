//! Reading an inner SSE body event by event while keeping its exact bytes.
//!
//! A flight must look inside the inner server's event stream (to find the
//! response and the progress notifications), yet a call that answers before
//! the threshold must reach the client byte for byte. [`Tap`] parses with
//! `sse-stream` over a body that records every frame it hands out; [`Replay`]
//! then gives the client the recorded bytes followed by the rest of the stream.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body::{Body, Frame};
use sse_stream::{Sse, SseStream};

use crate::body::{BoxBody, BoxError};

/// A body error that is a `std::error::Error`, as `sse-stream` wants.
#[derive(Debug)]
pub(crate) struct BodyError(pub(crate) BoxError);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BodyError {}

#[derive(Default)]
struct Recording {
    frames: VecDeque<Bytes>,
    on: bool,
    /// Bytes read since the last complete event.
    pending: usize,
    /// The most bytes one event may take.
    limit: usize,
}

/// An SSE event larger than the layer reads.
#[derive(Debug)]
pub(crate) struct EventTooLarge(pub(crate) usize);

impl std::fmt::Display for EventTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "an SSE event is larger than the layer's result limit of {} bytes",
            self.0
        )
    }
}

impl std::error::Error for EventTooLarge {}

type Shared = Arc<Mutex<Recording>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Recording> {
    // The recording is a queue of reference-counted byte chunks that no code
    // path panics while holding; a poisoned lock still holds valid bytes.
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The inner body, recording what is read from it.
struct Tee {
    body: BoxBody,
    recording: Shared,
}

impl Body for Tee {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let mut recording = lock(&self.recording);
                    // The parser holds an event until it is complete: bound it
                    // once the call is parked. Before that the bytes are
                    // recorded for the client anyway, and an answer in time
                    // must reach it unchanged, however large.
                    recording.pending = recording.pending.saturating_add(data.len());
                    if recording.pending > recording.limit && !recording.on {
                        let limit = recording.limit;
                        return Poll::Ready(Some(Err(BodyError(Box::new(EventTooLarge(limit))))));
                    }
                    if recording.on {
                        recording.frames.push_back(data.clone());
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(BodyError(error)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// An inner SSE body read as events, its bytes recorded until told to stop.
pub(crate) struct Tap {
    events: SseStream<Tee>,
    recording: Shared,
}

impl Tap {
    /// Starts reading `body`, recording its bytes if `record`; an event
    /// (with the bytes read since the previous one) may take `limit` bytes.
    pub(crate) fn new(body: BoxBody, record: bool, limit: usize) -> Self {
        let recording = Arc::new(Mutex::new(Recording {
            frames: VecDeque::new(),
            on: record,
            pending: 0,
            limit,
        }));
        let tee = Tee {
            body,
            recording: recording.clone(),
        };
        Self {
            events: SseStream::new(tee),
            recording,
        }
    }

    /// The next event; cancel-safe. `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Result<Sse, sse_stream::Error>> {
        let next = self.events.next().await;
        // Frames are only ever split, never merged, so what was read up to
        // this event is at most one frame more than the event itself.
        lock(&self.recording).pending = 0;
        next
    }

    /// Stops recording and forgets what was recorded: the bytes will never be
    /// relayed (the call was parked).
    pub(crate) fn stop_recording(&self) {
        let mut recording = lock(&self.recording);
        recording.on = false;
        recording.frames.clear();
    }

    /// A body that relays the recorded bytes and then the rest of the stream.
    pub(crate) fn replay(self) -> Replay {
        Replay {
            tap: self,
            done: false,
        }
    }
}

/// The recorded bytes of a [`Tap`], then the rest of its stream, unchanged.
pub(crate) struct Replay {
    tap: Tap,
    done: bool,
}

impl Body for Replay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            if let Some(bytes) = lock(&self.tap.recording).frames.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            if self.done {
                return Poll::Ready(None);
            }
            // Reading one more event pulls more frames into the recording.
            match Pin::new(&mut self.tap.events).poll_next(cx) {
                Poll::Ready(Some(Ok(_))) => {
                    lock(&self.tap.recording).pending = 0;
                    continue;
                }
                Poll::Ready(Some(Err(error))) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(error.to_string().into())));
                }
                Poll::Ready(None) => self.done = true,
                Poll::Pending => {
                    // Frames read without completing an event are relayed now.
                    if lock(&self.tap.recording).frames.is_empty() {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}
