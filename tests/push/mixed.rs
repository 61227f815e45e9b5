//! A listen that asks for task status and for tool list changes: the inner
//! server (scripted here, in process) gets the listen without `taskIds` and
//! without the tasks extension, and the client gets one stream carrying the
//! inner server's acknowledgement (with the agreed `taskIds` added), its
//! notifications, the layer's `notifications/tasks`, and the inner
//! server's end.

use crate::support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use mcp_tasks::{MemoryTaskStore, RequestBody, TaskStore, TasksLayer};
use serde_json::{Value, json};
use support::in_process::{post, read_message, tasks_declared};
use support::layered::stored_task;
use support::wait::settle;
use tokio::sync::mpsc;
use tower::{Layer, ServiceExt};

type Frames = mpsc::Receiver<Result<http_body::Frame<Bytes>, Infallible>>;

fn event(message: Value) -> Result<http_body::Frame<Bytes>, Infallible> {
    Ok(http_body::Frame::data(Bytes::from(format!(
        "data: {message}\n\n"
    ))))
}

/// The SSE messages of a whole body, in order.
fn messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("JSON data"))
        .collect()
}

#[tokio::test]
async fn a_mixed_listen_gets_one_stream_with_both_parts() {
    let store = MemoryTaskStore::new();
    let id = stored_task(&store, Duration::from_secs(60)).await;

    let (response, script, asked) = open_mixed(&store, id).await;

    // What reached the inner server: its own part only.
    let seen = asked
        .lock()
        .unwrap()
        .clone()
        .expect("the inner server was asked");
    assert_eq!(
        seen["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{seen}"
    );
    let extensions =
        &seen["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"];
    assert!(
        extensions.get("io.modelcontextprotocol/tasks").is_none(),
        "{seen}"
    );

    let sub = seen["id"].clone();
    let meta = json!({"io.modelcontextprotocol/subscriptionId": sub});
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}});
    script.send(event(ack)).await.unwrap();
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}});
    script.send(event(changed)).await.unwrap();
    // The inner server's end comes after the layer pushed the completion.
    let mut body = response.into_body();
    let mut read = Vec::new();
    read_until(&mut body, &mut read, "working").await;
    store
        .complete(
            id,
            serde_json::value::to_raw_value(&json!({"content": []})).unwrap(),
        )
        .await
        .unwrap();
    read_until(&mut body, &mut read, "completed").await;
    let end =
        json!({"jsonrpc": "2.0", "id": sub, "result": {"resultType": "complete", "_meta": meta}});
    script.send(event(end)).await.unwrap();
    drop(script);

    let rest = tokio::time::timeout(Duration::from_secs(5), body.collect())
        .await
        .expect("the stream ends with the inner one")
        .expect("body")
        .to_bytes();
    read.extend_from_slice(&rest);
    let got = messages(&read);
    let methods: Vec<&str> = got
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(response)"))
        .collect();
    assert_eq!(
        methods[0], "notifications/subscriptions/acknowledged",
        "{got:?}"
    );
    assert_eq!(
        got[0]["params"]["notifications"],
        json!({"toolsListChanged": true, "taskIds": [id.to_string()]}),
        "the inner ack, with the agreed tasks added"
    );
    let statuses: Vec<&str> = got
        .iter()
        .filter(|m| m["method"] == "notifications/tasks")
        .map(|m| m["params"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["working", "completed"], "{got:?}");
    assert!(
        methods.contains(&"notifications/tools/list_changed"),
        "{got:?}"
    );
    assert_eq!(
        got.last().unwrap()["result"]["resultType"],
        "complete",
        "{got:?}"
    );
    assert_eq!(
        got.iter().filter(|m| m.get("result").is_some()).count(),
        1,
        "one end: the inner server's"
    );
}

/// Reads `body` into `read` until it holds the `notifications/tasks` of
/// `status` (panics after 5 s).
async fn read_until<B>(body: &mut B, read: &mut Vec<u8>, status: &str)
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Debug,
{
    let pushed = |read: &[u8]| {
        messages(read)
            .iter()
            .any(|m| m["method"] == "notifications/tasks" && m["params"]["status"] == status)
    };
    let wait = async {
        // Whole events only: a frame may end mid-event.
        while !pushed(&read[..complete_events(read)]) {
            let frame = body
                .frame()
                .await
                .expect("the stream ended")
                .expect("frame");
            if let Ok(data) = frame.into_data() {
                read.extend_from_slice(&data);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .unwrap_or_else(|_| panic!("no {status} pushed: {:?}", messages(read)));
}

/// The length of the whole events at the start of `read`.
fn complete_events(read: &[u8]) -> usize {
    read.windows(2)
        .rposition(|pair| pair == b"\n\n")
        .map_or(0, |at| at + 2)
}

/// A server response as the test reads it, with the scripted inner
/// stream's sender and the request the inner server got.
type Opened = (
    http::Response<mcp_tasks::ResponseBody<StreamBody<FrameStream>>>,
    mpsc::Sender<Result<http_body::Frame<Bytes>, Infallible>>,
    Arc<Mutex<Option<Value>>>,
);

type FrameStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>> + Send>,
>;

/// Opens a mixed listen (task `id` and tool list changes) through a layer
/// over `store` in front of an inner server whose SSE answer the test
/// scripts through the returned sender.
async fn open_mixed(store: &MemoryTaskStore, id: mcp_tasks::TaskId) -> Opened {
    let (script, frames) = mpsc::channel(16);
    let frames = Arc::new(Mutex::new(Some(frames)));
    let asked = Arc::new(Mutex::new(None::<Value>));
    let inner = {
        let (frames, asked) = (frames.clone(), asked.clone());
        tower::service_fn(
            move |request: http::Request<RequestBody<http_body_util::Full<Bytes>>>| {
                let (frames, asked) = (frames.clone(), asked.clone());
                async move {
                    *asked.lock().unwrap() = Some(read_message(request.into_body()).await);
                    let frames: Frames = frames.lock().unwrap().take().expect("one listen");
                    let stream: FrameStream = Box::pin(tokio_stream_from(frames));
                    let body = StreamBody::new(stream);
                    let response = http::Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(body)
                        .unwrap();
                    Ok::<_, Infallible>(response)
                }
            },
        )
    };
    let service = TasksLayer::new(store.clone()).layer(inner);
    let listen = json!({"notifications": {"taskIds": [id.to_string()], "toolsListChanged": true}});
    let request = post("subscriptions/listen", listen, None, tasks_declared());
    let response = service.oneshot(request).await.expect("call");
    assert_eq!(response.status(), 200);
    (response, script, asked)
}

/// An mpsc receiver as a stream of body frames.
fn tokio_stream_from(
    mut frames: Frames,
) -> impl futures_util::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>> {
    futures_util::stream::poll_fn(move |cx| frames.poll_recv(cx))
}

/// A client that stops reading a merged stream gets the layer's error as
/// the stream's last message; the inner server's events stop before it.
// On paused time, so that the stream's feeder reads each change before the
// next (see `settle`).
#[tokio::test(start_paused = true)]
async fn a_slow_client_of_a_merged_listen_gets_the_error_last() {
    let store = MemoryTaskStore::new();
    let id = stored_task(&store, Duration::from_secs(60)).await;
    let (response, script, asked) = open_mixed(&store, id).await;
    let sub = asked.lock().unwrap().clone().expect("asked")["id"].clone();
    let meta = json!({"io.modelcontextprotocol/subscriptionId": sub});
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}});
    script.send(event(ack)).await.unwrap();
    // Nobody reads: each round trip is two status changes.
    let raw = |text: &str| serde_json::value::RawValue::from_string(text.to_owned()).unwrap();
    for round in 0..60 {
        let key = format!("{round}.a");
        let ask = mcp_tasks::InputRound {
            requests: vec![(key.clone(), raw("{}"))],
            resume: raw("{}"),
        };
        store.require_input(id, ask).await.unwrap();
        settle().await;
        store
            .answer_input(id, None, vec![(key, raw("1"))])
            .await
            .unwrap();
        settle().await;
    }
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}});
    let _ = script.try_send(event(changed));
    let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .expect("the stream ended")
        .expect("body")
        .to_bytes();
    let got = messages(&body);
    let last = got.last().expect("messages");
    assert_eq!(last["error"]["code"], -32000, "{last}");
    assert_eq!(
        got.iter().filter(|m| m.get("error").is_some()).count(),
        1,
        "one end"
    );
}
