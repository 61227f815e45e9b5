//! [`ResponseFuture`]: the future of one request through [`TasksService`].
//!
//! Three states. `Collect` reads a POST body that must be classified, then
//! hands it to dispatch, which picks the next state. `Inner` is the
//! pass-through path: the inner service's own future, polled in place, no
//! boxing. `Owned` is every path the layer answers or edits itself, boxed.
//!
//! [`TasksService`]: crate::TasksService

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use pin_project_lite::pin_project;
use tower_service::Service;

use super::dispatch;
use super::gather::Unread;
use super::state::{State, StateProj};
use crate::body::{BoxError, RequestBody, ResponseBody, passed};
use crate::observe;
use crate::wire::jsonrpc::Reply;

pin_project! {
    /// The response future of [`TasksService`](crate::TasksService).
    pub struct ResponseFuture<S, B, RB>
    where
        S: Service<Request<RequestBody<B>>>,
        B: Body,
        B::Error: Into<BoxError>,
    {
        #[pin]
        state: State<S, S::Future, B, RB, S::Error>,
    }
}

impl<S, B, RB> std::fmt::Debug for ResponseFuture<S, B, RB>
where
    S: Service<Request<RequestBody<B>>>,
    B: Body,
    B::Error: Into<BoxError>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<S, B, RB> ResponseFuture<S, B, RB>
where
    S: Service<Request<RequestBody<B>>>,
    B: Body,
    B::Error: Into<BoxError>,
{
    pub(crate) fn new(state: State<S, S::Future, B, RB, S::Error>) -> Self {
        Self { state }
    }
}

impl<S, B, RB> Future for ResponseFuture<S, B, RB>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    type Output = Result<Response<ResponseBody<RB>>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let next = match state.as_mut().project() {
                StateProj::Collect {
                    collect,
                    seen,
                    parts,
                    inner,
                    shared,
                } => {
                    let collected = ready!(collect.poll(cx));
                    match (collected, parts.take(), inner.take()) {
                        (Ok(bytes), Some(parts), Some(inner)) => {
                            dispatch::buffered(shared, inner, *seen, parts, bytes)
                        }
                        (Err(error), _, _) => {
                            let limit = shared.runtime.config.max_body_bytes;
                            State::reply(unreadable_body(error, limit))
                        }
                        _ => State::reply(Reply::internal(None, "request state lost")),
                    }
                }
                StateProj::Inner { future, keep_alive } => {
                    let response = ready!(future.poll(cx))?;
                    return Poll::Ready(Ok(passed(response, *keep_alive)));
                }
                StateProj::Owned { future } => return future.as_mut().poll(cx),
            };
            state.set(next);
        }
    }
}

fn unreadable_body(error: Unread, limit: usize) -> Reply {
    match error {
        Unread::TooLarge => {
            observe::events::refused("body_size", "request body over max_body_bytes");
            Reply::too_large(limit)
        }
        Unread::Failed(error) => {
            Reply::invalid_request(None, format!("The request body could not be read: {error}"))
        }
    }
}
