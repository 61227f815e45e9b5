//! Calling the inner service from background work, type-erased.

use std::marker::PhantomData;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use tower::ServiceExt;
use tower_service::Service;

use super::InnerFuture;
use crate::body::{BoxError, RequestBody};

/// Something that can send a request to the inner service.
pub(crate) trait CallInner: Send {
    /// Sends `request` once the service is ready.
    fn call(&mut self, request: Request<Bytes>) -> InnerFuture;
}

/// [`CallInner`] over a clonable tower service.
pub(crate) struct Caller<S, B> {
    service: S,
    _body: PhantomData<fn() -> B>,
}

impl<S, B> Caller<S, B> {
    pub(crate) fn boxed(service: S) -> Box<dyn CallInner>
    where
        Self: CallInner + 'static,
    {
        Box::new(Self {
            service,
            _body: PhantomData,
        })
    }
}

impl<S, B, RB> CallInner for Caller<S, B>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: Send + 'static,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    fn call(&mut self, request: Request<Bytes>) -> InnerFuture {
        let request = request.map(RequestBody::buffered);
        Box::pin(
            self.service
                .clone()
                .oneshot(request)
                .map(|result| match result {
                    Ok(response) => {
                        Ok(response.map(|body| body.map_err(Into::into).boxed_unsync()))
                    }
                    Err(error) => Err(error.into()),
                }),
        )
    }
}
