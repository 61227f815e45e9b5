//! The states of a [`ResponseFuture`](crate::ResponseFuture), and the two
//! that are built before dispatch: reading a body, and a reply of the
//! layer's own.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::Response;
use http::request::Parts;
use http_body::Body;
use pin_project_lite::pin_project;

use super::classify::Seen;
use super::gather::Gather;
use super::shared::Shared;
use crate::body::{BoxError, ResponseBody, reply_response};
use crate::wire::jsonrpc::Reply;

/// A boxed future of a path the layer owns.
pub(crate) type OwnedFuture<B, E> =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody<B>>, E>> + Send>>;

pin_project! {
    #[project = StateProj]
    pub(crate) enum State<S, F, B, RB, E>
    where
        B: Body,
        B::Error: Into<BoxError>,
    {
        Collect {
            #[pin]
            collect: Gather<B>,
            seen: Seen,
            parts: Option<Parts>,
            inner: Option<S>,
            shared: Arc<Shared>,
        },
        Inner { #[pin] future: F, keep_alive: Duration },
        Owned { future: OwnedFuture<RB, E> },
    }
}

impl<S, F, B, RB, E> State<S, F, B, RB, E>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    /// Reads `body` (up to `max_body_bytes`), then dispatches.
    pub(crate) fn collect(
        shared: Arc<Shared>,
        inner: S,
        seen: Seen,
        parts: Parts,
        body: B,
    ) -> Self {
        State::Collect {
            collect: Gather::new(body, shared.runtime.config.max_body_bytes),
            seen,
            parts: Some(parts),
            inner: Some(inner),
            shared,
        }
    }

    /// The layer's answer `reply`.
    pub(crate) fn reply(reply: Reply) -> Self
    where
        RB: Send + 'static,
        E: Send + 'static,
    {
        State::Owned {
            future: Box::pin(async move { Ok(reply_response(reply)) }),
        }
    }
}
