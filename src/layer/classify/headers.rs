//! Step 2 of the classification: `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` agree with the body (`-32020`, 400, when they do not).

use http::HeaderMap;

use crate::config::TasksConfig;
use crate::wire::envelope::{Json, MCP_NAME, decode_header_value};
use crate::wire::jsonrpc::Reply;

/// The values of `MCP-Protocol-Version` and `Mcp-Method`.
#[derive(Clone, Copy)]
pub(super) struct Sent<'h> {
    pub version: Option<&'h str>,
    pub method: Option<&'h str>,
}

/// What the body says that the routing headers must match.
pub(super) struct Said<'b> {
    pub id: Json<'b>,
    pub method: &'b str,
    /// `_meta`'s protocol version.
    pub meta_version: Option<&'b str>,
    /// The tool name, or the `taskId` of a task method.
    pub named: Option<&'b str>,
    /// `method` is one of the task methods.
    pub task_method: bool,
}

/// Step 2: the routing headers agree with the body.
pub(super) fn check_headers(
    headers: &HeaderMap,
    sent: Sent<'_>,
    said: Said<'_>,
    config: &TasksConfig,
) -> Result<(), Reply> {
    let Said {
        id,
        method,
        meta_version,
        named,
        task_method,
    } = said;
    let mismatch = |message: String| Err(Reply::header_mismatch(Some(id.raw()), message));
    if let Some(version) = meta_version
        && sent.version != Some(version)
    {
        return mismatch(format!(
            "MCP-Protocol-Version header {:?} does not match _meta protocolVersion {version:?}",
            sent.version.unwrap_or("(missing)")
        ));
    }
    match sent.method {
        Some(value) if value == method => {}
        other => {
            return mismatch(format!(
                "Mcp-Method header {:?} does not match method {method:?}",
                other.unwrap_or("(missing)")
            ));
        }
    }
    let required = match method {
        "tools/call" => true,
        _ if task_method => config.require_task_name_header,
        _ => return Ok(()),
    };
    let Some(raw) = headers.get(&MCP_NAME) else {
        if required {
            return mismatch(format!("Mcp-Name header is required for {method}"));
        }
        return Ok(());
    };
    let given = raw.to_str().ok().and_then(decode_header_value);
    if given.is_none() || given.as_deref() != named {
        return mismatch(format!(
            "Mcp-Name header does not match the {} in the body",
            if method == "tools/call" {
                "tool name"
            } else {
                "taskId"
            }
        ));
    }
    Ok(())
}
