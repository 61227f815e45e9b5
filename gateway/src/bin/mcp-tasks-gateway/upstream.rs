//! The server the gateway fronts: an HTTP upstream (`--upstream URL`,
//! through the reverse proxy) or a stdio server it starts (`-- COMMAND`),
//! as one tower service with one response body.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use mcp_tasks::body::{BoxBody, BoxError};
use mcp_tasks_gateway::GenerationBridge;
use mcp_tasks_gateway::stdio::StdioUpstream;
use tower::Service;

/// Connects to the HTTP upstream at `url` once, at start, within
/// `timeout`: a clear warning when it cannot be reached (calls get 502
/// until it can), or, when `required`, the error that stops the start.
/// Only a TCP connection: no MCP request is sent, so the upstream sees no
/// session or call of the gateway's.
pub async fn probe(url: &str, timeout: Option<Duration>, required: bool) -> Result<(), String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("--upstream {url}: {e}"))?;
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let connect = tokio::net::TcpStream::connect((host, port));
    let connected = match timeout {
        Some(limit) => tokio::time::timeout(limit, connect)
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "no connection within the connect timeout",
                ))
            }),
        None => connect.await,
    };
    match connected {
        Ok(_) => {
            tracing::info!(upstream = url, "upstream reachable");
            Ok(())
        }
        Err(error) if required => Err(format!(
            "--upstream {url} cannot be reached: {error} (--require-upstream)"
        )),
        Err(error) => {
            tracing::warn!(
                upstream = url,
                %error,
                "the upstream cannot be reached now: calls answer 502 until it can (--require-upstream refuses to start instead)"
            );
            Ok(())
        }
    }
}

/// The upstream.
#[derive(Clone)]
pub enum Upstream {
    /// An MCP server over Streamable HTTP, 2026-07-28 clients bridged
    /// when it speaks an older generation.
    Http(Box<GenerationBridge>),
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
            Self::Http(bridge) => bridge.call(request),
            Self::Stdio(stdio) => stdio.call(request),
        }
    }
}
