//! A call the layer drives in the background (parked, or re-issued after a
//! `tasks/update`) is never relayed to a client, so the layer must not keep
//! the bytes it reads from it: a long-running tool streaming progress would
//! otherwise hold its whole stream in memory until it ends.
//!
//! The scripted inner server builds every SSE frame with `Bytes::from_owner`
//! and counts the frames still alive. Once the layer has read `FRAMES` of
//! them (the stream is polled for the next one), none may be alive.

use crate::support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer, ToolPolicy};
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{Served, serve};
use support::in_process::{discover_answer, json_response, read_message};
use support::layered::{CLIENT_TIMEOUT, task_id};
use support::wait::BOUND;
use tokio::sync::Notify;
use tower::ServiceBuilder;

/// Progress frames streamed while the call runs in the background.
const FRAMES: usize = 20;
/// The layer's threshold.
const THRESHOLD: Duration = Duration::from_millis(100);
/// Longer than the threshold.
const LATE: Duration = Duration::from_millis(250);

#[derive(Default)]
struct Frames {
    made: AtomicUsize,
    dropped: AtomicUsize,
    /// Signalled when the stream is polled past its last progress frame.
    read_all: Notify,
    /// Signalled by the test to let the stream send its result.
    release: Notify,
}

impl Frames {
    fn alive(&self) -> usize {
        self.made.load(Ordering::SeqCst) - self.dropped.load(Ordering::SeqCst)
    }
}

/// One SSE frame whose drop is counted.
struct Counted {
    bytes: Vec<u8>,
    frames: Arc<Frames>,
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.frames.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn frame(frames: &Arc<Frames>, message: &Value) -> Bytes {
    frames.made.fetch_add(1, Ordering::SeqCst);
    Bytes::from_owner(Counted {
        bytes: format!("data: {message}\n\n").into_bytes(),
        frames: frames.clone(),
    })
}

/// An SSE body: optionally one frame at once, then (after `pause`) `FRAMES`
/// progress frames, then, once released, the result for `id`.
fn stream(frames: Arc<Frames>, id: Value, early_frame: bool, pause: Duration) -> Body {
    let progress = |n: usize| {
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "t", "progress": n, "message": format!("step {n}")}})
    };
    let events = futures_util::stream::unfold(0usize, move |n| {
        let frames = frames.clone();
        let id = id.clone();
        async move {
            if n == 0 && early_frame {
                return Some((Ok::<_, Infallible>(frame(&frames, &progress(0))), 1));
            }
            if n == usize::from(early_frame) {
                // Slow on purpose: the rest of the stream comes after the threshold.
                tokio::time::sleep(pause).await;
            }
            match n {
                n if n < FRAMES => Some((Ok(frame(&frames, &progress(n))), n + 1)),
                n if n == FRAMES => {
                    frames.read_all.notify_one();
                    frames.release.notified().await;
                    let done = json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": "streamed"}]}});
                    Some((Ok(Bytes::from(format!("data: {done}\n\n"))), n + 1))
                }
                _ => None,
            }
        }
    });
    Body::from_stream(events)
}

fn sse(body: Body) -> Response<Body> {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .expect("response")
}

async fn inner(
    frames: Arc<Frames>,
    request: Request<RequestBody<Body>>,
) -> Result<Response<Body>, Infallible> {
    let message = read_message(request.into_body()).await;
    if let Some(answer) = discover_answer(&message) {
        return Ok(answer);
    }
    let id = message["id"].clone();
    let params = &message["params"];
    Ok(match params["name"].as_str().unwrap_or_default() {
        // The head comes after the threshold: parked before any byte is read.
        "late_head" => {
            // Slow on purpose: the head comes after the threshold.
            tokio::time::sleep(LATE).await;
            sse(stream(frames, id, false, Duration::ZERO))
        }
        // The head and a first frame come at once, the rest after parking.
        "early_head" => sse(stream(frames, id, true, LATE)),
        // Asks for input first; the call the layer re-issues then streams.
        "ask_then_stream" if params.get("inputResponses").is_none() => {
            let ask = json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "input_required",
                "inputRequests": {"q": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Go?",
                    "requestedSchema": {"type": "object", "properties": {}}}}},
                "requestState": "s1"}});
            json_response(&ask)
        }
        "ask_then_stream" => sse(stream(frames, id, false, Duration::ZERO)),
        other => panic!("no script for {other:?}"),
    })
}

async fn start(frames: Arc<Frames>) -> Served {
    let layer = TasksLayer::new(MemoryTaskStore::new())
        .threshold(THRESHOLD)
        .tool_policy("ask_then_stream", ToolPolicy::Always);
    let service = tower::service_fn(move |request| inner(frames.clone(), request));
    serve(ServiceBuilder::new().layer(layer).service(service)).await
}

/// Waits until the layer read every progress frame, checks how many are still
/// alive, lets the result through and checks the task completed.
async fn assert_nothing_kept(frames: &Frames, client: &McpClient, task: &str) {
    tokio::time::timeout(Duration::from_secs(3), frames.read_all.notified())
        .await
        .expect("the layer did not read the stream");
    let alive = frames.alive();
    frames.release.notify_one();
    let done = client
        .wait_task_status(task, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "streamed");
    assert!(
        alive <= 1,
        "the layer kept {alive} of the {} frames it read from a background call",
        frames.made.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn a_call_parked_mid_stream_keeps_none_of_the_bytes_it_reads() {
    let frames = Arc::new(Frames::default());
    let served = start(frames.clone()).await;
    let client = McpClient::new(&served.url).with_timeout(CLIENT_TIMEOUT);

    let task = task_id(&client.call_tool("early_head", json!({}), true).await);
    assert_nothing_kept(&frames, &client, &task).await;
}

#[tokio::test]
async fn a_call_parked_before_its_response_head_keeps_none_of_the_bytes_it_reads() {
    let frames = Arc::new(Frames::default());
    let served = start(frames.clone()).await;
    let client = McpClient::new(&served.url).with_timeout(CLIENT_TIMEOUT);

    let task = task_id(&client.call_tool("late_head", json!({}), true).await);
    assert_nothing_kept(&frames, &client, &task).await;
}

#[tokio::test]
async fn a_call_resumed_after_input_keeps_none_of_the_bytes_it_reads() {
    let frames = Arc::new(Frames::default());
    let served = start(frames.clone()).await;
    let client = McpClient::new(&served.url).with_timeout(CLIENT_TIMEOUT);

    let task = task_id(&client.call_tool("ask_then_stream", json!({}), true).await);
    let asking = client
        .wait_task_status(&task, &["input_required"], BOUND)
        .await;
    assert!(
        asking["result"]["inputRequests"]["1.q"].is_object(),
        "{asking}"
    );
    let ack = client
        .tasks_update(&task, json!({"1.q": {"action": "accept", "content": {}}}))
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert_nothing_kept(&frames, &client, &task).await;
}
