//! The bridge's own exchanges with the upstream, and the answers it makes
//! itself: a request of its own, the first response of an answer (JSON or
//! SSE), a JSON reply.

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use mcp_tasks::wire::sse::Events;

use super::{Plain, full};
use crate::generation::message::{Kind, Message};
use mcp_tasks::MODERN_VERSION;

/// Whether `response` is an SSE stream.
pub(crate) fn is_sse<B>(response: &Response<B>) -> bool {
    mcp_tasks::wire::sse::is_sse(response.headers())
}

/// The first JSON-RPC response in `response` (JSON, or the first response
/// event of an SSE stream), read up to `max` bytes.
pub(crate) async fn first_response(response: Response<Plain>, max: usize) -> Result<Bytes, String> {
    if !is_sse(&response) {
        let body = Limited::new(response.into_body(), max);
        return match body.collect().await {
            Ok(body) => Ok(body.to_bytes()),
            Err(error) => Err(format!("its answer could not be read: {error}")),
        };
    }
    let mut events = std::pin::pin!(Events::new(limited(response.into_body(), max)));
    while let Some(event) = events.next().await {
        let event = event.map_err(|error| format!("its event stream broke: {error}"))?;
        let Some(data) = event.data else { continue };
        let is_response =
            Message::read(data.as_bytes()).is_some_and(|m| m.kind() == Kind::Response);
        if is_response {
            return Ok(Bytes::from(data));
        }
    }
    Err("its event stream ended without an answer".to_owned())
}

/// `body` cut at `max` bytes, with an error type the SSE reader takes.
pub(crate) fn limited(body: Plain, max: usize) -> impl Body<Data = Bytes, Error = std::io::Error> {
    Limited::new(body, max).map_err(std::io::Error::other)
}

/// A JSON answer made here.
pub(crate) fn error_reply(status: StatusCode, body: Bytes) -> Response<Plain> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A request of the bridge's own to the upstream.
pub(crate) fn own_request(body: String, headers: &[(&'static str, HeaderValue)]) -> Request<Plain> {
    let mut request = Request::new(full(Bytes::from(body)));
    *request.method_mut() = Method::POST;
    let map = request.headers_mut();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    for (name, value) in headers {
        map.insert(*name, value.clone());
    }
    request
}

/// A client's request body, read whole up to `max` bytes, or the `413`
/// that refuses it.
pub(crate) async fn read_request(body: Plain, max: usize) -> Result<Bytes, Response<Plain>> {
    match Limited::new(body, max).collect().await {
        Ok(body) => Ok(body.to_bytes()),
        Err(_) => {
            let why = "The request body is too large or broken";
            let reply = crate::generation::message::error_response("null", -32600, why);
            Err(error_reply(StatusCode::PAYLOAD_TOO_LARGE, reply))
        }
    }
}

/// The bridge's own 2026-07-28 `server/discover`: the generation probe,
/// and an `initialize` answer for a 2026-07-28-only upstream; with the
/// `authorization` of the client it is sent for, if any.
pub(crate) fn discover_request(authorization: Option<&HeaderValue>) -> Request<Plain> {
    let discover = format!(
        r#"{{"jsonrpc":"2.0","id":"mcp-tasks-gateway-discover","method":"server/discover","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN_VERSION}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let headers = [
        (
            "mcp-protocol-version",
            HeaderValue::from_static(MODERN_VERSION),
        ),
        ("mcp-method", HeaderValue::from_static("server/discover")),
    ];
    let mut request = own_request(discover, &headers);
    if let Some(authorization) = authorization {
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, authorization.clone());
    }
    request
}
