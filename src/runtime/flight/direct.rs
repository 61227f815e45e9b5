//! The cheap way through for a live SSE answer: an answer whose first
//! message is the response to the call.
//!
//! Most fast calls answered as SSE carry one event, the response. Reading
//! such a stream with the full machinery (a [`Tap`](super::tap::Tap) that
//! records, parses and releases every event while a race future reads it)
//! costs several allocations and a parse the client never needs. [`Direct`]
//! instead cuts the stream at event ends (`segment`) and looks at each event
//! by its bytes:
//!
//! - an event that is plainly the response (it names no method anywhere,
//!   and its data holds a result or an error, as `wire::plainly_a_response`
//!   asks of a message) goes out as it is, and so does everything after it:
//!   the call answered in time;
//! - an event without a message (a priming event, a comment) goes out, and
//!   the race goes on;
//! - anything else (a progress notification, a request of the inner server,
//!   an event that is not JSON-RPC), and the threshold passing first, hand
//!   the stream to the full machinery (`slow`), starting from the first byte
//!   not yet sent: from there on the call is read, relayed, held back or
//!   parked exactly as before.
//!
//! An event goes out only once it is whole, so nothing that must be held
//! back has left; the client's bytes are the inner server's either way.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::event::{carries_no_message, plainly_the_response};
use super::segment::Segmenter;
use crate::body::{BoxBody, BoxError, ResponseBody, boxed_error};

pin_project! {
    /// The body of a live SSE answer that has not needed the full machinery.
    ///
    /// `I` is the inner body; `F` builds that machinery from the bytes not
    /// yet sent (an event not yet whole, or one that is not plainly a
    /// response) and the rest of the inner body; it runs at most once. The
    /// threshold's timer is made only once the inner body must be waited
    /// for: a stream whose response is there at once never needs it.
    pub(crate) struct Direct<B, I, F> {
        #[pin]
        timer: Option<Sleep>,
        deadline: Instant,
        stage: Stage<B, I, F>,
    }
}

enum Stage<B, I, F> {
    /// Reading events until the response or the threshold.
    Racing(Racing<I, F>),
    /// The response went out: the rest of the stream, as it comes.
    Through { rest: Bytes, then: Then<I> },
    /// The full machinery reads the rest.
    Slow(Pin<Box<ResponseBody<B>>>),
    /// Only while the racing stage is handed to the full machinery.
    Done,
}

/// What follows the bytes of [`Stage::Through`].
enum Then<I> {
    /// The rest of the inner body.
    Body(I),
    /// The inner body's error.
    Fail(Option<BoxError>),
    /// Nothing: the inner body ended.
    End,
}

struct Racing<I, F> {
    body: I,
    segmenter: Segmenter,
    /// Bytes read from `body` and not yet cut.
    rest: Bytes,
    /// The pieces of an event not yet whole, and their length.
    pending: Vec<Bytes>,
    held: usize,
    /// The most bytes of one event held here: past it, the full machinery
    /// takes over (and bounds the event: `tap`).
    limit: usize,
    slow: F,
}

/// What reading one more piece while racing led to.
enum Step {
    /// An event that is plainly the response: it goes out, then the rest.
    Answered(Bytes),
    /// An event without a message: it goes out, and the race goes on.
    Blank(Bytes),
    /// The full machinery takes over from these bytes on.
    Slow(Bytes),
    /// The inner body failed: the bytes held, then the error.
    Failed(Bytes, BoxError),
    /// The stream ended: the bytes held, if any.
    Ended(Bytes),
    /// Nothing to read yet, and the threshold not passed.
    Pending,
}

impl<B, I, F> Direct<B, I, F>
where
    F: FnOnce(Bytes, I) -> ResponseBody<B>,
{
    /// Relays `read` (bytes already read from the inner SSE answer), then
    /// `body`, the rest of it, until `deadline`; `slow` takes over for
    /// anything but a plain response in time.
    /// An event may take `limit` bytes.
    pub(crate) fn new(body: I, read: Bytes, deadline: Instant, limit: usize, slow: F) -> Self {
        Self {
            timer: None,
            deadline,
            stage: Stage::Racing(Racing {
                body,
                segmenter: Segmenter::default(),
                rest: read,
                pending: Vec::new(),
                held: 0,
                limit,
                slow,
            }),
        }
    }
}

impl<I, F> Racing<I, F>
where
    I: Body<Data = Bytes> + Unpin,
    I::Error: Into<BoxError>,
{
    /// Reads until an event is whole, the body stops, or it must wait; `due`
    /// tells whether the threshold has passed (asked only when waiting).
    fn step(&mut self, cx: &mut Context<'_>, due: impl FnOnce(&mut Context<'_>) -> bool) -> Step {
        loop {
            if let Some((piece, ends)) = self.segmenter.next_piece(&mut self.rest) {
                if !ends {
                    self.held += piece.len();
                    self.pending.push(piece);
                    if self.held > self.limit {
                        let held = self.held();
                        return Step::Slow(concat(&[held, std::mem::take(&mut self.rest)]));
                    }
                    continue;
                }
                let event = self.held_with(piece);
                return if plainly_the_response(&event) {
                    Step::Answered(event)
                } else if carries_no_message(&event) {
                    Step::Blank(event)
                } else {
                    Step::Slow(concat(&[event, std::mem::take(&mut self.rest)]))
                };
            }
            match Pin::new(&mut self.body).poll_frame(cx) {
                // Trailers are dropped, as the full read drops them: they
                // would overtake an event held back.
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.rest = data;
                    }
                }
                Poll::Ready(Some(Err(error))) => return Step::Failed(self.held(), error.into()),
                Poll::Ready(None) => return Step::Ended(self.held()),
                Poll::Pending if due(cx) => return Step::Slow(self.held()),
                Poll::Pending => return Step::Pending,
            }
        }
    }
}

impl<I, F> Racing<I, F> {
    /// The pieces held of an event not yet whole, as one buffer.
    fn held(&mut self) -> Bytes {
        self.held_with(Bytes::new())
    }

    /// The pieces held followed by `last`, as one buffer.
    fn held_with(&mut self, last: Bytes) -> Bytes {
        if self.pending.is_empty() {
            return last;
        }
        self.pending.push(last);
        let all = concat(&self.pending);
        self.pending.clear();
        self.held = 0;
        all
    }
}

/// `pieces` as one buffer: the piece itself when at most one is not empty
/// (nothing copied), else one copy of exactly their size.
fn concat(pieces: &[Bytes]) -> Bytes {
    let mut filled = pieces.iter().filter(|piece| !piece.is_empty());
    match (filled.next(), filled.next()) {
        (None, _) => Bytes::new(),
        (Some(only), None) => only.clone(),
        _ => Bytes::from(pieces.concat()),
    }
}

impl<B, I, F> Body for Direct<B, I, F>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
    I: Body<Data = Bytes> + Unpin,
    I::Error: Into<BoxError>,
    F: FnOnce(Bytes, I) -> ResponseBody<B>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let mut timer = this.timer;
        let deadline = *this.deadline;
        let stage = this.stage;
        loop {
            match stage {
                Stage::Through { rest, then } => {
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(std::mem::take(rest)))));
                    }
                    return match then {
                        Then::Body(body) => boxed_error(Pin::new(body).poll_frame(cx)),
                        Then::Fail(error) => Poll::Ready(error.take().map(Err)),
                        Then::End => Poll::Ready(None),
                    };
                }
                Stage::Slow(body) => return body.as_mut().poll_frame(cx),
                Stage::Done => return Poll::Ready(None),
                Stage::Racing(racing) => {
                    let due = |cx: &mut Context<'_>| {
                        if timer.is_none() {
                            timer.set(Some(tokio::time::sleep_until(deadline)));
                        }
                        timer
                            .as_mut()
                            .as_pin_mut()
                            .is_some_and(|timer| timer.poll(cx).is_ready())
                    };
                    // The stage the stream goes on in, and an event to send first.
                    let (next, event) = match racing.step(cx, due) {
                        Step::Pending => return Poll::Pending,
                        Step::Blank(event) => return Poll::Ready(Some(Ok(Frame::data(event)))),
                        Step::Answered(event) => {
                            if let Stage::Racing(racing) = std::mem::replace(stage, Stage::Done) {
                                let Racing { body, rest, .. } = racing;
                                let then = Then::Body(body);
                                *stage = Stage::Through { rest, then };
                            }
                            return Poll::Ready(Some(Ok(Frame::data(event))));
                        }
                        Step::Ended(held) => (
                            Stage::Through {
                                rest: held,
                                then: Then::End,
                            },
                            None,
                        ),
                        Step::Failed(held, error) => {
                            let then = Then::Fail(Some(error));
                            (Stage::Through { rest: held, then }, None)
                        }
                        Step::Slow(unsent) => {
                            if let Stage::Racing(racing) = std::mem::replace(stage, Stage::Done) {
                                let Racing { body, slow, .. } = racing;
                                *stage = Stage::Slow(Box::pin(slow(unsent, body)));
                            }
                            continue;
                        }
                    };
                    *stage = next;
                    if let Some(event) = event {
                        return Poll::Ready(Some(Ok(Frame::data(event))));
                    }
                }
            }
        }
    }
}

/// A body that fails at once with `error`.
pub(crate) fn failing(error: BoxError) -> BoxBody {
    let once = futures_util::stream::once(async move { Err::<Frame<Bytes>, _>(error) });
    http_body_util::StreamBody::new(once).boxed_unsync()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use futures_util::StreamExt;
    use http_body_util::{BodyStream, StreamBody};

    use super::*;

    type Sent = tokio::sync::mpsc::UnboundedSender<Result<Frame<Bytes>, BoxError>>;

    /// An inner body fed by the test, frame by frame.
    fn inner() -> (Sent, BoxBody) {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let frames = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        (sender, StreamBody::new(frames).boxed_unsync())
    }

    fn data(text: &str) -> Result<Frame<Bytes>, BoxError> {
        Ok(Frame::data(Bytes::copy_from_slice(text.as_bytes())))
    }

    /// A `slow` that records what it was handed and relays it unchanged.
    fn slow(
        seen: Arc<std::sync::Mutex<Option<String>>>,
    ) -> impl FnOnce(Bytes, BoxBody) -> ResponseBody<BoxBody> {
        move |unsent: Bytes, body: BoxBody| {
            *seen.lock().unwrap() = Some(String::from_utf8(unsent.to_vec()).unwrap());
            let first = futures_util::stream::once(async move { Ok(Frame::data(unsent)) });
            let relayed = first.chain(BodyStream::new(body));
            ResponseBody::boxed(StreamBody::new(relayed).boxed_unsync())
        }
    }

    /// Everything `body` gives until it ends or fails: the text, and the
    /// error if any.
    async fn read_all(body: impl Body<Data = Bytes, Error = BoxError>) -> (String, Option<String>) {
        let mut body = std::pin::pin!(body);
        let mut text = String::new();
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => text.push_str(std::str::from_utf8(frame.data_ref().unwrap()).unwrap()),
                Err(error) => return (text, Some(error.to_string())),
            }
        }
        (text, None)
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// The event size limit of the tests that do not test it.
    const LIMIT: usize = 1 << 20;

    /// All that `Direct` relays of `body` with the usual limit and deadline.
    async fn read_direct(
        body: BoxBody,
        seen: &Arc<std::sync::Mutex<Option<String>>>,
    ) -> (String, Option<String>) {
        read_all(Direct::new(
            body,
            Bytes::new(),
            later(),
            LIMIT,
            slow(seen.clone()),
        ))
        .await
    }

    const RESPONSE: &str = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
    const PROGRESS: &str = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n";

    #[tokio::test]
    async fn a_response_first_goes_out_as_it_came_and_so_does_all_after_it() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        // Split inside the response event, and a trailing event with it.
        let (head, tail) = RESPONSE.split_at(20);
        sender.send(data(head)).unwrap();
        sender.send(data(&format!("{tail}: after\n\n"))).unwrap();
        sender.send(data(PROGRESS)).unwrap();
        drop(sender);
        let direct = Direct::new(body, Bytes::new(), later(), LIMIT, slow(seen.clone()));
        let (text, error) = read_all(direct).await;
        assert_eq!(text, format!("{RESPONSE}: after\n\n{PROGRESS}"));
        assert_eq!(error, None);
        assert_eq!(*seen.lock().unwrap(), None, "the full machinery was built");
    }

    #[tokio::test]
    async fn an_event_growing_past_the_limit_is_handed_over_not_held() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        let (head, _) = RESPONSE.split_at(30);
        sender.send(data(head)).unwrap();
        let direct = Direct::new(body, Bytes::new(), later(), 16, slow(seen.clone()));
        let mut direct = std::pin::pin!(direct);
        // Pending on the rest of the event, yet already handed over.
        let polled = futures_util::poll!(direct.as_mut().frame());
        assert!(
            polled.is_ready(),
            "the held bytes went to the full machinery"
        );
        assert_eq!(seen.lock().unwrap().as_deref(), Some(head));
        drop(sender);
    }

    #[tokio::test]
    async fn anything_but_a_response_hands_over_the_bytes_not_yet_sent() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        let partial = "data: {\"jsonrpc\"";
        sender.send(data(&format!("{PROGRESS}{partial}"))).unwrap();
        sender
            .send(data(":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
            .unwrap();
        drop(sender);
        let direct = Direct::new(body, Bytes::new(), later(), LIMIT, slow(seen.clone()));
        let (text, _) = read_all(direct).await;
        // The notification and the partial event after it were not sent.
        assert_eq!(
            seen.lock().unwrap().as_deref(),
            Some(format!("{PROGRESS}{partial}").as_str())
        );
        assert!(
            text.starts_with(PROGRESS) && text.ends_with("\"result\":{}}\n\n"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_priming_event_and_a_comment_go_out_and_the_race_goes_on() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        let priming = "id: 0\r\nretry: 500\r\ndata: \r\n\r\n: still here\n\n";
        sender.send(data(priming)).unwrap();
        sender.send(data(RESPONSE)).unwrap();
        drop(sender);
        let (text, _) = read_direct(body, &seen).await;
        assert_eq!(text, format!("{priming}{RESPONSE}"));
        assert_eq!(*seen.lock().unwrap(), None, "the full machinery was built");
    }

    #[tokio::test]
    async fn trailers_while_racing_are_dropped_as_the_full_read_drops_them() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-end", http::HeaderValue::from_static("1"));
        sender.send(data("data: {\"jsonrpc\":")).unwrap();
        sender.send(Ok(Frame::trailers(trailers))).unwrap();
        drop(sender);
        let mut direct = std::pin::pin!(Direct::new(
            body,
            Bytes::new(),
            later(),
            LIMIT,
            slow(seen.clone())
        ));
        let mut frames = Vec::new();
        while let Some(frame) = direct.frame().await {
            frames.push(frame.unwrap());
        }
        assert_eq!(frames.len(), 1, "a trailers frame went out");
        assert_eq!(
            frames[0].data_ref().map(|d| &d[..]),
            Some(&b"data: {\"jsonrpc\":"[..])
        );
    }

    #[tokio::test]
    async fn a_message_that_is_not_json_rpc_is_handed_over_with_what_follows() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        sender
            .send(data("data: hello\n\ndata: {\"jsonrpc\":"))
            .unwrap();
        let mut direct = std::pin::pin!(Direct::new(
            body,
            Bytes::new(),
            later(),
            LIMIT,
            slow(seen.clone())
        ));
        let first = direct.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"data: hello\n\ndata: {\"jsonrpc\":");
        assert_eq!(
            seen.lock().unwrap().as_deref(),
            Some("data: hello\n\ndata: {\"jsonrpc\":")
        );
        drop(sender);
    }

    #[tokio::test]
    async fn an_event_not_yet_whole_at_the_threshold_is_handed_over() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        sender.send(data("data: {\"jsonrpc\":")).unwrap();
        // The threshold has passed: once the body must wait, the full
        // machinery (which parks) takes over from the event's first byte.
        let direct = Direct::new(
            body,
            Bytes::new(),
            Instant::now(),
            LIMIT,
            slow(seen.clone()),
        );
        let reading = tokio::spawn(read_all(direct));
        tokio::time::timeout(Duration::from_secs(10), async {
            while seen.lock().unwrap().is_none() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("not handed over at the threshold");
        assert_eq!(seen.lock().unwrap().as_deref(), Some("data: {\"jsonrpc\":"));
        sender
            .send(data("\"2.0\",\"id\":1,\"result\":{}}\n\n"))
            .unwrap();
        drop(sender);
        let (text, _) = reading.await.unwrap();
        assert_eq!(
            text,
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
        );
    }

    #[tokio::test]
    async fn a_stream_that_ends_or_breaks_without_a_response_is_relayed_to_its_end() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (sender, body) = inner();
        sender.send(data("data: {\"jsonrpc\":\"2.0\"")).unwrap();
        drop(sender);
        let (text, error) = read_direct(body, &seen).await;
        assert_eq!((text.as_str(), error), ("data: {\"jsonrpc\":\"2.0\"", None));

        let (sender, body) = inner();
        sender.send(data("data: {")).unwrap();
        sender.send(Err("the inner stream broke".into())).unwrap();
        let (text, error) = read_direct(body, &seen).await;
        assert_eq!(text, "data: {");
        assert_eq!(error.as_deref(), Some("the inner stream broke"));
        assert_eq!(*seen.lock().unwrap(), None);
    }
}
