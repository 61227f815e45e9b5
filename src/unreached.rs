//! [`Unreached`]: the mark of a response whose request never reached the
//! MCP server.

/// A response extension that says the request never reached the MCP
/// server: the connection was refused, there was no route, the server's
/// process was down. The call did not start, so sending it again runs
/// nothing twice.
///
/// An inner service sets it on the error response it makes up in place of
/// the server's (a reverse proxy's `502` for a refused connection, say).
/// A task's call that gets it back — a call run again after a restart, or
/// a parked call sent while the server is down — is not failed: the layer
/// sends it again with backoff (from 250 ms, doubling to 10 s) until the
/// server answers or the task's runtime limit or TTL ends it, and the
/// task's status message says that it waits. No attempt of a re-run is
/// spent on it.
///
/// ```
/// use mcp_tasks::Unreached;
///
/// let mut response = http::Response::new(());
/// *response.status_mut() = http::StatusCode::BAD_GATEWAY;
/// response.extensions_mut().insert(Unreached);
/// assert!(response.extensions().get::<Unreached>().is_some());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unreached;
