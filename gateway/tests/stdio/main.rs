//! `mcp-tasks-gateway -- COMMAND`: stdio MCP servers started by the gateway
//! and served over Streamable HTTP, with tasks.
//!
//! | Module | What it pins |
//! |---|---|
//! | `served` | the Python fixture over stdio, and a misbehaving server |
//! | `everything` | the official reference server (`server-everything`) over stdio |
//! | `instances` | `--instances N`: several copies of a server that reads one call at a time |

#[path = "../support/gateway.rs"]
mod gateway;
#[path = "../../../tests/support/mod.rs"]
mod support;

mod everything;
mod instances;
mod served;
