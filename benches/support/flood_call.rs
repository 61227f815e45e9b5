//! One call of the flood bench: POST a prepared request, read the answer
//! (JSON, or SSE up to the response with the call's id) and classify it.

use std::sync::OnceLock;

use futures_util::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use crate::flood_report::Outcome;

/// The first transport error seen, to show what kind it was.
pub static FIRST_TRANSPORT_ERROR: OnceLock<String> = OnceLock::new();

/// One call: POST, then read the answer (JSON, or SSE up to the response
/// with this id) and classify it.
pub async fn call(
    http: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    body: String,
    id: u64,
) -> Outcome {
    let response = match http
        .post(url)
        .headers(headers.clone())
        .body(body)
        .send()
        .await
    {
        Ok(response) => response,
        Err(error) => return transport(error),
    };
    let status = response.status().as_u16();
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/event-stream"));
    let message = if sse {
        match sse_response(response, id).await {
            Ok(message) => message,
            Err(outcome) => return outcome,
        }
    } else {
        match response.bytes().await {
            Ok(body) => serde_json::from_slice::<Value>(&body).ok(),
            Err(error) => return transport(error),
        }
    };
    match message {
        Some(message) => classify(&message),
        None => Outcome::Unreadable(status),
    }
}

/// The JSON-RPC response with `id` in an SSE body, if it arrives; `Err`
/// when reading the body failed.
async fn sse_response(response: reqwest::Response, id: u64) -> Result<Option<Value>, Outcome> {
    let chunks = futures_util::stream::unfold(response, |mut response| async move {
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), response)),
            Ok(None) => None,
            Err(error) => Some((Err(error), response)),
        }
    });
    let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(chunks));
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(sse_stream::Error::Body(error)) => return Err(transport(error)),
            Err(_) => return Ok(None),
        };
        let Some(message) = event
            .data
            .as_deref()
            .and_then(|data| serde_json::from_str::<Value>(data).ok())
        else {
            continue;
        };
        let response = message.get("result").is_some() || message.get("error").is_some();
        if message["id"] == id && response {
            return Ok(Some(message));
        }
    }
    Ok(None)
}

fn classify(message: &Value) -> Outcome {
    if let Some(error) = message.get("error") {
        return Outcome::RpcError(error["code"].as_i64().unwrap_or(0));
    }
    match message.get("result") {
        Some(result) if result["resultType"] == "task" => Outcome::Parked,
        Some(_) => Outcome::Synchronous,
        None => Outcome::Unreadable(200),
    }
}

fn transport(error: impl std::fmt::Debug) -> Outcome {
    let _ = FIRST_TRANSPORT_ERROR.set(format!("{error:?}"));
    Outcome::Transport
}
