//! The proxy's connector: hyper-util's `HttpConnector`, with each
//! connection it opens counted in `mcp_tasks_upstream_connections` until
//! the pool drops it (closed by either side or idle too long).

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::TryFutureExt;
use futures_util::future::MapOk;
use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use tower_service::Service;

use crate::metrics::CONNECTIONS;

/// What `HttpConnector` connects with.
type Io = <HttpConnector as Service<Uri>>::Response;
/// How it connects.
type Connecting = <HttpConnector as Service<Uri>>::Future;

/// `HttpConnector`, counting the connections it opens.
#[derive(Clone, Debug)]
pub(super) struct Counting(pub HttpConnector);

impl Service<Uri> for Counting {
    type Response = Counted<Io>;
    type Error = <HttpConnector as Service<Uri>>::Error;
    type Future = MapOk<Connecting, fn(Io) -> Counted<Io>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        self.0
            .call(uri)
            .map_ok(Counted::opened as fn(Io) -> Counted<Io>)
    }
}

/// A connection, counted while it is open.
#[derive(Debug)]
pub(super) struct Counted<T>(T);

impl<T> Counted<T> {
    fn opened(io: T) -> Self {
        metrics::gauge!(CONNECTIONS).increment(1.0);
        Self(io)
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        metrics::gauge!(CONNECTIONS).decrement(1.0);
    }
}

impl<T: Connection> Connection for Counted<T> {
    fn connected(&self) -> Connected {
        self.0.connected()
    }
}

impl<T: Read + Unpin> Read for Counted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Counted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }
}
