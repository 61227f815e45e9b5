//! What the fallback does to the inner server's `tools/list`: the two tools
//! it adds, and a wider `outputSchema` for each tool that may fall back.
//!
//! The two tools are appended to the first page only (a request without
//! `params.cursor`), so a client that pages sees each once. A tool of the
//! inner server with the same name is shadowed: the layer answers calls of
//! that name.
//!
//! A client checks a tool's `structuredContent` against its `outputSchema`
//! (the Python SDK refuses a result that does not match), so a tool that
//! may fall back is listed with `{"type": "object", "anyOf": [its schema,
//! the task handle's]}`: its own result matches the first, the fallback's
//! answer (`{taskId, status, ...}`) the second. Its outcome, read with the
//! added tool, is the tool's own result again.

use serde_json::json;
use serde_json::value::RawValue;

use super::Names;
use crate::config::TasksConfig;
use crate::rewrite::replace;
use crate::wire::raw::Members;

/// The definitions of the two tools, as a JSON text of two array items.
fn definitions(names: &Names) -> String {
    let task_id = json!({
        "type": "object",
        "properties": {
            "taskId": {
                "type": "string",
                "description": "The task id a tool call answered with when its work went on as a task."
            }
        },
        "required": ["taskId"]
    });
    let result = json!({
        "name": names.result,
        "title": "Task result",
        "description": "Reads the outcome of a tool call that went on running as a task: the call's own result once it is done, or else its status and progress so far, with when to ask again.",
        "inputSchema": task_id,
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    });
    let cancel = json!({
        "name": names.cancel,
        "title": "Cancel task",
        "description": "Stops a tool call that went on running as a task. A task that already ended is left as it is.",
        "inputSchema": task_id,
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}
    });
    format!("{result},{cancel}")
}

/// The structured content of the fallback's answer (`answer.rs`), as a
/// JSON Schema.
const HANDLE_SCHEMA: &str = r#"{"type":"object","description":"The call went on as a task: its outcome is read with the added tool, by taskId.","properties":{"taskId":{"type":"string"},"status":{"type":"string"},"statusMessage":{"type":"string"},"pollIntervalMs":{"type":"integer"}},"required":["taskId","status"]}"#;

/// The edit of a `tools/list` answer with the fallback on: each tool that
/// may fall back and declares an `outputSchema` gets the wider one, and a
/// first page gains the two tools. `None` when there is nothing to edit.
pub(crate) fn listing(
    config: TasksConfig,
    first_page: bool,
) -> impl Fn(&str) -> Option<String> + Send + 'static {
    let added = first_page.then(|| definitions(&config.fallback.names));
    move |message| {
        let result = Members::parse(message).ok()?.get("result")?;
        let tools = Members::parse(result.get()).ok()?.get("tools")?;
        let items: Vec<&RawValue> = serde_json::from_str(tools.get()).ok()?;
        let mut widened_any = false;
        let mut listed: Vec<String> = items
            .iter()
            .map(|tool| match widened(tool.get(), &config) {
                Some(wide) => {
                    widened_any = true;
                    wide
                }
                None => tool.get().to_owned(),
            })
            .collect();
        match &added {
            Some(added) => listed.push(added.clone()),
            None if !widened_any => return None,
            None => {}
        }
        replace(message, tools.get(), &format!("[{}]", listed.join(",")))
    }
}

/// `tool` (a tool definition's JSON text) with its `outputSchema` widened
/// to take the fallback's answer too; `None` when it has none, or never
/// falls back.
fn widened(tool: &str, config: &TasksConfig) -> Option<String> {
    let members = Members::parse(tool).ok()?;
    let schema = members.get("outputSchema")?;
    let name: String = serde_json::from_str(members.get("name")?.get()).ok()?;
    config.fallback_after(&name)?;
    let wide = format!(
        r#"{{"type":"object","anyOf":[{},{HANDLE_SCHEMA}]}}"#,
        schema.get()
    );
    replace(tool, schema.get(), &wide)
}

/// Two edits of one message, the second over what the first made.
pub(crate) fn both(
    first: impl Fn(&str) -> Option<String> + Send + 'static,
    second: impl Fn(&str) -> Option<String> + Send + 'static,
) -> impl Fn(&str) -> Option<String> + Send + 'static {
    move |message| match first(message) {
        Some(edited) => second(&edited).or(Some(edited)),
        None => second(message),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn the_two_tools_follow_the_inner_servers_and_the_rest_is_kept() {
        let config = crate::TasksLayer::new(crate::MemoryTaskStore::new())
            .fallback_after(std::time::Duration::from_secs(1))
            .config()
            .clone();
        let message = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"slow","inputSchema":{"n":123456789012345678901234567890}}],"nextCursor":"x"}}"#;
        let edited = listing(config.clone(), true)(message).unwrap();
        assert!(edited.contains("123456789012345678901234567890"));
        let value: Value = serde_json::from_str(&edited).unwrap();
        let tools: Vec<_> = value["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(tools, ["slow", "get_task_result", "cancel_task"]);
        assert_eq!(value["result"]["nextCursor"], "x");
        assert_eq!(
            value["result"]["tools"][1]["inputSchema"]["required"][0],
            "taskId"
        );

        let empty = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[ ]}}"#;
        let value: Value =
            serde_json::from_str(&listing(config.clone(), true)(empty).unwrap()).unwrap();
        assert_eq!(value["result"]["tools"].as_array().unwrap().len(), 2);
        assert_eq!(
            listing(config.clone(), false)(message),
            None,
            "a later page: nothing to edit"
        );

        let error = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}"#;
        assert_eq!(listing(config, true)(error), None);
    }

    #[test]
    fn a_tool_that_may_fall_back_is_listed_with_a_schema_its_handle_matches_too() {
        let config = crate::TasksLayer::new(crate::MemoryTaskStore::new())
            .fallback_after(std::time::Duration::from_secs(1))
            .tool_fallback("kept", None)
            .config()
            .clone();
        let message = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"typed","outputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},{"name":"kept","outputSchema":{"type":"object"}}],"nextCursor":"y"}}"#;
        let edited = listing(config, false)(message).unwrap();
        let value: Value = serde_json::from_str(&edited).unwrap();
        let typed = &value["result"]["tools"][0]["outputSchema"];
        assert_eq!(typed["type"], "object");
        assert_eq!(
            typed["anyOf"][0]["required"][0], "n",
            "its own schema first"
        );
        assert_eq!(
            typed["anyOf"][1]["required"],
            serde_json::json!(["taskId", "status"])
        );
        assert_eq!(
            value["result"]["tools"][1]["outputSchema"],
            serde_json::json!({"type": "object"}),
            "a tool that never falls back keeps its schema"
        );
        assert_eq!(value["result"]["tools"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn both_edits_apply_and_either_alone_is_kept() {
        let upper = |m: &str| m.contains('a').then(|| m.replace('a', "A"));
        let suffix = |m: &str| m.starts_with('A').then(|| format!("{m}!"));
        let edit = both(upper, suffix);
        assert_eq!(edit("ab").as_deref(), Some("Ab!"));
        assert_eq!(edit("xa").as_deref(), Some("xA"));
        assert_eq!(edit("b"), None);
    }
}
