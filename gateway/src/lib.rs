//! `mcp-tasks-gateway`: [`TasksLayer`](mcp_tasks::TasksLayer) in front of an
//! MCP server in any language, so that its slow tools become tasks without a
//! change to the server.
//!
//! The crate is the `mcp-tasks-gateway` binary (its settings, OAuth, metrics
//! endpoint and shutdown) and, as a library, the upstreams it puts inside the
//! layer, for anyone who wants them in a server of their own:
//!
//! | Module     | Upstream                                                              |
//! |------------|-----------------------------------------------------------------------|
//! | [`proxy`]  | an MCP server over Streamable HTTP, reached by URL ([`Proxy`])        |
//! | [`stdio`]  | an MCP server that speaks stdio, started as a child ([`StdioUpstream`]) |
//! | [`metrics`] | what both report about their upstream, and its histogram buckets    |
//!
//! [`console`] is the operator's page in the browser: live tasks, per-tool
//! figures, the upstream and the store, and the operator's actions.
//!
//! [`webhook`] is the transport of the layer's webhook deliveries of task
//! events ([`webhook::HttpsDeliver`], a [`mcp_tasks::webhook::Deliver`]).
//!
//! [`generation`] lets a client of protocol 2026-07-28 use an upstream that
//! speaks only 2025-11-25 or older ([`GenerationBridge`] over HTTP; the stdio
//! upstream does it itself).
//!
//! ```no_run
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//! use mcp_tasks_gateway::Proxy;
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
//! The binary's operator guide is `docs/gateway.md` in the repository.

#![warn(missing_docs)]

pub mod console;
pub mod generation;
pub mod metrics;
pub mod proxy;
pub mod stdio;
pub mod webhook;

pub use generation::GenerationBridge;
pub use proxy::Proxy;
pub use stdio::StdioUpstream;
