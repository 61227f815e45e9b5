//! `mcp-tasks`: a tower layer that turns slow MCP `tools/call` requests into
//! tasks, in front of any MCP Streamable-HTTP server.
//!
//! A client that declares the `io.modelcontextprotocol/tasks` extension
//! (protocol 2026-07-28, SEP-2663) on a `tools/call` gets the tool's answer as
//! usual when it comes within the latency threshold. When it does not, the
//! layer stores a task, answers a task handle, and keeps the call running in
//! the background; the client then polls `tasks/get` and may `tasks/cancel`.
//! The inner server needs no change and never learns about tasks.
//!
//! Clients of the previous generation, the experimental tasks of protocol
//! 2025-11-25, are served by the same layer and store in their sessions:
//! they ask for a task with `params.task` and use `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel`.
//!
//! ```no_run
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//! use tower::ServiceBuilder;
//!
//! # fn wrap<S>(mcp_server: S) {
//! let app = ServiceBuilder::new()
//!     .layer(TasksLayer::new(MemoryTaskStore::new()))
//!     .service(mcp_server);
//! # let _ = app;
//! # }
//! ```
//!
//! Put the layer *inside* authentication, so that the task methods it answers
//! are authorized and each task is bound to the principal that created it
//! (see [`owner`]). What bounds the client's requests goes outside it; what
//! bounds the server's work goes inside, because parked and re-issued calls
//! reach the inner service from the layer itself (the README's "Among other
//! middleware" gives the reasons):
//!
//! ```
//! use std::time::Duration;
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//! use tower::limit::ConcurrencyLimitLayer;
//! use tower::{Service, ServiceBuilder};
//! use tower_http::timeout::RequestBodyTimeoutLayer;
//!
//! # fn check<S: Service<http::Request<axum::body::Body>>>(_: &S) {}
//! # async fn mcp(_: http::Request<mcp_tasks::RequestBody<tower_http::timeout::TimeoutBody<axum::body::Body>>>)
//! #     -> Result<http::Response<axum::body::Body>, std::convert::Infallible> { unimplemented!() }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let mcp_server = tower::service_fn(mcp);
//! # let auth = tower::layer::util::Identity::new(); // e.g. tower-mcp's OAuthLayer
//! let tasks = TasksLayer::new(MemoryTaskStore::new()).build();
//! let drain = tasks.drain(); // on Ctrl-C: drain.shutdown(grace).await
//! let app = ServiceBuilder::new()
//!     .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(10))) // the client's requests
//!     .layer(auth)
//!     .layer(tasks)
//!     .layer(ConcurrencyLimitLayer::new(64)) // every call the server runs, parked or not
//!     .service(mcp_server);
//! # check(&app);
//! # let _ = drain;
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(missing_debug_implementations)]
#![deny(unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod admin;
mod backoff;
pub mod body;
mod bound;
mod carry;
mod config;
mod layer;
mod legacy;
mod modern;
pub mod observe;
pub mod owner;
mod policy;
mod rewrite;
mod runtime;
pub mod store;
mod task;
mod text;
mod unreached;
pub mod webhook;
pub mod wire;

pub use admin::{Admin, AdminWatch};
pub use body::{RequestBody, ResponseBody};
pub use config::TasksConfig;
pub use config::events::EventsConfig;
pub use layer::{ResponseFuture, Tasks, TasksLayer, TasksService};
pub use owner::{DefaultOwner, Principal, ResolveOwner};
pub use policy::ToolPolicy;
pub use runtime::drain::{Drain, DrainReport};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use store::RedisTaskStore;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use store::SqliteTaskStore;
pub use store::{
    CancelOutcome, CreatedTask, InputProgress, InputRound, Listening, MemoryTaskStore, NewTask,
    Orphan, Quota, QuotaScope, Rerun, StoreError, TaskChange, TaskList, TaskStore,
};
pub use task::{TaskId, TaskSnapshot, TaskState, TaskStatus, Timestamp};
pub use unreached::Unreached;
pub use wire::{MODERN_VERSION, TASKS_EXTENSION};
