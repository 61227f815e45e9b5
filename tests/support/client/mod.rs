//! Test clients for a 2026-07-28 (stateless) MCP Streamable HTTP endpoint.
//!
//! Two clients live here:
//!
//! * [`McpClient`] speaks the wire directly with `reqwest` and returns the
//!   JSON-RPC messages exactly as received. The rmcp 3.11 client *can* do
//!   everything these tests need (stateless discover lifecycle, per-request
//!   `clientCapabilities.extensions["io.modelcontextprotocol/tasks"]`, flat
//!   `CreateTaskResult`, `tasks/get|update|cancel`), but only through typed
//!   results: it drops unknown fields (a stray `requestState`, legacy
//!   `ttl`/`pollInterval`, a nested `result` on a `CreateTaskResult`), hides
//!   the HTTP status (`400` for `-32020`/`-32021`), the content type, and the
//!   order of progress notifications relative to the result, and it always
//!   injects its own `progressToken`. Conformance-style assertions need the
//!   wire, so `McpClient` is raw HTTP on purpose: it sends exactly the
//!   2026-07-28 headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and
//!   `params._meta` (protocolVersion, clientInfo, clientCapabilities) and reads
//!   SSE with the layer's reader (`mcp_tasks::wire::sse::Events`, the SSE
//!   standard's rules) until the response with its id arrives.
//! * [`RmcpClient`] is the real rmcp 3.11 client (`ClientLifecycleMode::Discover`
//!   over `StreamableHttpClientTransport`), for tests proving that an
//!   off-the-shelf rmcp caller interoperates with the layer.
//! * [`LegacyClient`] is the rmcp 2.2 client (dev-dependency `rmcp_legacy`)
//!   on a 2025-11-25 session (`initialize`, `Mcp-Session-Id`), sending raw
//!   JSON-RPC requests and returning the responses exactly as received.
//!
//! The module is self-contained (dev-dependencies only), so examples and
//! benches can include it with
//! `#[path = "../tests/support/client/mod.rs"] mod client;`.
//!
//! | File          | What it holds                                            |
//! |---------------|----------------------------------------------------------|
//! | `raw.rs`      | [`McpClient`]: the raw-HTTP client                       |
//! | `exchange.rs` | [`Exchange`], [`OpenCall`]: responses as read off the wire |
//! | `rmcp.rs`     | [`RmcpClient`]: the real rmcp client                     |
//! | `legacy.rs`   | [`LegacyClient`]: the rmcp 2.2 client, 2025-11-25 sessions |
#![allow(dead_code)]

mod exchange;
pub mod legacy;
mod raw;
mod rmcp;

// Not every test binary, example or bench uses every item.
#[allow(unused_imports)]
pub use self::{
    exchange::Exchange,
    exchange::OpenCall,
    exchange::{sse_events, sse_message},
    legacy::{ElicitReply, LegacyClient, LegacyWire},
    raw::McpClient,
    rmcp::RmcpClient,
};

/// Protocol version the clients speak.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// Extension id of MCP Tasks (SEP-2663).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key of the per-request protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the per-request client info.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the per-request client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
