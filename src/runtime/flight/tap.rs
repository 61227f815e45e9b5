//! Reading an inner SSE body event by event while keeping its exact bytes.
//!
//! A flight must look inside the inner server's event stream (to find the
//! response and the progress notifications), yet a call that answers before
//! the threshold must reach the client byte for byte. [`Tap`] parses with
//! `wire::sse::Events` over a body that records every frame it hands out; [`Replay`]
//! then gives the client the recorded bytes followed by the rest of the stream.
//!
//! Before the threshold the client gets the stream as it comes: the frames are
//! cut at event ends (`segment`), and once the flight has looked at an event
//! its bytes are *released*, so a [`Relay`] may send them on at once. A request
//! of the inner server holds back its event and all that follows it until the
//! call answers in time; a parked call's held bytes are dropped. A progress
//! notification for the layer's own token (`wire::progress`) is forgotten
//! once read: its bytes never reach the client, and [`Replay`] then lets
//! an event out only once it is whole and known not to be one.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body::{Body, Frame};
use sse_stream::Sse;

use serde_json::value::RawValue;

use super::segment::Segmenter;
use crate::body::{BodyError, BoxBody, BoxError};
use crate::wire::progress::Token;
use crate::wire::sse::Events;
use crate::wire::{InnerMessage, read_inner_message};

#[derive(Default)]
struct Recording {
    frames: VecDeque<Bytes>,
    /// How many frames at the front of `frames` may go to the client now.
    released: usize,
    /// How many frames at the front of `frames` make whole events.
    complete: usize,
    /// Where the event being read starts in `frames`.
    start: usize,
    /// Nothing more is released: the flight saw a request of the inner server.
    held: bool,
    on: bool,
    /// Bytes handed on since the last event end (`Tee::hand_on` counts and
    /// restarts it).
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

impl Recording {
    /// Releases every whole event recorded so far, unless held.
    fn release(&mut self) {
        if !self.held {
            self.released = self.complete;
        }
    }

    /// The next frame, released or not (the call answered in time).
    fn pop(&mut self) -> Option<Bytes> {
        self.released = self.released.saturating_sub(1);
        self.complete = self.complete.saturating_sub(1);
        self.start = self.start.saturating_sub(1);
        self.frames.pop_front()
    }

    /// The next frame of a whole event.
    fn pop_complete(&mut self) -> Option<Bytes> {
        if self.complete == 0 {
            return None;
        }
        self.pop()
    }

    /// Drops the frames of the event being read.
    fn forget_event(&mut self) {
        let start = self.start;
        self.frames.truncate(start);
        self.complete = self.complete.min(start);
        self.released = self.released.min(start);
    }

    /// The next released frame.
    fn pop_released(&mut self) -> Option<Bytes> {
        if self.released == 0 {
            return None;
        }
        self.pop()
    }
}

/// The inner body, cut at event ends, recording what is read from it.
struct Tee {
    body: BoxBody,
    recording: Shared,
    /// Bytes read from `body` and not yet handed on.
    rest: Bytes,
    segmenter: Segmenter,
}

impl Tee {
    /// Hands on `piece`, recording it and bounding the event it belongs to
    /// (which it ends if `ends`).
    fn hand_on(
        &mut self,
        piece: Bytes,
        ends: bool,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let mut recording = lock(&self.recording);
        // The parser holds an event until it is complete, and so does the
        // recording while the call races: bound both. The frames of the
        // event cut short go at once (a `Replay` lifts the bound: it hands
        // each frame on as it comes).
        recording.pending = recording.pending.saturating_add(piece.len());
        if recording.pending > recording.limit {
            let limit = recording.limit;
            let complete = recording.complete;
            recording.frames.truncate(complete);
            return Poll::Ready(Some(Err(BodyError(Box::new(EventTooLarge(limit))))));
        }
        if ends {
            // The next event starts here (this one may have been a comment).
            recording.pending = 0;
        }
        if recording.on {
            recording.frames.push_back(piece.clone());
            if ends {
                recording.complete = recording.frames.len();
            }
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }
}

impl Body for Tee {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        loop {
            if let Some((piece, ends)) = this.segmenter.next_piece(&mut this.rest) {
                return this.hand_on(piece, ends);
            }
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => this.rest = data,
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(BodyError(error)))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// An inner SSE body read as events, its bytes recorded until told to stop.
pub(crate) struct Tap {
    events: Events<Tee>,
    recording: Shared,
    /// The layer's progress token in the call: its notifications never
    /// reach the client (`wire::progress`).
    progress: Option<Token>,
}

impl Tap {
    /// Starts reading `first` and then `body`, recording the bytes if
    /// `record`; an event (with the bytes read since the previous one) may
    /// take `limit` bytes. `first` starts at an event's start.
    pub(crate) fn new(
        first: Bytes,
        body: BoxBody,
        record: bool,
        limit: usize,
        progress: Option<Token>,
    ) -> Self {
        let recording = Arc::new(Mutex::new(Recording {
            on: record,
            limit,
            ..Recording::default()
        }));
        let tee = Tee {
            body,
            recording: recording.clone(),
            rest: first,
            segmenter: Segmenter::default(),
        };
        Self {
            events: Events::new(tee),
            recording,
            progress,
        }
    }

    /// The layer's progress token in the call, if it wrote one.
    pub(crate) fn progress(&self) -> Option<&Token> {
        self.progress.as_ref()
    }

    /// The next event; cancel-safe. `None` at the end of the stream.
    ///
    /// The events read before (which the caller has looked at) are released
    /// first, unless [held](Self::hold).
    pub(crate) async fn next(&mut self) -> Option<Result<Sse, sse_stream::Error>> {
        {
            let mut recording = lock(&self.recording);
            recording.release();
            recording.start = recording.complete;
        }
        self.events.next().await
    }

    /// Drops the bytes of the event just read: they never reach the client
    /// (a progress notification for the layer's own token).
    pub(crate) fn forget_event(&self) {
        lock(&self.recording).forget_event();
    }

    /// Releases nothing more: the last event read, and all after it, reach
    /// the client only if the call answers in time.
    pub(crate) fn hold(&self) {
        lock(&self.recording).held = true;
    }

    /// What a live relay sends on: the frames released, as they are.
    pub(crate) fn relay(&self) -> Relay {
        Relay(self.recording.clone())
    }

    /// Stops recording and forgets what was recorded and not released: those
    /// bytes will never be relayed (the call was parked).
    pub(crate) fn stop_recording(&mut self) {
        // No bytes of the call reach its client any more.
        self.progress = None;
        let mut recording = lock(&self.recording);
        recording.on = false;
        let released = recording.released;
        recording.frames.truncate(released);
    }

    /// A body that relays the recorded bytes and then the rest of the stream.
    pub(crate) fn replay(self) -> Replay {
        {
            let mut recording = lock(&self.recording);
            // Frames of an event not yet whole belong to the next event.
            recording.start = recording.complete;
            // The rest streams as it comes, whatever the size of an event
            // (held whole only to filter the layer's own progress out).
            recording.limit = usize::MAX;
        }
        Replay {
            tap: self,
            done: false,
        }
    }
}

impl Tap {
    /// The whole events recorded and not yet relayed, then `last`; the rest
    /// of the stream is dropped (and with it the inner call).
    pub(crate) fn whole_then(self, last: Bytes) -> BoxBody {
        let mut frames = {
            let mut recording = lock(&self.recording);
            let complete = recording.complete;
            let whole = recording.frames.drain(..complete).collect::<Vec<_>>();
            recording.frames.clear();
            (recording.released, recording.complete, recording.start) = (0, 0, 0);
            whole
        };
        frames.push(last);
        let frames =
            futures_util::stream::iter(frames.into_iter().map(|bytes| Ok(Frame::data(bytes))));
        http_body_util::BodyExt::boxed_unsync(http_body_util::StreamBody::new(frames))
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
        // With the layer's token in the call, an event goes out only once
        // whole and known not to be one of its notifications.
        let filter = self.tap.progress.is_some();
        loop {
            let frame = {
                let mut recording = lock(&self.tap.recording);
                if filter && !self.done {
                    recording.pop_complete()
                } else {
                    recording.pop()
                }
            };
            if let Some(bytes) = frame {
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            if self.done {
                return Poll::Ready(None);
            }
            // Reading one more event pulls more frames into the recording.
            match Pin::new(&mut self.tap.events).poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    let mut recording = lock(&self.tap.recording);
                    if self
                        .tap
                        .progress
                        .as_ref()
                        .is_some_and(|token| ours(&event, token))
                    {
                        recording.forget_event();
                    }
                    recording.start = recording.complete;
                }
                Poll::Ready(Some(Err(error))) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(error.to_string().into())));
                }
                Poll::Ready(None) => self.done = true,
                Poll::Pending => {
                    // Frames read without completing an event are relayed
                    // now, unless they may be the layer's notification.
                    if filter || lock(&self.tap.recording).frames.is_empty() {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

/// Whether `event` is a progress notification for the layer's `token`.
fn ours(event: &Sse, token: &Token) -> bool {
    let Some(data) = event.data.as_deref() else {
        return false;
    };
    // Most events do not name the token: those are not parsed.
    let named = token.json().trim_matches('"');
    data.contains(named)
        && matches!(
            read_inner_message(data, RawValue::NULL, Some(token)),
            Ok(InnerMessage::Progress { ours: true, .. })
        )
}

/// The released frames of a [`Tap`], shared with whoever reads the tap.
pub(crate) struct Relay(Shared);

impl Relay {
    /// The next released frame, if any.
    pub(crate) fn pop(&self) -> Option<Bytes> {
        lock(&self.0).pop_released()
    }

    /// Whether no released frame is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.0).released == 0
    }
}
