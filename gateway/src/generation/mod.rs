//! Where the two protocol generations meet: what a client of 2026-07-28
//! needs from an upstream that speaks only 2025-11-25 or older, shared by
//! both transports (the stdio upstream and the HTTP bridge).
//!
//! | Piece | What it does |
//! |-------|--------------|
//! | `message.rs` | one JSON-RPC message as the gateway reads it, and its byte edits |
//! | `checked.rs` | what a 2026-07-28 server checks of a request (method, headers, `_meta`, version), checked for an upstream that cannot |
//! | `declared.rs` | what the upstream's `initialize` declared, and the `server/discover` answer made from it |
//! | `input.rs` | the upstream's questions as MRTR rounds: the wire both transports share |
//! | `listen.rs` | `subscriptions/listen` served for an upstream that tells its list changes in its session |
//! | `params.rs` | the `Mcp-Param-*` headers checked against the arguments a listed tool marks `x-mcp-header` |
//! | `results.rs` | an older server's result made a 2026-07-28 one (`resultType`, the cache hints) |
//! | `http/` | the HTTP transport of the bridge: [`GenerationBridge`] |

pub(crate) mod checked;
pub(crate) mod declared;
pub(crate) mod input;
pub(crate) mod listen;
pub(crate) mod message;
pub(crate) mod params;
pub(crate) mod results;

mod http;

pub use http::{DEFAULT_MAX_MESSAGE_BYTES, GenerationBridge, UpstreamGeneration};
