//! The server the gateway fronts: an HTTP upstream (`--upstream URL`,
//! through the reverse proxy) or a stdio server it starts (`-- COMMAND`),
//! as one tower service with one response body.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use mcp_tasks::body::{BoxBody, BoxError};
use mcp_tasks::proxy::Proxy;
use mcp_tasks::proxy::stdio::StdioUpstream;
use tower::Service;

/// The upstream.
#[derive(Clone)]
pub enum Upstream {
    /// An MCP server over Streamable HTTP.
    Http(Box<Proxy>),
    /// A stdio MCP server, run as a child process.
    Stdio(StdioUpstream),
}

impl<B> Service<Request<B>> for Upstream
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<BoxBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<BoxBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        match self {
            Self::Http(proxy) => {
                let answer = proxy.call(request);
                Box::pin(async move {
                    let response = answer.await?;
                    Ok(response.map(|body| body.map_err(Into::into).boxed_unsync()))
                })
            }
            Self::Stdio(stdio) => stdio.call(request),
        }
    }
}
