//! A reverse proxy to an MCP server over HTTP, as an ordinary tower service.
//!
//! [`Proxy`] forwards every request to one upstream URL and streams both
//! bodies without buffering: an SSE answer reaches the client event by event,
//! as the upstream flushes it. It is what `mcp-tasks-gateway` puts inside
//! [`TasksLayer`](mcp_tasks::TasksLayer), so that a server in any language gets
//! tasks:
//!
//! ```no_run
//! use mcp_tasks_gateway::proxy::Proxy;
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//! use tower::ServiceBuilder;
//!
//! # fn build() -> Result<(), mcp_tasks_gateway::proxy::ProxyError> {
//! let upstream = Proxy::builder("http://127.0.0.1:8000/mcp")?.build();
//! let app = ServiceBuilder::new()
//!     .layer(TasksLayer::new(MemoryTaskStore::new()))
//!     .service(upstream);
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! What crosses the proxy:
//!
//! - the method, the body and every end-to-end header, `Mcp-Session-Id`,
//!   `Last-Event-ID`, `MCP-Protocol-Version` and the other `Mcp-*` headers
//!   among them; hop-by-hop headers (`Connection` and those it names,
//!   `Keep-Alive`, `TE`, `Upgrade`, ...) are dropped both ways;
//! - `Forwarded`, `X-Forwarded-For`, `X-Forwarded-Host` and
//!   `X-Forwarded-Proto`, appended, when the request carries the client's
//!   address as axum's [`ConnectInfo`](axum::extract::ConnectInfo);
//! - `Authorization`, unless [`ProxyBuilder::forward_authorization`] is off.
//!
//! An upstream that cannot be reached, fails, or sends no response head
//! within the header timeout is answered here: `502 Bad Gateway` or
//! `504 Gateway Timeout` with a JSON-RPC error body, never a hang. The
//! details go to the log, not to the client.
//!
//! Each request to the upstream is counted by its answer's status or its
//! failure, timed to its response head, and counted in flight until then;
//! the open connections are counted too ([`metrics`]).
//!
//! Connections to the upstream are pooled (HTTP/1.1 keep-alive). Only
//! `http://` upstreams are supported: the upstream is expected on the same
//! host or network, and TLS is for the side facing clients.

mod bounded;
mod connections;
mod errors;
mod headers;

pub use bounded::{StreamTimedOut, UpstreamBody};

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Request, Response, Uri, Version};
use http_body::Body;
use http_body_util::{BodyExt, Either, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tower_service::Service;

use self::connections::Counting;
use crate::metrics::Sent;
use mcp_tasks::body::{BoxBody, BoxError};

/// The response body of [`Proxy`]: the upstream's body, streamed (an SSE
/// answer to a POST cut at its request's time limit), or a JSON-RPC error
/// made here.
pub type ProxyBody = Either<UpstreamBody, Full<Bytes>>;

/// An upstream URL that [`Proxy::builder`] cannot use.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// Not a valid absolute URL.
    #[error("upstream URL {url:?} is not a valid absolute URL: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A scheme other than `http`.
    #[error("upstream URL {0:?}: only http:// upstreams are supported")]
    UnsupportedScheme(String),
}

/// Where requests go, and how.
#[derive(Debug)]
struct Target {
    authority: Authority,
    path_and_query: PathAndQuery,
    has_query: bool,
    header_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    forward_authorization: bool,
}

impl Target {
    /// The header timeout of a request with these headers: a `tools/call`,
    /// or one that names no method, may run as long as a tool; any other
    /// gets the shorter one.
    fn timeout_for(&self, headers: &http::HeaderMap) -> Option<Duration> {
        match headers.get("mcp-method") {
            Some(method) if method != "tools/call" => self.request_timeout,
            _ => self.header_timeout,
        }
    }

    /// The upstream URI for a request the client sent to `uri`: the
    /// upstream's path, with the client's query when the upstream URL has
    /// none.
    fn uri_for(&self, uri: &Uri) -> Uri {
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(Scheme::HTTP);
        parts.authority = Some(self.authority.clone());
        parts.path_and_query = Some(match uri.query() {
            Some(query) if !self.has_query => format!("{}?{query}", self.path_and_query.path())
                .parse()
                .unwrap_or_else(|_| self.path_and_query.clone()),
            _ => self.path_and_query.clone(),
        });
        Uri::from_parts(parts).unwrap_or_else(|_| Uri::from_static("/"))
    }
}

/// Settings for a [`Proxy`], from [`Proxy::builder`].
#[derive(Debug)]
pub struct ProxyBuilder {
    authority: Authority,
    path_and_query: PathAndQuery,
    has_query: bool,
    connect_timeout: Option<Duration>,
    header_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    forward_authorization: bool,
    pool_idle_timeout: Duration,
    max_idle_per_host: usize,
}

impl ProxyBuilder {
    /// How long connecting to the upstream may take (default 5 s); then
    /// `502`.
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long the upstream may take to send its response head (default
    /// 30 min, the layer's default `max_runtime`); then `504`.
    ///
    /// An upstream that answers a tool call with JSON sends its head only
    /// when the tool is done, so this bounds a tool's run time too; one
    /// that answers with SSE sends it at once.
    pub fn header_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// How long the upstream may take to send the response head of a
    /// request whose `Mcp-Method` names anything but `tools/call` (default
    /// 60 s); then `504`. Such requests do not run tools, so an upstream
    /// that hangs on one is not kept waiting for as long as a tool may run.
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Whether the client's `Authorization` header goes upstream (default:
    /// yes).
    pub fn forward_authorization(mut self, forward: bool) -> Self {
        self.forward_authorization = forward;
        self
    }

    /// How long an idle pooled connection is kept (default 4 s, below the
    /// 5 s keep-alive of uvicorn and Node: a connection the upstream closes
    /// just as a request is written on it fails that request), and how many
    /// are kept at most (default 64).
    pub fn pool(mut self, idle_timeout: Duration, max_idle: usize) -> Self {
        self.pool_idle_timeout = idle_timeout;
        self.max_idle_per_host = max_idle;
        self
    }

    /// The proxy. Needs a Tokio runtime when it serves requests.
    pub fn build(self) -> Proxy {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(self.connect_timeout);
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(self.pool_idle_timeout)
            .pool_max_idle_per_host(self.max_idle_per_host)
            .build(Counting(connector));
        Proxy {
            client,
            target: Arc::new(Target {
                authority: self.authority,
                path_and_query: self.path_and_query,
                has_query: self.has_query,
                header_timeout: self.header_timeout,
                request_timeout: self.request_timeout,
                forward_authorization: self.forward_authorization,
            }),
        }
    }
}

/// A tower service that forwards requests to one upstream MCP server; see
/// the [module docs](self).
#[derive(Clone, Debug)]
pub struct Proxy {
    client: Client<Counting, BoxBody>,
    target: Arc<Target>,
}

impl Proxy {
    /// Starts building a proxy to `upstream`, an `http://` URL such as
    /// `http://127.0.0.1:8000/mcp`.
    ///
    /// ```
    /// use mcp_tasks_gateway::proxy::Proxy;
    ///
    /// assert!(Proxy::builder("http://127.0.0.1:8000/mcp").is_ok());
    /// assert!(Proxy::builder("https://example.com/mcp").is_err());
    /// assert!(Proxy::builder("not a url").is_err());
    /// ```
    pub fn builder(upstream: &str) -> Result<ProxyBuilder, ProxyError> {
        let invalid = |reason: &str| ProxyError::InvalidUrl {
            url: upstream.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = upstream
            .parse()
            .map_err(|e: http::uri::InvalidUri| invalid(&e.to_string()))?;
        let parts = uri.into_parts();
        match parts.scheme {
            Some(scheme) if scheme == Scheme::HTTP => {}
            Some(_) => return Err(ProxyError::UnsupportedScheme(upstream.to_owned())),
            None => return Err(invalid("no scheme (expected http://HOST:PORT/PATH)")),
        }
        let authority = parts.authority.ok_or_else(|| invalid("no host"))?;
        let path_and_query = parts
            .path_and_query
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        Ok(ProxyBuilder {
            authority,
            has_query: path_and_query.query().is_some(),
            path_and_query,
            connect_timeout: Some(Duration::from_secs(5)),
            header_timeout: mcp_tasks::TasksConfig::default().max_runtime(),
            request_timeout: Some(Duration::from_secs(60)),
            forward_authorization: true,
            pool_idle_timeout: Duration::from_secs(4),
            max_idle_per_host: 64,
        })
    }
}

impl<B> Service<Request<B>> for Proxy
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let (mut parts, body) = request.into_parts();
        let client_addr = parts
            .extensions
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .map(|info| info.0);
        let header_timeout = self.target.timeout_for(&parts.headers);
        let post = parts.method == http::Method::POST;
        headers::prepare_request(
            &mut parts.headers,
            client_addr,
            self.target.forward_authorization,
        );
        parts.uri = self.target.uri_for(&parts.uri);
        parts.version = Version::HTTP_11;
        parts.extensions = http::Extensions::new();
        let body = BoxBody::new(body.map_err(Into::into));
        let pending = self.client.request(Request::from_parts(parts, body));
        let sent = Sent::now();
        Box::pin(async move {
            let answer = match header_timeout {
                Some(limit) => match tokio::time::timeout(limit, pending).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        tracing::warn!(?limit, "upstream sent no response head in time");
                        sent.failed("timeout");
                        return Ok(errors::gateway_timeout());
                    }
                },
                None => pending.await,
            };
            Ok(match answer {
                Ok(response) => {
                    let started = tokio::time::Instant::from_std(sent.at());
                    sent.answered(response.status());
                    let (mut parts, body) = response.into_parts();
                    headers::strip_hop_by_hop(&mut parts.headers);
                    let sse = post && mcp_tasks::wire::sse::is_sse(&parts.headers);
                    let body = match header_timeout {
                        Some(limit) if sse => UpstreamBody::until(body, started + limit, limit),
                        _ => UpstreamBody::open(body),
                    };
                    Response::from_parts(parts, Either::Left(body))
                }
                Err(error) => {
                    sent.failed(if error.is_connect() {
                        "connect"
                    } else if errors::client_body_failed(&error) {
                        "client_body"
                    } else {
                        "broken"
                    });
                    errors::bad_gateway(&error)
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(upstream: &str) -> Target {
        let built = Proxy::builder(upstream).unwrap();
        Target {
            authority: built.authority,
            has_query: built.has_query,
            path_and_query: built.path_and_query,
            header_timeout: None,
            request_timeout: None,
            forward_authorization: true,
        }
    }

    #[test]
    fn requests_go_to_the_upstream_path() {
        let target = target("http://127.0.0.1:9/inner/mcp");
        let uri = target.uri_for(&"/mcp".parse().unwrap());
        assert_eq!(uri.to_string(), "http://127.0.0.1:9/inner/mcp");
    }

    #[test]
    fn the_client_query_is_kept_unless_the_upstream_has_one() {
        let open = target("http://127.0.0.1:9/mcp");
        let uri = open.uri_for(&"/mcp?session=1".parse().unwrap());
        assert_eq!(uri.to_string(), "http://127.0.0.1:9/mcp?session=1");
        let fixed = target("http://127.0.0.1:9/mcp?k=v");
        let uri = fixed.uri_for(&"/mcp?session=1".parse().unwrap());
        assert_eq!(uri.to_string(), "http://127.0.0.1:9/mcp?k=v");
    }

    #[test]
    fn a_bare_host_means_the_root_path() {
        let target = target("http://localhost:8000");
        let uri = target.uri_for(&"/mcp".parse().unwrap());
        assert_eq!(uri.to_string(), "http://localhost:8000/");
    }
}
