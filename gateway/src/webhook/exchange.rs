//! The POST on the delivery's own connection, and the answer read up to
//! its bound.
//!
//! | Case | Outcome |
//! |------|---------|
//! | the request | `POST` to the URL's path and query, with exactly the delivery's headers and body, plus `Host` (hyper adds `Content-Length`) |
//! | any status, 3xx included | returned as it is, with its body: no redirect is followed |
//! | a `Content-Length` above [`Delivery::max_answer`] | [`DeliveryError::AnswerTooLarge`] before a byte of the body is read |
//! | a body that grows past [`Delivery::max_answer`] (chunked, or a length that lies) | [`DeliveryError::AnswerTooLarge`] as soon as it does; the connection is closed, nothing more is read |
//! | the connection fails before the answer ends | [`DeliveryError::Connect`] |
//! | the delivery ends (answered, failed, or dropped by its timeout) | the connection is closed: its task is aborted with it |

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_tasks::webhook::{Delivered, Delivery, DeliveryError};
use tokio::task::JoinHandle;

use super::connect::{Stream, Target};
use super::unusable;

/// Sends `delivery` on `stream` and reads the answer.
pub(super) async fn post(
    stream: Stream,
    target: &Target,
    delivery: Delivery,
) -> Result<Delivered, DeliveryError> {
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
            .await
            .map_err(|_| DeliveryError::Connect)?;
    let _connection = Aborted(tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "webhook connection ended with an error");
        }
    }));
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(target.path.as_str())
        .body(Full::new(delivery.body))
        .map_err(|_| unusable("not a request target"))?;
    *request.headers_mut() = delivery.headers;
    let host = HeaderValue::from_str(&target.authority).map_err(|_| unusable("not a host"))?;
    request.headers_mut().insert(HOST, host);
    let response = sender.send_request(request).await.map_err(|error| {
        tracing::debug!(%error, "webhook request got no answer");
        DeliveryError::Connect
    })?;
    let status = response.status();
    if declared_length(response.headers()).is_some_and(|length| length > delivery.max_answer as u64)
    {
        return Err(DeliveryError::AnswerTooLarge);
    }
    let body = read_bounded(response.into_body(), delivery.max_answer).await?;
    Ok(Delivered { status, body })
}

/// The answer's `Content-Length`, when it has a readable one.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The body, or [`DeliveryError::AnswerTooLarge`] as soon as it passes
/// `max` bytes (what was read is dropped, the rest is never read).
async fn read_bounded(mut body: Incoming, max: usize) -> Result<Bytes, DeliveryError> {
    let mut answer = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| {
            tracing::debug!(%error, "webhook answer cut short");
            DeliveryError::Connect
        })?;
        if let Ok(data) = frame.into_data() {
            if data.len() > max - answer.len() {
                return Err(DeliveryError::AnswerTooLarge);
            }
            answer.extend_from_slice(&data);
        }
    }
    Ok(answer.freeze())
}

/// A task aborted when this is dropped: the connection of one delivery,
/// which must not outlive it.
struct Aborted(JoinHandle<()>);

impl Drop for Aborted {
    fn drop(&mut self) {
        self.0.abort();
    }
}
