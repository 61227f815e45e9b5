//! Responses as read off the wire: a finished [`Exchange`] and a still
//! streaming [`OpenCall`].

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use http_body::Frame;
use http_body_util::StreamBody;
use mcp_tasks::wire::sse::Events;
use reqwest::{StatusCode, header::HeaderMap};
use serde_json::Value;
use sse_stream::Sse;

pub(super) type SseEvents = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// One request/response exchange as seen on the wire.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The JSON-RPC id the request used.
    pub id: u64,
    /// HTTP status of the response.
    pub status: StatusCode,
    /// HTTP response headers.
    pub headers: HeaderMap,
    /// Raw body text, for SSE up to the event carrying the final response.
    pub body: String,
    /// JSON-RPC messages in arrival order: every SSE `data` that parses as
    /// JSON, or the single JSON body.
    pub messages: Vec<Value>,
}

impl Exchange {
    /// Whether the response was `text/event-stream`.
    pub fn is_sse(&self) -> bool {
        content_type(&self.headers).starts_with("text/event-stream")
    }

    /// The response `Content-Type` (empty when absent).
    pub fn content_type(&self) -> &str {
        content_type(&self.headers)
    }

    /// The final JSON-RPC response (`result` or `error`), if one arrived.
    pub fn response(&self) -> Option<&Value> {
        self.messages
            .iter()
            .rev()
            .find(|message| is_response(message))
    }

    /// The final JSON-RPC response; panics with the whole exchange if none came.
    pub fn into_response(self) -> Value {
        match self.response() {
            Some(response) => response.clone(),
            None => panic!("no JSON-RPC response (HTTP {}): {}", self.status, self.body),
        }
    }

    /// Messages that are notifications (have a `method`, no `id`).
    pub fn notifications(&self) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|message| message.get("method").is_some() && message.get("id").is_none())
            .collect()
    }

    /// The `notifications/progress` messages, in order.
    pub fn progress(&self) -> Vec<&Value> {
        self.notifications()
            .into_iter()
            .filter(|message| message["method"] == "notifications/progress")
            .collect()
    }
}

pub(super) fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
}

pub(super) fn is_response(message: &Value) -> bool {
    message.get("id").is_some()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// A `tools/call` whose response is still streaming. Dropping it closes the
/// HTTP connection, which on 2026-07-28 cancels the request.
pub struct OpenCall {
    /// The JSON-RPC id of the call.
    pub id: u64,
    /// HTTP status of the response.
    pub status: StatusCode,
    /// HTTP response headers.
    pub headers: HeaderMap,
    pub(super) events: Option<SseEvents>,
    pub(super) json: Option<Value>,
}

impl OpenCall {
    /// The next JSON-RPC message, or `None` when the response ended.
    pub async fn next_message(&mut self) -> Option<Value> {
        if let Some(json) = self.json.take() {
            return Some(json);
        }
        let events = self.events.as_mut()?;
        while let Some(event) = events.next().await {
            let Ok(event) = event else { return None };
            if let Some(message) = sse_message(&event) {
                return Some(message);
            }
        }
        None
    }

    /// Reads the remaining messages up to and including the final response.
    pub async fn finish(mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some(message) = self.next_message().await {
            let done = is_response(&message) && message["id"] == self.id;
            messages.push(message);
            if done {
                break;
            }
        }
        messages
    }
}

/// The JSON-RPC message an SSE event carries: its `data`, when that is JSON.
pub fn sse_message(event: &Sse) -> Option<Value> {
    event
        .data
        .as_deref()
        .and_then(|data| serde_json::from_str(data).ok())
}

/// Parses the SSE body of `response`, copying raw bytes into `raw` when given.
pub fn sse_events(
    response: reqwest::Response,
    raw: Option<Arc<Mutex<Vec<u8>>>>,
) -> impl Stream<Item = Result<Sse, sse_stream::Error>> + Send {
    let chunks = futures_util::stream::unfold(response, |mut response| async move {
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok::<Bytes, reqwest::Error>(chunk), response)),
            Ok(None) => None,
            Err(error) => Some((Err(error), response)),
        }
    })
    .inspect(move |chunk| {
        if let (Some(raw), Ok(chunk)) = (&raw, chunk) {
            raw.lock().expect("raw body lock").extend_from_slice(chunk);
        }
    });
    // Read as the SSE standard reads it, as the layer reads its inner
    // server's streams (`sse-stream`'s own reader refuses some of what the
    // standard takes, and a test must see every byte the layer relays).
    Events::new(StreamBody::new(chunks.map_ok(Frame::data)))
}

pub(super) async fn read_exchange(id: u64, response: reqwest::Response) -> Exchange {
    let status = response.status();
    let headers = response.headers().clone();
    if !content_type(&headers).starts_with("text/event-stream") {
        let body = response.text().await.unwrap_or_default();
        let messages = serde_json::from_str::<Value>(&body).into_iter().collect();
        return Exchange {
            id,
            status,
            headers,
            body,
            messages,
        };
    }
    let raw = Arc::new(Mutex::new(Vec::new()));
    let mut events = Box::pin(sse_events(response, Some(raw.clone())));
    let mut messages = Vec::new();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        let Some(message) = sse_message(&event) else {
            continue;
        };
        let done = is_response(&message) && message["id"] == id;
        messages.push(message);
        if done {
            break;
        }
    }
    drop(events);
    let body = String::from_utf8_lossy(&raw.lock().expect("raw body lock")).into_owned();
    Exchange {
        id,
        status,
        headers,
        body,
        messages,
    }
}
