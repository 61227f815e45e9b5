//! An MCP server that speaks stdio, served over Streamable HTTP, as an
//! ordinary tower service.
//!
//! [`StdioUpstream`] starts the server as a child process, initializes it
//! once, and answers HTTP requests from it: each request is written to the
//! child's stdin as one line of JSON-RPC under an id of the bridge's own,
//! and the child's answer (and the call's progress, as SSE) goes back to
//! the client that asked. It is what `mcp-tasks-gateway -- COMMAND` puts
//! inside [`TasksLayer`](mcp_tasks::TasksLayer), so that a stdio server's slow
//! tools become tasks:
//!
//! ```no_run
//! use mcp_tasks_gateway::stdio::StdioUpstream;
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//! use tower::ServiceBuilder;
//!
//! # async fn build() -> Result<(), mcp_tasks_gateway::stdio::StdioError> {
//! let upstream = StdioUpstream::builder("npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"])
//!     .start()
//!     .await?;
//! let app = ServiceBuilder::new()
//!     .layer(TasksLayer::new(MemoryTaskStore::new()))
//!     .service(upstream);
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! Framing is newline-delimited JSON-RPC, read with a bounded line codec
//! that keeps the ends of a line over the limit, so that the call it
//! answered fails instead of waiting; the bridge edits only the bytes it must (the id, the
//! progress token) and passes every other byte as the child wrote it.
//! Both client generations are served: 2026-07-28 requests without a
//! session (`server/discover` answered from what the child declared), and
//! 2025-11-25 and older ones in sessions the bridge opens at `initialize`.
//!
//! A request from the child to the client during a call (elicitation,
//! sampling, roots) is asked of a 2026-07-28 client as an MRTR round
//! (`input_required`, answered by the retry; once the call is a task,
//! through `tasks/update`), and of a 2025-11-25 session's client on its
//! call's SSE stream (answered by a POST in the session), when exactly
//! one call waits on the child: with several, the bridge cannot tell
//! whose it is and the child gets an error. [`StdioBuilder::instances`]
//! runs several copies of a server that handles one call at a time.
//!
//! Every call is bounded: a `tools/call` by [`StdioBuilder::call_timeout`],
//! any other request by [`StdioBuilder::request_timeout`]; the child is told
//! to stop a call that ran out (`notifications/cancelled`).
//!
//! A child that exits, or closes its standard output, fails the calls
//! waiting on it with a message that names the exit and is started again
//! with backoff (`life.rs`); calls that arrive meanwhile wait for the new
//! child up to [`StdioBuilder::place_timeout`].
//!
//! Not yet: the child's own notifications outside a call (logged, not
//! streamed).

mod bridge;
mod calls;
mod capped;
mod child;
mod input;
mod life;
mod lines;
mod relay;
mod relayed;
mod reply;
mod serve;
mod sessions;

use crate::generation::params::ParamHeaders;
use std::convert::Infallible;
use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use tower_service::Service;

use bridge::Bridge;
use mcp_tasks::body::{BoxBody, BoxError};
use sessions::Sessions;

/// Why a stdio server could not be served.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The child could not be started, or did not answer `initialize`.
    #[error("{0}")]
    Start(String),
}

/// Limits of one bridge.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// The longest line read from the child, and the largest request body.
    pub max_line_bytes: usize,
    /// Calls in flight to the child at once; more wait for a place.
    pub max_in_flight: usize,
    /// How long a call waits for a place before it fails (`503`).
    pub place_timeout: Duration,
    /// How long the child has to answer `initialize`.
    pub start_timeout: Duration,
    /// How long a `tools/call` waits for the child's answer.
    pub call_timeout: Option<Duration>,
    /// How long any other request waits for the child's answer.
    pub request_timeout: Option<Duration>,
}

impl Settings {
    /// How long a request of `method` waits for the child's answer.
    pub(crate) fn timeout_for(&self, method: &str) -> Option<Duration> {
        if method == "tools/call" {
            self.call_timeout
        } else {
            self.request_timeout
        }
    }
}

/// How long the children that did start get to stop when another could
/// not start.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How to start a stdio server; [`StdioBuilder::start`] starts it.
#[derive(Debug)]
pub struct StdioBuilder {
    spec: child::Spec,
    settings: Settings,
    instances: usize,
}

impl StdioBuilder {
    /// Arguments for the command.
    pub fn args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.spec.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable for the child (on top of the gateway's own).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.spec.env.push((key.into(), value.into()));
        self
    }

    /// The child's working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.spec.cwd = Some(cwd.into());
        self
    }

    /// The longest message either way, in bytes (default 4 MiB): a longer
    /// line from the child is skipped, a larger request refused (`413`).
    pub fn max_message_bytes(mut self, max: usize) -> Self {
        self.settings.max_line_bytes = max.max(1024);
        self
    }

    /// How many calls may wait on the child at once (default 64); more
    /// wait for a place, up to [`Self::place_timeout`].
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.settings.max_in_flight = max.max(1);
        self
    }

    /// How long a call waits for a place among the calls in flight
    /// before it fails with `503` (default 30 s): a server that stopped
    /// answering, or answers slower than calls come, turns them away
    /// instead of holding them. A call that arrives while an exited child
    /// is started again waits for it as long (then `502`).
    pub fn place_timeout(mut self, timeout: Duration) -> Self {
        self.settings.place_timeout = timeout;
        self
    }

    /// How long a `tools/call` waits for the child's answer (default
    /// 30 min, the layer's default `max_runtime`; `None`: no bound); then
    /// the call ends with `504` (or, on its stream, an error event) and the
    /// child gets `notifications/cancelled`. Its place among the calls in
    /// flight is free again.
    pub fn call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.call_timeout = timeout;
        self
    }

    /// How long any other request (`tools/list`, `resources/read`, …)
    /// waits for the child's answer (default 60 s; `None`: no bound); then
    /// as [`Self::call_timeout`]. Such requests run no tools, so a child
    /// that hangs on one is not waited on as long as a tool may run.
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.request_timeout = timeout;
        self
    }

    /// How many copies of the command to run (default 1): calls go to the
    /// copy with the most free places, a 2025-11-25 session stays on the
    /// copy that served its `initialize`. For servers that handle one
    /// call at a time.
    pub fn instances(mut self, instances: usize) -> Self {
        self.instances = instances.max(1);
        self
    }

    /// How long the child has to answer `initialize` (default 30 s; `npx`
    /// may first download the server).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.settings.start_timeout = timeout;
        self
    }

    /// Starts the children and initializes them; returns once all are
    /// ready (the first that cannot start is the error, and the others
    /// are stopped).
    pub async fn start(self) -> Result<StdioUpstream, StdioError> {
        // The children run one command: one table of its tools' headers.
        let params = Arc::new(ParamHeaders::default());
        let starts = (0..self.instances)
            .map(|_| Bridge::start(self.spec.clone(), self.settings, params.clone()));
        let (started, failed): (Vec<_>, Vec<_>) = futures_util::future::join_all(starts)
            .await
            .into_iter()
            .partition(Result::is_ok);
        let children: Vec<Arc<Bridge>> = started.into_iter().filter_map(Result::ok).collect();
        if let Some(Err(error)) = failed.into_iter().next() {
            let stops = children.iter().map(|child| child.life.shutdown(STOP_GRACE));
            futures_util::future::join_all(stops).await;
            return Err(error);
        }
        Ok(StdioUpstream {
            children: children.into(),
            sessions: Arc::default(),
        })
    }
}

/// A stdio MCP server as a Streamable-HTTP tower service; cheap to clone
/// (every clone talks to the same children, which stop when the last
/// clone is dropped).
#[derive(Clone)]
pub struct StdioUpstream {
    /// At least one.
    children: Arc<[Arc<Bridge>]>,
    sessions: Arc<Sessions>,
}

impl std::fmt::Debug for StdioUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls: usize = self.children.iter().map(|child| child.calls.len()).sum();
        f.debug_struct("StdioUpstream")
            .field("command", &self.children[0].spec.shown())
            .field("instances", &self.children.len())
            .field("calls", &calls)
            .finish()
    }
}

impl StdioUpstream {
    /// How to start `program` (looked up on `PATH`).
    pub fn builder(program: impl Into<OsString>) -> StdioBuilder {
        StdioBuilder {
            spec: child::Spec {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                cwd: None,
            },
            settings: Settings {
                max_line_bytes: 4 * 1024 * 1024,
                max_in_flight: 64,
                place_timeout: Duration::from_secs(30),
                start_timeout: Duration::from_secs(30),
                call_timeout: mcp_tasks::TasksConfig::default().max_runtime(),
                request_timeout: Some(Duration::from_secs(60)),
            },
            instances: 1,
        }
    }

    /// The protocol version the (first) child agreed to.
    pub fn protocol_version(&self) -> &str {
        &self.children[0].declared.version
    }

    /// Stops the children for good: no more restarts, their stdin closed,
    /// then `SIGTERM` after half of `grace`, then `SIGKILL` after the rest.
    /// Calls still waiting end with an error naming the exit.
    pub async fn shutdown(&self, grace: Duration) {
        let stops = self.children.iter().map(|child| child.life.shutdown(grace));
        futures_util::future::join_all(stops).await;
    }
}

impl<B> Service<http::Request<B>> for StdioUpstream
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<BoxBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let (children, sessions) = (self.children.clone(), self.sessions.clone());
        Box::pin(async move { Ok(serve::serve(children, sessions, request).await) })
    }
}
