//! The requests of the HTTP benchmarks, exactly as a 2026-07-28 client that
//! declares the tasks extension sends them: the standard headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and the per-request
//! `_meta`, both built by the tests' raw client (`McpClient`).
//!
//! The bench server writes the load generator's requests with
//! [`Prepared::write`], so the wire shapes live here only.
#![allow(dead_code)] // each bench binary uses part of it

use std::io;
use std::path::Path;

use serde_json::{Value, json};

use crate::client::McpClient;

/// The fast tool of the benchmarks: it answers at once, without progress.
pub const FAST_TOOL: &str = "greet";
/// The tool that runs for `seconds` and reports progress every 200 ms.
pub const SLOW_TOOL: &str = "slow_compute";

/// One POST: its headers and its body.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The JSON-RPC id of the request.
    pub id: u64,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC request.
    pub body: String,
}

/// Builds the benchmarks' requests; every one declares the tasks extension.
pub struct Requests {
    client: McpClient,
}

impl Default for Requests {
    fn default() -> Self {
        Self::new()
    }
}

impl Requests {
    /// A builder (the client inside only shapes requests; it sends nothing).
    pub fn new() -> Self {
        Self {
            client: McpClient::new(String::new()),
        }
    }

    /// `tools/call` of `tool`; `meta` keys (e.g. `progressToken`) join the
    /// standard `_meta`.
    pub fn tool_call(&self, id: u64, tool: &str, arguments: Value, meta: Value) -> Prepared {
        let params = json!({"name": tool, "arguments": arguments, "_meta": meta});
        self.prepare(id, "tools/call", params, Some(tool))
    }

    /// The fast call the throughput cases measure.
    pub fn fast_call(&self, id: u64) -> Prepared {
        self.tool_call(id, FAST_TOOL, json!({"name": "bench"}), json!({}))
    }

    /// `tools/list`, which the layer forwards.
    pub fn tools_list(&self, id: u64) -> Prepared {
        self.prepare(id, "tools/list", json!({}), None)
    }

    /// `tasks/get` of `task_id`, which the layer answers from its store.
    pub fn tasks_get(&self, id: u64, task_id: &str) -> Prepared {
        self.prepare(id, "tasks/get", json!({"taskId": task_id}), Some(task_id))
    }

    fn prepare(&self, id: u64, method: &str, params: Value, name: Option<&str>) -> Prepared {
        let body = self.client.build_request(id, method, params, true);
        Prepared {
            id,
            headers: McpClient::standard_headers(method, name),
            body: body.to_string(),
        }
    }
}

impl Prepared {
    /// The request for an in-process call to `path`, with the `Host` header
    /// an HTTP client would add (rmcp refuses a request without one).
    pub fn to_request(&self, path: &str) -> http::Request<axum::body::Body> {
        let mut builder = http::Request::post(path).header(http::header::HOST, "127.0.0.1");
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
            .body(axum::body::Body::from(self.body.clone()))
            .expect("the prepared headers are valid")
    }

    /// Writes `DIR/NAME.body` (the body) and `DIR/NAME.headers` (one
    /// `Name: value` line a header), for the load generator's script.
    pub fn write(&self, dir: &Path, name: &str) -> io::Result<()> {
        let headers: String = self
            .headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}\n"))
            .collect();
        std::fs::write(dir.join(format!("{name}.headers")), headers)?;
        std::fs::write(dir.join(format!("{name}.body")), &self.body)
    }
}
