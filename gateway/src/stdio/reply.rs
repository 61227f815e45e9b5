//! The HTTP responses the bridge makes itself.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use mcp_tasks::body::BoxBody;

pub(super) fn json(status: StatusCode, body: Bytes) -> Response<BoxBody> {
    let mut response = Response::new(BoxBody::new(
        Full::new(body).map_err(|never| match never {}),
    ));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub(super) fn status(status: StatusCode) -> Response<BoxBody> {
    let mut response = Response::new(BoxBody::new(
        Full::new(Bytes::new()).map_err(|never| match never {}),
    ));
    *response.status_mut() = status;
    response
}
