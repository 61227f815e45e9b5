//! The bounds every path of the layer puts on the inner service and the
//! bodies, written once.
//!
//! Rust has no stable trait aliases; a trait with the bounds as supertraits
//! and a blanket impl is the stable form. Bounds on associated types written
//! in the supertrait position (`Future: Send`) are implied wherever the
//! trait is, so a `where` clause needs only `S: Inner<B, RB>`.
//!
//! The public impls of [`TasksService`](crate::TasksService) and its
//! [`ResponseFuture`](crate::ResponseFuture) spell the same bounds out, so
//! that their documentation shows them.

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use tower_service::Service;

use crate::body::{BoxError, RequestBody};

/// An inner service the layer can call, clone into background work and
/// re-issue calls to.
pub(crate) trait Inner<B, RB>:
    Service<
        Request<RequestBody<B>>,
        Response = Response<RB>,
        Future: Send + 'static,
        Error: Into<BoxError> + Send + 'static,
    > + Clone
    + Send
    + 'static
{
}

impl<S, B, RB> Inner<B, RB> for S
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
{
}

/// A body of bytes the layer can read, relay or move to another task: a
/// client's request body, or an inner service's response body.
pub(crate) trait Payload:
    Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static
{
}

impl<T> Payload for T
where
    T: Body<Data = Bytes> + Send + 'static,
    T::Error: Into<BoxError>,
{
}
