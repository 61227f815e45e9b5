//! One timed call of the SSE timing bench: when the response head and each
//! SSE event reached the client, counted from just before the request was
//! sent.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use crate::client::{sse_events, sse_message};
use crate::http_requests::Prepared;

/// What one call's client saw, and when.
#[derive(Clone, Debug)]
pub struct Arrivals {
    /// When the response head arrived.
    pub head: Duration,
    /// The response's content type.
    pub content_type: String,
    /// Each JSON-RPC message, in order: when it arrived and what it was.
    pub events: Vec<(Duration, String)>,
}

/// POSTs `request` to `url` and reads its answer: an SSE one up to the
/// response carrying the request's id, a JSON one whole (one message).
pub async fn timed_call(
    http: &reqwest::Client,
    url: &str,
    request: &Prepared,
) -> Result<Arrivals, String> {
    let mut post = http.post(url).body(request.body.clone());
    for (name, value) in &request.headers {
        post = post.header(name.as_str(), value.as_str());
    }
    let start = Instant::now();
    let response = post
        .send()
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    let head = start.elapsed();
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return Err(format!("{url}: HTTP {status} {content_type}: {body}"));
    }
    if !content_type.starts_with("text/event-stream") {
        let body = response.bytes().await;
        let message = body
            .ok()
            .and_then(|body| serde_json::from_slice::<Value>(&body).ok())
            .ok_or(format!("{url}: a {content_type} answer that is not JSON"))?;
        let events = vec![(start.elapsed(), describe(&message))];
        return Ok(Arrivals {
            head,
            content_type,
            events,
        });
    }
    let mut stream = std::pin::pin!(sse_events(response, None));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.map_err(|error| format!("{url}: reading SSE: {error}"))?;
        let Some(message) = sse_message(&event) else {
            continue;
        };
        events.push((start.elapsed(), describe(&message)));
        if message["id"] == request.id {
            break;
        }
    }
    Ok(Arrivals {
        head,
        content_type,
        events,
    })
}

/// A short name for a message: `progress 0.2 s`, `result`, `task handle
/// (working)`, `error -32603`, or its method.
fn describe(message: &Value) -> String {
    if message["method"] == "notifications/progress" {
        let progress = message["params"]["progress"].as_f64().unwrap_or(f64::NAN);
        return format!("progress {progress:.1} s");
    }
    if let Some(result) = message.get("result") {
        return match result["resultType"].as_str() {
            Some("task") => format!("task handle ({})", result["status"].as_str().unwrap_or("?")),
            _ => "result".to_owned(),
        };
    }
    if let Some(error) = message.get("error") {
        return format!("error {}", error["code"]);
    }
    message["method"].as_str().unwrap_or("message").to_owned()
}
