//! The examples' HTTP server: what a server facing clients needs besides
//! the MCP service, so that half-sent requests cannot hold it forever.
//!
//! | Limit               | Value  | Why                                                      |
//! |---------------------|--------|----------------------------------------------------------|
//! | header read timeout | 10 s   | a connection that never finishes its headers, or sends nothing at all, is closed; idle keep-alive connections too |
//! | body read timeout   | 10 s   | the whole body must arrive within it, counted from the head: a body trickled a byte at a time fails instead of holding a connection for hours |
//! | connections         | 512    | more wait in the accept queue instead of costing memory, and descriptors stay below the usual 1024 |
//! | connections of one client address (an IPv6 /64) | 128 | one client cannot take every slot (with long synchronous calls, say) and lock the others out; one more is answered `429` with `Retry-After` and closed. Behind a reverse proxy every client has its address: raise it there |
//! | `TCP_NODELAY`       | on     | an SSE answer ends with a small write of its own (the last chunk); Nagle's algorithm would hold it until the client's delayed ACK, some 40 ms on Linux |
//!
//! HTTP/1.1 only: the Streamable HTTP clients in use speak it, and it keeps
//! one timer in charge of every connection from its first byte (the
//! HTTP/1-or-2 detection of an auto server reads without any).
//!
//! On shutdown it stops accepting, lets open requests finish, and closes
//! idle connections (hyper-util's graceful shutdown).
//!
//! Each request carries the client's address as axum's `ConnectInfo`.
//!
//! `mcp-tasks-gateway` serves with this same file, its limits set from its
//! command line (`serve_with`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::time::Sleep;
use tower::ServiceExt;

/// How long a client may take to send its request headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request body may take to arrive, from the request head.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 512;
/// Connections of one client address served at once.
pub const MAX_CONNECTIONS_PER_CLIENT: usize = 128;
/// Connections over their address's cap answered at once; more are closed.
const REFUSALS: usize = 64;
/// How long such a connection may take to send its request.
const REFUSAL_READ_TIMEOUT: Duration = Duration::from_secs(1);
/// How long to wait after a failed accept (out of descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long shutdown waits for open requests.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// What a client may hold of the server; the defaults are the constants
/// above.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How long a client may take to send its request headers.
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive, from the request head.
    pub body_read_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// Connections of one client address served at once.
    pub max_connections_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_connections_per_client: MAX_CONNECTIONS_PER_CLIENT,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then shuts down
/// gracefully.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(listener, router, Limits::default(), shutdown).await
}

/// [`serve`] with other limits.
pub async fn serve_with(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let service = router;
    let body_limit = limits.body_read_timeout;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let clients = Clients::default();
    let refusals = Arc::new(tokio::sync::Semaphore::new(REFUSALS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            permit = slots.clone().acquire_owned() => permit.expect("never closed"),
        };
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A failed accept (out of descriptors, a reset) is not
                // fatal; waiting a little keeps it from spinning.
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Best effort: without it the answer is only late, not wrong.
        let _ = stream.set_nodelay(true);
        let Some(held) = clients.enter(client_of(peer.ip()), limits.max_connections_per_client)
        else {
            // The slot goes back at once; a few refusals run at a time.
            drop(permit);
            if let Ok(refusing) = refusals.clone().try_acquire_owned() {
                tokio::spawn(refuse_over_cap(builder.clone(), stream, refusing));
            }
            continue;
        };
        let service = service
            .clone()
            .map_request(move |request: http::Request<_>| {
                let mut request = request.map(|body| DeadlineBody::new(body, body_limit));
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                request
            });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop((permit, held));
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(CLOSE_WAIT, graceful.shutdown()).await;
    Ok(())
}

/// The address a client is counted under: its IPv4 address, or the /64 an
/// IPv6 address belongs to (one host commonly holds a whole /64).
fn client_of(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => std::net::IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                std::net::IpAddr::V6(std::net::Ipv6Addr::from(prefix))
            }
        },
        v4 => v4,
    }
}

/// The connections each client address holds.
#[derive(Clone, Default)]
struct Clients(Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>);

/// One connection of a client address, counted while it lives.
struct Held {
    clients: Clients,
    ip: std::net::IpAddr,
}

impl Clients {
    /// Counts one more connection of `ip`, unless it holds `cap` already.
    fn enter(&self, ip: std::net::IpAddr, cap: usize) -> Option<Held> {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(ip).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(Held {
            clients: self.clone(),
            ip,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.clients.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

/// Answers the one request of a connection over its address's cap with
/// `429`, a `Retry-After` and a JSON-RPC error, then closes it.
async fn refuse_over_cap(
    mut builder: http1::Builder,
    stream: tokio::net::TcpStream,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    builder
        .keep_alive(false)
        .header_read_timeout(REFUSAL_READ_TIMEOUT);
    let refuse = hyper::service::service_fn(|_request| async {
        let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Too many connections from this address; retry when one of them is done"}}"#;
        let response = http::Response::builder()
            .status(http::StatusCode::TOO_MANY_REQUESTS)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::RETRY_AFTER, "1")
            .body(http_body_util::Full::new(Bytes::from_static(
                body.as_bytes(),
            )))
            .expect("a fixed response");
        Ok::<_, std::convert::Infallible>(response)
    });
    let _ = builder.serve_connection(TokioIo::new(stream), refuse).await;
    drop(permit);
}

pin_project_lite::pin_project! {
    /// A request body that must arrive whole before a deadline; after it,
    /// reading fails (the service answers `400`, or the upstream request
    /// fails), and the connection is let go.
    pub struct DeadlineBody<B> {
        #[pin]
        body: B,
        #[pin]
        deadline: Sleep,
        limit: Duration,
    }
}

impl<B> DeadlineBody<B> {
    /// `body`, due within `limit` from now.
    pub fn new(body: B, limit: Duration) -> Self {
        Self {
            body,
            deadline: tokio::time::sleep(limit),
            limit,
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.body.poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match this.deadline.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(format!(
                "the request body did not arrive within {:?}",
                this.limit
            )
            .into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Resolves on the first SIGTERM or Ctrl-C (SIGINT).
pub async fn stop_signal() {
    stop_signal_now().await;
}

/// Like [`stop_signal`], registered now: a signal that arrives before the
/// returned future is first polled is not lost (take it before announcing
/// that the server listens).
pub fn stop_signal_now() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        let wait = |signal: Option<tokio::signal::unix::Signal>| async move {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        async move {
            tokio::select! {
                _ = wait(term) => {}
                _ = wait(interrupt) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
