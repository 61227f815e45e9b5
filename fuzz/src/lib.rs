//! What the fuzz targets share: a layer over an inner server that records
//! what reaches it and answers as the target says, driven on a runtime
//! whose clock is paused (a timer the layer waits on fires as soon as
//! nothing else can run, so a call that would hang shows as a timeout
//! after an hour of paused time, at once).
//!
//! | Item | What |
//! |------|------|
//! | [`Harness`] | the layered service and what its inner server saw |
//! | [`Answer`] | how the inner server answers |
//! | [`first_wins`] | a body as a reader that keeps the first of two equal keys sees it (serde_json keeps the last) |
//! | [`edited_view`] | a request with the layer's documented edits undone, to compare what was sent with what arrived |

#![warn(missing_docs)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use mcp_tasks::observe::calls::{CallOutcome, CallRecord};
use mcp_tasks::{MemoryTaskStore, RequestBody, TasksLayer};
use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use tower::{Layer, Service, ServiceExt};

/// The `_meta` key of the related task ids, which no inner server may get.
pub const RELATED: &str = "io.modelcontextprotocol/relatedTaskIds";
/// The `_meta` key of a 2026-07-28 request's protocol version.
pub const VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the per-request client capabilities.
pub const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// How the inner server answers a call (its `server/discover` probe aside).
#[derive(Clone, Debug)]
pub struct Answer {
    /// The body.
    pub body: Bytes,
    /// Sent in pieces of these lengths, one frame each (the rest in one).
    pub pieces: Vec<usize>,
    /// `text/event-stream` rather than `application/json`.
    pub sse: bool,
    /// The HTTP status.
    pub status: u16,
    /// Paused time before the head: past the layer's threshold, the call
    /// is parked.
    pub delay: Duration,
}

/// A layer over a recording inner server, on a paused current-thread
/// runtime.
pub struct Harness {
    runtime: tokio::runtime::Runtime,
    /// Every body the inner server got, its `server/discover` probes aside.
    pub seen: Arc<Mutex<Vec<Bytes>>>,
    /// Every call outcome the layer recorded.
    pub outcomes: Arc<Mutex<Vec<CallOutcome>>>,
}

/// What the client got.
#[derive(Debug)]
pub struct Got {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` (empty when none).
    pub content_type: String,
    /// The whole body, or `<broken>` when it broke off.
    pub body: Bytes,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// A harness; nothing runs until [`Harness::send`].
    pub fn new() -> Self {
        Self {
            runtime: paused_runtime(),
            seen: Arc::default(),
            outcomes: Arc::default(),
        }
    }

    /// Sends `request` through a fresh layer whose inner server answers
    /// with `answer`; what the client got. Panics when the answer does not
    /// end within an hour of paused time.
    pub fn send(&self, request: Request<Full<Bytes>>, answer: Answer) -> Got {
        let seen = self.seen.clone();
        let outcomes = self.outcomes.clone();
        self.runtime.block_on(async move {
            let inner = tower::service_fn(move |request: Request<RequestBody<Full<Bytes>>>| {
                let seen = seen.clone();
                let answer = answer.clone();
                async move {
                    let body = request.into_body().collect().await.map(|c| c.to_bytes());
                    let body = body.unwrap_or_default();
                    if let Some(discover) = discover_answer(&body) {
                        return Ok::<_, Infallible>(discover);
                    }
                    seen.lock().unwrap().push(body);
                    tokio::time::sleep(answer.delay).await;
                    Ok(respond(&answer))
                }
            });
            let layer = TasksLayer::new(MemoryTaskStore::new()).observe_calls(
                move |call: &CallRecord<'_>| outcomes.lock().unwrap().push(call.outcome),
            );
            call(layer.layer(inner), request).await
        })
    }
}

/// The declaring `tools/call` of the answer and bridge targets: a
/// 2026-07-28 client's fast call of `greet`, with the standard headers.
pub fn declaring_call() -> Request<Full<Bytes>> {
    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#;
    Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "greet")
        .body(Full::new(Bytes::from_static(CALL.as_bytes())))
        .expect("request")
}

/// Sends `request` through `service` and reads the answer to its end;
/// panics when that takes more than an hour (of paused time, on the
/// caller's runtime).
pub async fn call<S, B>(mut service: S, request: Request<Full<Bytes>>) -> Got
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body,
{
    let call = async {
        let service = service.ready().await.expect("ready");
        let response = service.call(request).await.expect("never fails");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = match response.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            // A body that broke (the inner's did) is an answer too.
            Err(_) => Bytes::from_static(b"<broken>"),
        };
        Got {
            status,
            content_type,
            body,
        }
    };
    match tokio::time::timeout(Duration::from_secs(3600), call).await {
        Ok(got) => got,
        Err(_) => panic!("the call did not end within an hour"),
    }
}

/// A runtime of one thread whose clock is paused.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime")
}

/// The inner server's answer to the layer's `server/discover` probe, when
/// `body` is one: a server without tasks of its own.
fn discover_answer(body: &[u8]) -> Option<Response<Pieces>> {
    let message: Value = serde_json::from_slice(body).ok()?;
    (message["method"] == "server/discover").then(|| {
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}}});
        Response::builder()
            .header("content-type", "application/json")
            .body(pieces(&Bytes::from(answer.to_string()), &[]))
            .expect("response")
    })
}

/// The inner server's body: its frames, one a poll.
pub type Pieces =
    StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

/// `body` cut after each of `lengths` (the rest in one last piece).
pub fn pieces(body: &Bytes, lengths: &[usize]) -> Pieces {
    let mut frames = Vec::new();
    let mut at = 0;
    for &length in lengths {
        let end = (at + length).min(body.len());
        if end > at {
            frames.push(Ok(Frame::data(body.slice(at..end))));
            at = end;
        }
    }
    if at < body.len() {
        frames.push(Ok(Frame::data(body.slice(at..))));
    }
    StreamBody::new(futures_util::stream::iter(frames))
}

fn respond(answer: &Answer) -> Response<Pieces> {
    Response::builder()
        .status(answer.status)
        .header(
            "content-type",
            if answer.sse {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .body(pieces(&answer.body, &answer.pieces))
        .expect("response")
}

/// `body` as a reader that keeps the first of two equal keys sees it
/// (`None` when it is not JSON).
pub fn first_wins(body: &[u8]) -> Option<Value> {
    struct First(Value);
    impl<'de> Deserialize<'de> for First {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(FirstVisitor).map(First)
        }
    }
    struct FirstVisitor;
    impl<'de> Visitor<'de> for FirstVisitor {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(First(item)) = seq.next_element()? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut object = Map::new();
            while let Some((key, First(value))) = map.next_entry::<String, First>()? {
                object.entry(key).or_insert(value);
            }
            Ok(Value::Object(object))
        }
    }
    serde_json::from_slice::<First>(body).ok().map(|f| f.0)
}

/// A request with what the layer may edit in a `tools/call` taken out:
/// the related task ids, the tasks extension among the client's
/// capabilities, and (when `token` is false: the client sent none) the
/// progress token, with a `_meta` object left empty by that removed.
pub fn edited_view(mut message: Value, token: bool) -> Value {
    if message["method"] != "tools/call" {
        return message;
    }
    let Some(meta) = message
        .get_mut("params")
        .and_then(|p| p.get_mut("_meta"))
        .and_then(Value::as_object_mut)
    else {
        return message;
    };
    meta.remove(RELATED);
    if !token {
        meta.remove("progressToken");
    }
    if let Some(extensions) = meta
        .get_mut(CAPABILITIES)
        .and_then(|c| c.get_mut("extensions"))
        .and_then(Value::as_object_mut)
    {
        extensions.remove(mcp_tasks::TASKS_EXTENSION);
    }
    if meta.is_empty() {
        message["params"].as_object_mut().unwrap().remove("_meta");
    }
    message
}
