//! `mcp-tasks-gateway` in front of MCP servers in other languages and of
//! other kinds (their SDKs installed into the git-ignored cache on first use).
//!
//! | Module | What it pins |
//! |---|---|
//! | `languages` | the TypeScript SDK and FastMCP servers, which know nothing about tasks |
//! | `everything_http` | the official reference server over HTTP, with tasks of its own (2025-11-25) |
//! | `own_tasks` | FastMCP with tasks of its own (2026-07-28) |
//! | `bridge` | 2026-07-28 clients in front of a 2025-11-25-only upstream, over HTTP and stdio |

#[path = "../support/gateway.rs"]
mod gateway;
#[path = "../../../tests/support/mod.rs"]
mod support;

mod bridge;
mod everything_http;
mod languages;
mod own_tasks;
