//! The answer of a call that did not park, followed to its end for the call
//! observer (`observe::calls`), and the watch a call carries until then.
//!
//! | The answer in time…                             | Recorded                                   |
//! |-------------------------------------------------|--------------------------------------------|
//! | has an HTTP error status, or is neither JSON nor SSE | at once, `Failed`                     |
//! | is JSON or SSE                                  | as its last byte passes (or the body ends, fails or is dropped), by its [`Verdict`] |
//!
//! Without an observer there is no watch, and [`answered`] gives the
//! response back untouched: the fast path tests one `Option`. With one, the
//! body is wrapped (one allocation) and its bytes fed to the verdict as
//! they pass; nothing is buffered.
//!
//! A watch is [`Watching::Own`] on every path but one: an SSE answer raced
//! event by event, where the threshold can still park the call from inside
//! the body. There the body's wrapper and the parking share it
//! ([`Watching::share`]); the first to take it records (a task takes it when
//! it is created, and records when it ends).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::Response;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use pin_project_lite::pin_project;

use crate::body::{BoxBody, BoxError, ResponseBody, boxed_error};
use crate::observe::calls::{CallOutcome, ParkedCall, Watch};
use crate::wire::verdict::{Format, Verdict};
use crate::wire::{is_content_type, sse};

/// The watch of a call that has not ended, held by one or shared by two.
#[derive(Debug)]
pub(crate) enum Watching {
    Own(Watch),
    Shared(Arc<Mutex<Option<Watch>>>),
}

impl Watching {
    /// The watch, unless the other holder took it.
    pub(crate) fn take(self) -> Option<Watch> {
        match self {
            Self::Own(watch) => Some(watch),
            Self::Shared(shared) => shared
                .lock()
                // Only `take` and `parked_call` hold it, and neither can
                // panic midway.
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        }
    }

    /// The call as a task's, should it park now (`None` if the other
    /// holder recorded it already).
    pub(crate) fn parked_call(&self) -> Option<ParkedCall> {
        match self {
            Self::Own(watch) => Some(watch.parked()),
            Self::Shared(shared) => shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .map(Watch::parked),
        }
    }

    /// The same watch for two holders.
    pub(crate) fn share(self) -> (Self, Self) {
        let shared = match self {
            Self::Own(watch) => Arc::new(Mutex::new(Some(watch))),
            Self::Shared(shared) => shared,
        };
        (Self::Shared(shared.clone()), Self::Shared(shared))
    }

    /// Records the call now, as not parked, with `outcome`.
    pub(crate) fn finish(self, outcome: CallOutcome) {
        if let Some(watch) = self.take() {
            watch.finish(outcome);
        }
    }
}

/// `response`, the answer in time of a call watched by `watch`: recorded at
/// once when its head tells how it ended, else followed to its end.
pub(crate) fn answered<B>(
    response: Response<ResponseBody<B>>,
    watch: Option<Watching>,
) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    match watch {
        None => response,
        Some(watch) => follow(response, watch),
    }
}

#[inline(never)]
fn follow<B>(response: Response<ResponseBody<B>>, watch: Watching) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let headers = response.headers();
    let format = if !response.status().is_success() {
        None
    } else if sse::is_sse(headers) {
        Some(Format::Sse)
    } else if is_content_type(headers, "application/json") {
        Some(Format::Json)
    } else {
        None
    };
    let Some(format) = format else {
        watch.finish(CallOutcome::Failed);
        return response;
    };
    response
        .map(|body| ResponseBody::boxed(BodyExt::boxed_unsync(Watched::new(body, format, watch))))
}

/// Records a watched call as failed now (its inner service failed, or it
/// was lost while parking), and gives back `then`, what its client gets.
pub(crate) fn failed<T>(watch: Option<Watching>, then: T) -> T {
    if let Some(watch) = watch {
        watch.finish(CallOutcome::Failed);
    }
    then
}

/// An SSE body that may still park its call, followed to its end under
/// `watch` when there is one.
pub(crate) fn sse_body<B>(body: B, watch: Option<Watching>) -> BoxBody
where
    B: Body<Data = Bytes, Error = BoxError> + Send + 'static,
{
    match watch {
        None => BodyExt::boxed_unsync(body),
        Some(watch) => BodyExt::boxed_unsync(Watched::new(body, Format::Sse, watch)),
    }
}

pin_project! {
    /// A body whose bytes are fed to a [`Verdict`] as they pass; the call
    /// is recorded when it ends, fails or is dropped.
    struct Watched<B> {
        #[pin]
        body: B,
        end: End,
    }
}

impl<B> Watched<B> {
    fn new(body: B, format: Format, watch: Watching) -> Self {
        Self {
            body,
            end: End {
                verdict: Verdict::new(format),
                watch: Some(watch),
            },
        }
    }
}

/// The record at the end of a watched body.
struct End {
    verdict: Verdict,
    watch: Option<Watching>,
}

impl End {
    /// Records the call, once: `ended` when the body ended (or failed), as
    /// opposed to dropped before.
    fn record(&mut self, ended: bool) {
        let Some(watch) = self.watch.take() else {
            return;
        };
        let outcome = if self.verdict.failed() {
            CallOutcome::Failed
        } else if self.verdict.answered() {
            CallOutcome::Succeeded
        } else if ended {
            // Over without the response: what a task records as failed.
            CallOutcome::Failed
        } else {
            CallOutcome::Cancelled
        };
        watch.finish(outcome);
    }
}

impl Drop for End {
    fn drop(&mut self) {
        self.record(false);
    }
}

impl<B> Body for Watched<B>
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
        let mut this = self.project();
        let frame = ready!(this.body.as_mut().poll_frame(cx));
        match &frame {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.end.verdict.feed(data);
                }
                // A server may stop polling a body that says it is over.
                if this.body.is_end_stream() {
                    this.end.record(true);
                }
            }
            Some(Err(_)) | None => this.end.record(true),
        }
        boxed_error(Poll::Ready(frame))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use http_body_util::{Full, StreamBody};

    use super::*;
    use crate::observe::calls::{CallObserver, CallRecord};

    type Seen = Arc<Mutex<Vec<CallOutcome>>>;

    fn watching() -> (Seen, Watching) {
        let seen = Seen::default();
        let into = seen.clone();
        let observer: Arc<dyn CallObserver> =
            Arc::new(move |call: &CallRecord<'_>| into.lock().unwrap().push(call.outcome));
        let body = Bytes::from_static(br#"{"name":"t"}"#);
        let watch = Watch::start(Some(&observer), &body, Some(8..11)).unwrap();
        (seen, Watching::Own(watch))
    }

    fn response(
        content_type: &str,
        status: u16,
        text: &'static str,
    ) -> Response<ResponseBody<Full<Bytes>>> {
        let mut response = Response::new(ResponseBody::inner(Full::new(Bytes::from_static(
            text.as_bytes(),
        ))));
        *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, content_type.parse().unwrap());
        response
    }

    #[tokio::test]
    async fn no_watch_leaves_the_response_untouched() {
        let response = answered(response("application/json", 200, "{}"), None);
        assert!(format!("{:?}", response.body()).contains("inner"));
    }

    #[tokio::test]
    async fn an_answer_is_recorded_as_its_last_byte_passes_by_what_it_says() {
        let cases = [
            (
                "application/json",
                200,
                r#"{"id":1,"result":{}}"#,
                CallOutcome::Succeeded,
            ),
            (
                "application/json",
                200,
                r#"{"id":1,"result":{"isError":true}}"#,
                CallOutcome::Failed,
            ),
            (
                "text/event-stream",
                200,
                "data: {\"id\":1,\"error\":{}}\n\n",
                CallOutcome::Failed,
            ),
            ("application/json", 200, "{}", CallOutcome::Failed),
        ];
        for (content_type, status, text, expected) in cases {
            let (seen, watch) = watching();
            let response = answered(response(content_type, status, text), Some(watch));
            assert!(seen.lock().unwrap().is_empty(), "recorded before the body");
            let read = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&read[..], text.as_bytes(), "relayed unchanged");
            assert_eq!(*seen.lock().unwrap(), [expected], "{text}");
        }
    }

    #[tokio::test]
    async fn an_error_status_or_another_type_is_recorded_at_once() {
        for (content_type, status) in [("application/json", 502), ("text/plain", 200)] {
            let (seen, watch) = watching();
            let _response = answered(response(content_type, status, "x"), Some(watch));
            assert_eq!(*seen.lock().unwrap(), [CallOutcome::Failed]);
        }
    }

    #[tokio::test]
    async fn a_body_dropped_early_is_cancelled_and_a_broken_one_failed() {
        let (seen, watch) = watching();
        let (send, receive) =
            tokio::sync::mpsc::unbounded_channel::<Result<Frame<Bytes>, BoxError>>();
        let frames = futures_util::stream::unfold(receive, |mut receive| async move {
            Some((receive.recv().await?, receive))
        });
        let mut body = Box::pin(sse_body(StreamBody::new(frames), Some(watch)));
        send.send(Ok(Frame::data(Bytes::from_static(b"data: {\"id\":1,"))))
            .unwrap();
        body.frame().await.unwrap().unwrap();
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [CallOutcome::Cancelled]);

        let (seen, watch) = watching();
        let broken = futures_util::stream::iter([Err::<Frame<Bytes>, BoxError>("cut".into())]);
        let body = sse_body(StreamBody::new(broken), Some(watch));
        assert!(body.collect().await.is_err());
        assert_eq!(*seen.lock().unwrap(), [CallOutcome::Failed]);
    }

    #[tokio::test]
    async fn a_shared_watch_is_recorded_by_the_first_to_take_it() {
        let (seen, watch) = watching();
        let (outer, parking) = watch.share();
        assert!(parking.parked_call().is_some());
        // Parked: the parking takes it; the body's end records nothing.
        drop(parking.take());
        let body = sse_body(
            Full::new(Bytes::from_static(b"data: {}\n\n"))
                .map_err(|never| -> BoxError { match never {} }),
            Some(outer),
        );
        body.collect().await.unwrap();
        assert!(seen.lock().unwrap().is_empty());
        assert!(
            Watching::Shared(Arc::new(Mutex::new(None)))
                .parked_call()
                .is_none()
        );
    }
}
