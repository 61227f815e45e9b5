//! An SSE answer reaches the client as it streams, before the threshold:
//! each event as the inner server sends it, the whole stream byte for byte
//! when the call answers in time, and the task handle at the end of the
//! same stream when it does not.
//!
//! The first two tests use the rmcp fixture (`slow_compute` sends progress
//! every 200 ms). The others script the inner stream chunk by chunk, so the
//! test decides what the inner server sends and when.

use crate::support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer};
use serde_json::{Value, json};
use support::client::{McpClient, OpenCall};
use support::fixture::{Served, serve};
use support::in_process::{discover_answer, read_message};
use support::layered::{CLIENT_TIMEOUT, Layered, ms, task_id, text};
use support::wait::BOUND;
use tokio::sync::{mpsc, oneshot};
use tower::ServiceBuilder;

#[tokio::test]
async fn progress_reaches_the_client_while_the_call_is_still_running() {
    let (layered, mut call) = open_slow_compute(ms(3000), 0.9).await;
    let first = next(&mut call).await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    // Without a live relay the first event would come with the result.
    assert_eq!(
        layered.probe.finished("slow_compute"),
        0,
        "came after the end"
    );
    assert_eq!(layered.probe.running("slow_compute"), 1);

    let rest = call.finish().await;
    let (last, progress) = rest.split_last().expect("the result");
    assert_eq!(
        text(&last["result"]),
        "slow_compute done after 0.9s",
        "{last}"
    );
    assert!(!progress.is_empty(), "progress every 200 ms: {rest:?}");
    let mut previous = first["params"]["progress"].as_f64().expect("progress");
    for message in progress {
        assert_eq!(message["method"], "notifications/progress", "{message}");
        let value = message["params"]["progress"].as_f64().expect("progress");
        assert!(value > previous, "out of order: {rest:?}");
        previous = value;
    }
    assert!(layered.store.is_empty(), "an answer in time left a task");
}

#[tokio::test]
async fn a_call_parked_mid_stream_ends_that_stream_with_its_task_handle() {
    let (layered, mut call) = open_slow_compute(ms(500), 1.5).await;
    let kind = call.headers.get("content-type").expect("content type");
    assert_eq!(kind, "text/event-stream", "{:?}", call.headers);
    let first = next(&mut call).await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert!(layered.store.is_empty(), "parked before its first event");

    let mut progress = vec![first];
    let created = loop {
        let message = next(&mut call).await;
        if message.get("id").is_some() {
            break message;
        }
        assert_eq!(message["method"], "notifications/progress", "{message}");
        progress.push(message);
    };
    assert!(call.next_message().await.is_none(), "the stream goes on");
    assert_eq!(created["id"], call.id, "{created}");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert_eq!(created["result"]["status"], "working", "{created}");
    // The last progress relayed is the task's first status message.
    let last = progress.last().expect("progress");
    assert_eq!(
        created["result"]["statusMessage"], last["params"]["message"],
        "{created} after {last}"
    );
    assert!(
        progress.len() >= 2,
        "progress at 0 and 200 ms: {progress:?}"
    );

    let id = task_id(&created);
    let done = layered
        .client()
        .wait_task_status(&id, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        text(&done["result"]["result"]),
        "slow_compute done after 1.5s"
    );
}

#[tokio::test]
async fn an_answer_in_time_arrives_byte_for_byte_each_event_as_it_is_sent() {
    let script = Script::start(ms(3000)).await;
    let mut call = script.open().await;
    let inner = script.inner().await;

    // The first event, its end and the next event's start in one chunk,
    // CRLF line ends; the client gets the first event before any more is sent.
    let first = progress(1).replace('\n', "\r\n");
    inner
        .send(format!("{first}data: {{\"jsonrpc\":\"2.0\","))
        .await;
    call.read_until(&first).await;
    assert_eq!(call.seen, first, "bytes after the first event's end");

    // A request of the inner server is held back until the answer.
    let rest = format!(
        "\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"t\",\"progress\":2}}}}\n\n{}",
        roots_request()
    );
    inner.send(rest.clone()).await;
    inner.send(progress(3)).await;
    // The second progress event arrives; anything relayed early would come
    // with it or soon after.
    call.read_until("\"progress\":2}}\n\n").await;
    call.read_for(ms(200)).await;
    assert_eq!(call.seen.matches("notifications/progress").count(), 2);
    assert!(
        !call.seen.contains("roots/list"),
        "relayed early: {}",
        call.seen
    );

    let answer = format!("data: {}\n\n", result(&call.id));
    inner.send(answer.clone()).await;
    drop(inner);
    call.read_to_end().await;
    assert_eq!(
        call.seen,
        format!(
            "{first}data: {{\"jsonrpc\":\"2.0\",{rest}{}{answer}",
            progress(3)
        )
    );
    assert!(script.store.is_empty());
}

#[tokio::test]
async fn a_call_parked_after_a_request_drops_the_request_and_ends_with_the_handle() {
    let script = Script::start(ms(400)).await;
    let mut call = script.open().await;
    let inner = script.inner().await;

    inner.send(progress(1)).await;
    call.read_until(&progress(1)).await;
    inner
        .send(format!("{}{}", roots_request(), progress(2)))
        .await;
    call.read_to_end().await;

    let events: Vec<&str> = call.seen.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 2, "{}", call.seen);
    assert_eq!(format!("{}\n\n", events[0]), progress(1));
    // The call goes on in the background and completes the task.
    completes_in_the_background(&script, &call, inner, events[1]).await;
}

#[tokio::test]
async fn a_refused_park_relays_the_held_request_and_the_rest_of_the_stream() {
    // No task may be created: the threshold passes, the park is refused,
    // and the call stays with its client as without the layer.
    let script = Script::start_with(ms(300), "text/event-stream", |layer| {
        layer.max_tasks(Some(0))
    })
    .await;
    let mut call = script.open().await;
    let inner = script.inner().await;

    inner.send(progress(1)).await;
    call.read_until(&progress(1)).await;
    inner
        .send(format!("{}{}", roots_request(), progress(2)))
        .await;
    // Past the threshold: the refusal lets the held bytes through.
    call.read_until(&progress(2)).await;
    let answer = format!("data: {}\n\n", result(&call.id));
    inner.send(answer.clone()).await;
    drop(inner);
    call.read_to_end().await;
    assert_eq!(
        call.seen,
        format!("{}{}{}{answer}", progress(1), roots_request(), progress(2))
    );
    assert!(script.store.is_empty(), "a refused park left a task");
}

#[tokio::test]
async fn a_json_answer_whose_head_comes_in_time_is_relayed_however_long_its_body_takes() {
    let script = Script::start_with(ms(200), "application/json", |layer| layer).await;
    let mut call = script.open().await;
    let inner = script.inner().await;

    // The scenario: the inner server stays silent past the threshold before its body.
    tokio::time::sleep(ms(400)).await;
    let answer = result(&call.id).to_string();
    inner.send(answer.clone()).await;
    drop(inner);
    call.read_to_end().await;
    assert_eq!(call.seen, answer);
    assert!(
        script.store.is_empty(),
        "an answer begun in time was parked"
    );
}

#[tokio::test]
async fn a_threshold_too_large_to_reach_never_parks() {
    let layered = Layered::start(|layer| layer.threshold(Duration::MAX)).await;
    let client = layered.client().with_timeout(CLIENT_TIMEOUT);

    let response = client
        .call_tool("slow_compute", json!({"seconds": 0.3}), true)
        .await;
    assert_eq!(
        text(&response["result"]),
        "slow_compute done after 0.3s",
        "{response}"
    );
    assert!(layered.store.is_empty());
}

#[tokio::test]
async fn a_response_there_at_once_goes_out_as_the_inner_sent_it() {
    let script = Script::start_ready(ms(3000), |id| {
        format!("data: {}\n\n: after\n\n", result(id))
    })
    .await;
    let mut call = script.open().await;
    let inner = script.inner().await;
    let first = format!("data: {}\n\n: after\n\n", result(&call.id));
    call.read_until(&first).await;
    inner.send(progress(9)).await;
    drop(inner);
    call.read_to_end().await;
    assert_eq!(call.seen, format!("{first}{}", progress(9)));
    assert!(script.store.is_empty());
}

#[tokio::test]
async fn progress_there_at_once_reaches_the_client_before_the_answer() {
    let script = Script::start_ready(ms(3000), |_| progress(1)).await;
    let mut call = script.open().await;
    let inner = script.inner().await;
    call.read_until(&progress(1)).await;
    assert_eq!(call.seen, progress(1));
    let answer = format!("data: {}\n\n", result(&call.id));
    inner.send(answer.clone()).await;
    drop(inner);
    call.read_to_end().await;
    assert_eq!(call.seen, format!("{}{answer}", progress(1)));
}

#[tokio::test]
async fn a_request_there_at_once_is_held_back_and_dropped_when_the_call_is_parked() {
    let script = Script::start_ready(ms(300), |_| roots_request()).await;
    let mut call = script.open().await;
    let inner = script.inner().await;
    call.read_to_end().await;
    let events: Vec<&str> = call.seen.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 1, "{}", call.seen);
    completes_in_the_background(&script, &call, inner, events[0]).await;
}

/// Checks that `event` carries the task handle of `call`, then has the
/// inner server answer and the task complete with that answer.
async fn completes_in_the_background(
    script: &Script,
    call: &RawCall,
    inner: InnerStream,
    event: &str,
) {
    let created: Value =
        serde_json::from_str(event.strip_prefix("data: ").expect("data")).expect("json");
    assert_eq!(created["id"], call.id, "{created}");
    assert_eq!(created["result"]["status"], "working", "{created}");
    inner.send(format!("data: {}\n\n", result(&call.id))).await;
    let client = McpClient::new(&script.served.url).with_timeout(CLIENT_TIMEOUT);
    let done = client
        .wait_task_status(&task_id(&created), &["completed", "failed"], BOUND)
        .await;
    assert_eq!(text(&done["result"]["result"]), "scripted", "{done}");
}

/// A declaring `tools/call` of `slow_compute` for `seconds`, with a
/// progress token, behind a layer with `threshold`, open once its head came.
async fn open_slow_compute(threshold: Duration, seconds: f64) -> (Layered, OpenCall) {
    let layered = Layered::start(|layer| layer.threshold(threshold)).await;
    let call = layered
        .client()
        .with_timeout(CLIENT_TIMEOUT)
        .open_call("slow_compute", json!({"seconds": seconds}), Some("p"), true)
        .await;
    (layered, call)
}

/// The next JSON-RPC message of `call`, within the client timeout.
async fn next(call: &mut OpenCall) -> Value {
    tokio::time::timeout(CLIENT_TIMEOUT, call.next_message())
        .await
        .expect("no message in time")
        .expect("the stream ended")
}

fn progress(n: u32) -> String {
    let message = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": "t", "progress": n}});
    format!("data: {message}\n\n")
}

fn roots_request() -> String {
    format!(
        "data: {}\n\n",
        json!({"jsonrpc": "2.0", "id": "s-1", "method": "roots/list"})
    )
}

fn result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": "scripted"}]}})
}

/// A layered inner server whose body (SSE unless told otherwise) the test
/// writes chunk by chunk.
struct Script {
    served: Served,
    store: MemoryTaskStore,
    receiver: Mutex<Option<oneshot::Receiver<mpsc::Sender<Bytes>>>>,
}

/// The inner server's end of one SSE body.
struct InnerStream(mpsc::Sender<Bytes>);

impl InnerStream {
    async fn send(&self, chunk: String) {
        self.0
            .send(Bytes::from(chunk))
            .await
            .expect("the body is gone");
    }
}

impl Script {
    async fn start(threshold: Duration) -> Self {
        Self::start_with(threshold, "text/event-stream", |layer| layer).await
    }

    /// As [`Script::start`], with the body's first chunk, `first` of the
    /// request id, there as soon as the head is: the layer reads it before
    /// it answers with the head.
    async fn start_ready(threshold: Duration, first: fn(&Value) -> String) -> Self {
        Self::start_full(threshold, "text/event-stream", Some(first), |layer| layer).await
    }

    async fn start_with(
        threshold: Duration,
        content_type: &'static str,
        configure: impl FnOnce(TasksLayer) -> TasksLayer,
    ) -> Self {
        Self::start_full(threshold, content_type, None, configure).await
    }

    async fn start_full(
        threshold: Duration,
        content_type: &'static str,
        first: Option<fn(&Value) -> String>,
        configure: impl FnOnce(TasksLayer) -> TasksLayer,
    ) -> Self {
        let store = MemoryTaskStore::new();
        let (tx, rx) = oneshot::channel();
        let senders = Arc::new(Mutex::new(Some(tx)));
        let layer = configure(TasksLayer::new(store.clone()).threshold(threshold));
        let shared = senders;
        let service = tower::service_fn(move |request: Request<RequestBody<Body>>| {
            let shared = shared.clone();
            async move {
                let message = read_message(request.into_body()).await;
                if let Some(answer) = discover_answer(&message) {
                    return Ok(answer);
                }
                let (tx, rx) = mpsc::channel::<Bytes>(16);
                if let Some(first) = first {
                    let chunk = Bytes::from(first(&message["id"]));
                    tx.try_send(chunk).expect("room for the first chunk");
                }
                if let Some(hand_over) = shared.lock().unwrap().take() {
                    let _ = hand_over.send(tx);
                }
                let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv()
                        .await
                        .map(|chunk| (Ok::<_, Infallible>(chunk), rx))
                });
                Ok::<_, Infallible>(
                    Response::builder()
                        .header("content-type", content_type)
                        .body(Body::from_stream(chunks))
                        .expect("response"),
                )
            }
        });
        let served = serve(ServiceBuilder::new().layer(layer).service(service)).await;
        Self {
            served,
            store,
            receiver: Mutex::new(Some(rx)),
        }
    }

    /// Sends a declaring `tools/call` and returns once the head arrived.
    async fn open(&self) -> RawCall {
        let client = McpClient::new(&self.served.url);
        let id = client.next_id();
        let body = client.build_request(
            id,
            "tools/call",
            json!({"name": "scripted", "arguments": {}}),
            true,
        );
        let mut request = reqwest::Client::new()
            .post(&self.served.url)
            .body(body.to_string());
        for (name, value) in McpClient::standard_headers("tools/call", Some("scripted")) {
            request = request.header(name, value);
        }
        let response = tokio::time::timeout(CLIENT_TIMEOUT, request.send())
            .await
            .expect("no response head")
            .expect("POST");
        assert_eq!(response.status(), 200);
        RawCall {
            id: json!(id),
            response,
            seen: String::new(),
        }
    }

    /// The inner server's end of the call's body.
    async fn inner(&self) -> InnerStream {
        let receiver = self.receiver.lock().unwrap().take().expect("one call");
        let sender = tokio::time::timeout(CLIENT_TIMEOUT, receiver)
            .await
            .expect("the call did not reach the inner server")
            .expect("sender");
        InnerStream(sender)
    }
}

/// A call's response body as raw text, read as it arrives.
struct RawCall {
    id: Value,
    response: reqwest::Response,
    seen: String,
}

impl RawCall {
    /// Reads one chunk into `seen`; `false` at the end of the body.
    async fn read_chunk(&mut self) -> bool {
        match self.response.chunk().await.expect("the body broke") {
            Some(chunk) => {
                self.seen
                    .push_str(std::str::from_utf8(&chunk).expect("utf-8"));
                true
            }
            None => false,
        }
    }

    /// Reads until `seen` ends with `end`.
    async fn read_until(&mut self, end: &str) {
        let read = async {
            while !self.seen.ends_with(end) {
                assert!(
                    self.read_chunk().await,
                    "ended before {end:?}: {}",
                    self.seen
                );
            }
        };
        tokio::time::timeout(CLIENT_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("{end:?} did not arrive; got {:?}", self.seen));
    }

    /// Reads whatever arrives within `window`.
    async fn read_for(&mut self, window: Duration) {
        let _ = tokio::time::timeout(window, async { while self.read_chunk().await {} }).await;
    }

    /// Reads to the end of the body.
    async fn read_to_end(&mut self) {
        let read = async { while self.read_chunk().await {} };
        tokio::time::timeout(CLIENT_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("the body did not end; got {:?}", self.seen));
    }
}
