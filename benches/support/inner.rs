//! A minimal in-process MCP responder used as the inner service of the
//! benchmarks, so that what is measured is the layer, not an MCP framework.
//!
//! It reads the request body, finds `id` and `method`, and answers a small
//! JSON-RPC result at once (or never, for memory measurements of parked calls).
#![allow(dead_code)] // each bench binary uses part of it

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use serde::Deserialize;
use serde_json::value::RawValue;

/// When the responder answers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// On the first poll.
    AtOnce,
    /// After yielding to the runtime once, so a zero threshold parks the call.
    AfterYield,
    /// Never: the call stays pending (memory of parked calls).
    Never,
}

/// The responder.
#[derive(Clone, Copy)]
pub struct Inner {
    /// When calls answer.
    pub answers: Answers,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a str>,
}

fn answer(body: &[u8]) -> Response<Full<Bytes>> {
    let envelope: Envelope<'_> = serde_json::from_slice(body).expect("bench requests are JSON");
    let id = envelope.id.map(RawValue::get).unwrap_or("null");
    if envelope.method == Some("initialize") {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"bench","version":"1"}}}}}}"#
        );
        return Response::builder()
            .header("content-type", "application/json")
            .header("mcp-session-id", SESSION)
            .body(Full::new(Bytes::from(text)))
            .expect("valid response");
    }
    let result = match envelope.method {
        Some("tools/list") => {
            r#"{"resultType":"complete","tools":[{"name":"job","inputSchema":{"type":"object"}}]}"#
        }
        _ => r#"{"resultType":"complete","content":[{"type":"text","text":"done"}]}"#,
    };
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(text)))
        .expect("valid response")
}

impl<B> tower::Service<Request<B>> for Inner
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Debug,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let answers = self.answers;
        Box::pin(async move {
            let body = request
                .into_body()
                .collect()
                .await
                .expect("body")
                .to_bytes();
            match answers {
                Answers::AtOnce => {}
                Answers::AfterYield => tokio::task::yield_now().await,
                Answers::Never => std::future::pending::<()>().await,
            }
            Ok(answer(&body))
        })
    }
}

/// Sends `request` through `service` and reads the whole response body.
pub async fn roundtrip<S, B>(service: S, request: Request<Full<Bytes>>) -> Bytes
where
    S: tower::Service<Request<Full<Bytes>>, Response = Response<B>>,
    S::Error: std::fmt::Debug,
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let response = tower::ServiceExt::oneshot(service, request)
        .await
        .expect("call");
    response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
}

/// The `Mcp-Session-Id` the responder gives every `initialize`.
pub const SESSION: &str = "bench-session";

/// A 2025-11-25 POST inside session [`SESSION`] (no `_meta`, no `Mcp-Method`).
pub fn legacy_request(id: u64, method: &str, params: &str) -> Request<Full<Bytes>> {
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}}}}}"#);
    let mut builder = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if method != "initialize" {
        builder = builder
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", SESSION);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .expect("valid request")
}

/// A 2026-07-28 POST with the standard headers and `_meta`.
pub fn request(
    id: u64,
    method: &str,
    params: &str,
    name: Option<&str>,
    declare: bool,
) -> Request<Full<Bytes>> {
    let extensions = if declare {
        r#"{"io.modelcontextprotocol/tasks":{}}"#
    } else {
        "{}"
    };
    let meta = format!(
        r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"extensions":{extensions}}}}}"#
    );
    let params = if params.is_empty() {
        format!("{{{meta}}}")
    } else {
        format!("{{{params},{meta}}}")
    };
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
    let mut builder = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .expect("valid request")
}
