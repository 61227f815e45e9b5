//! The answers the proxy gives itself when the upstream does not answer.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{Either, Full};

use super::ProxyBody;

/// JSON-RPC's "internal error": the request may have been valid, the server
/// behind could not answer it.
const INTERNAL_ERROR: i32 = -32603;

/// JSON-RPC's "invalid request": the client's request could not be taken.
const INVALID_REQUEST: i32 = -32600;

/// Whether `error` came from the client's request body (it stopped
/// arriving before the body read timeout, or broke off), not the upstream.
pub(super) fn client_body_failed(error: &hyper_util::client::legacy::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        // hyper's "user" errors with a cause are those of the body it was
        // given to send (a dropped dispatch task, say, has none).
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(|error| error.is_user() && std::error::Error::source(error).is_some())
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// `502`: the upstream could not be reached or broke the connection. The
/// cause goes to the log; the client learns only that the upstream failed.
/// `400` when it was the client's request body that failed, as for a body
/// the layer reads itself.
pub(super) fn bad_gateway(error: &hyper_util::client::legacy::Error) -> Response<ProxyBody> {
    if client_body_failed(error) {
        tracing::info!(error = %error_chain(error), "the request body could not be read");
        let message =
            "The request body could not be read (it did not arrive in time, or broke off)";
        return coded(StatusCode::BAD_REQUEST, INVALID_REQUEST, message);
    }
    if error.is_connect() {
        tracing::warn!(error = %error_chain(error), "upstream unreachable");
        let mut response = answer(
            StatusCode::BAD_GATEWAY,
            "the upstream MCP server is unreachable",
        );
        // Nothing was sent: a task's call waits for the upstream instead.
        response.extensions_mut().insert(mcp_tasks::Unreached);
        response
    } else {
        tracing::warn!(error = %error_chain(error), "upstream request failed");
        answer(
            StatusCode::BAD_GATEWAY,
            "the upstream MCP server failed to answer",
        )
    }
}

/// `504`: no response head within the header timeout.
pub(super) fn gateway_timeout() -> Response<ProxyBody> {
    answer(
        StatusCode::GATEWAY_TIMEOUT,
        "the upstream MCP server did not answer in time",
    )
}

/// A JSON-RPC error response with `id: null`: the proxy does not read the
/// request body, so it cannot know the id.
fn answer(status: StatusCode, message: &str) -> Response<ProxyBody> {
    coded(status, INTERNAL_ERROR, message)
}

/// [`answer`] with the JSON-RPC error `code`.
fn coded(status: StatusCode, code: i32, message: &str) -> Response<ProxyBody> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(body.to_string()))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The error and its sources, `: `-separated (hyper's own message is only
/// the outermost, e.g. "client error (Connect)").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
