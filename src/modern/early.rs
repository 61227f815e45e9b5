//! A long synchronous call answered early: when the inner server has not
//! sent its response head after `keep_alive`, the layer sends one itself,
//! an SSE stream that carries a comment every `keep_alive` until the inner
//! server answers, then the answer. Proxies that cut a connection idle for
//! 30 or 60 s keep it; many servers (rmcp among them) send no head before
//! their first message.
//!
//! | The inner server then answers… | The client gets, on the stream |
//! |--------------------------------|--------------------------------|
//! | SSE                            | its events, as they come, with comments in its quiet gaps |
//! | a JSON body (any status)       | that JSON-RPC message as one event |
//! | a body that is not JSON-RPC, or nothing (the inner service fails) | a JSON-RPC error for the call (`-32603`) saying so |
//!
//! Only for a `tools/call` that the layer forwards as it is (a 2026-07-28
//! client that did not declare the tasks extension, a 2025-11-25 call
//! without `params.task`) and whose client accepts SSE; a call answered
//! within `keep_alive` is untouched.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Limited, StreamBody};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::body::{BoxBody, BoxError, ResponseBody, passed};
use crate::wire::is_content_type;
use crate::wire::jsonrpc::Reply;
use crate::wire::sse::{self, KEEP_ALIVE};

/// The inner server's answer to `request` (the call as forwarded), or,
/// once `keep_alive` passed without its head, a stream of the layer's that
/// carries it (see the module docs). `max` bounds a JSON answer read into
/// an event.
pub(crate) async fn answer<F, RB, E>(
    future: F,
    keep_alive: Duration,
    request: Bytes,
    max: usize,
) -> Result<Response<ResponseBody<RB>>, E>
where
    F: Future<Output = Result<Response<RB>, E>> + Send + 'static,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
    E: Into<BoxError> + Send + 'static,
{
    let mut future = Box::pin(future);
    match tokio::time::timeout(keep_alive, future.as_mut()).await {
        Ok(answered) => Ok(passed(answered?, keep_alive)),
        Err(_) => {
            let future = async move { future.await.map_err(Into::into) };
            let body = stream(Box::pin(future), keep_alive, request, max);
            let mut response = Response::new(ResponseBody::boxed(body));
            sse::head(response.headers_mut());
            Ok(response)
        }
    }
}

/// The inner response future, its error boxed.
type Waiting<RB> = Pin<Box<dyn Future<Output = Result<Response<RB>, BoxError>> + Send>>;

/// Where the stream is.
enum Step<RB> {
    /// Comments until the inner server answers.
    Waiting(Waiting<RB>, tokio::time::Interval),
    /// Its SSE body, relayed.
    Relaying(Pin<Box<ResponseBody<RB>>>),
    Done,
}

fn stream<RB>(future: Waiting<RB>, every: Duration, request: Bytes, max: usize) -> BoxBody
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let start = tokio::time::Instant::now() + every;
    let first = Bytes::from_static(KEEP_ALIVE);
    let beats = tokio::time::interval_at(start, every);
    let steps = futures_util::stream::unfold(Step::Waiting(future, beats), move |step| {
        let request = request.clone();
        async move {
            match step {
                Step::Waiting(mut future, mut beats) => {
                    let answered = tokio::select! {
                        answered = future.as_mut() => answered,
                        _ = beats.tick() => {
                            return Some((Bytes::from_static(KEEP_ALIVE), Step::Waiting(future, beats)));
                        }
                    };
                    let response = match answered {
                        Ok(response) => response,
                        Err(error) => {
                            let why = format!("The server failed to answer: {error}");
                            return Some((failed(&request, &why), Step::Done));
                        }
                    };
                    if sse::is_sse(response.headers()) {
                        let body = ResponseBody::beating(response.into_body(), every);
                        return Some((Bytes::new(), Step::Relaying(Box::pin(body))));
                    }
                    Some((one_event(response, &request, max).await, Step::Done))
                }
                Step::Relaying(mut body) => match body.frame().await {
                    Some(Ok(frame)) => {
                        Some((frame.into_data().unwrap_or_default(), Step::Relaying(body)))
                    }
                    Some(Err(error)) => {
                        tracing::debug!(%error, "the inner SSE answer broke");
                        None
                    }
                    None => None,
                },
                Step::Done => None,
            }
        }
    });
    let frames = futures_util::stream::once(async move { first })
        .chain(steps)
        .filter(|bytes| std::future::ready(!bytes.is_empty()))
        .map(|bytes| Ok::<_, BoxError>(Frame::data(bytes)));
    BoxBody::new(StreamBody::new(frames))
}

/// A JSON answer (any status) as one event; anything else as an error.
async fn one_event<RB>(response: Response<RB>, request: &[u8], max: usize) -> Bytes
where
    RB: Body<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    let status = response.status();
    let json = is_content_type(response.headers(), "application/json");
    let body = match Limited::new(response.into_body(), max).collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) => {
            return failed(
                request,
                &format!("The server's answer was unreadable: {error}"),
            );
        }
    };
    match serde_json::from_slice::<Box<RawValue>>(&body) {
        // An event's data is one line here: a pretty-printed answer is
        // written again on one.
        Ok(message) if json && message.get().starts_with('{') => match body.contains(&b'\n') {
            false => sse::event(&body),
            true => serde_json::from_slice::<serde_json::Value>(&body)
                .map(|value| sse::event(value.to_string().as_bytes()))
                .unwrap_or_else(|_| failed(request, "The server's answer was unreadable")),
        },
        _ => failed(
            request,
            &format!("The server answered HTTP {status} with no JSON-RPC message"),
        ),
    }
}

/// A JSON-RPC error for the call `request`, as one event.
fn failed(request: &[u8], why: &str) -> Bytes {
    #[derive(Deserialize)]
    struct Id {
        id: Option<Box<RawValue>>,
    }
    let id = serde_json::from_slice::<Id>(request)
        .ok()
        .and_then(|id| id.id);
    sse::event(&Reply::internal(id.as_deref(), why).body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_an_error_event_for_the_call() {
        let event = failed(
            br#"{"jsonrpc":"2.0","id":"c-7","method":"tools/call"}"#,
            "gone",
        );
        let text = std::str::from_utf8(&event).unwrap();
        let data = text.strip_prefix("data: ").unwrap().trim_end();
        let message: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(message["id"], "c-7");
        assert_eq!(message["error"]["code"], -32603);
        assert!(text.ends_with("\n\n"));
    }
}
