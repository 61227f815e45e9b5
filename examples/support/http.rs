//! The examples' HTTP server: what a server facing clients needs besides
//! the MCP service, so that half-sent requests cannot hold it forever.
//!
//! | Limit               | Value  | Why                                                      |
//! |---------------------|--------|----------------------------------------------------------|
//! | header read timeout | 10 s   | a connection that never finishes its headers is closed   |
//! | body read timeout   | 10 s   | a body that stops arriving fails instead of waiting      |
//! | connections         | 1024   | more wait in the accept queue instead of costing memory  |
//!
//! On shutdown it stops accepting, lets open requests finish, and closes
//! idle connections (hyper-util's graceful shutdown).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// How long a client may take to send its request headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request body may go without sending anything.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 1024;
/// How long shutdown waits for open requests.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` resolves, then shuts down
/// gracefully.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let service = ServiceBuilder::new()
        .layer(RequestBodyTimeoutLayer::new(BODY_READ_TIMEOUT))
        .service(router);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder.http2().timer(TokioTimer::new());
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            permit = slots.clone().acquire_owned() => permit.expect("never closed"),
        };
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A failed accept (out of descriptors, a reset) is not fatal.
                Err(_) => continue,
            },
        };
        let connection = builder
            .serve_connection_with_upgrades(
                TokioIo::new(stream),
                TowerToHyperService::new(service.clone()),
            )
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(CLOSE_WAIT, graceful.shutdown()).await;
    Ok(())
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM.
pub async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
