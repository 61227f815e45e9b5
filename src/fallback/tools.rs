//! The two tools the fallback adds to the inner server's `tools/list`.
//!
//! Appended to the first page only (a request without `params.cursor`), so
//! a client that pages sees each once. A tool of the inner server with the
//! same name is shadowed: the layer answers calls of that name.

use serde_json::json;

use super::Names;
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

/// The edit of a first-page `tools/list` answer: the two tools appended.
pub(crate) fn append(names: Names) -> impl Fn(&str) -> Option<String> + Send + 'static {
    let added = definitions(&names);
    move |message| {
        let result = Members::parse(message).ok()?.get("result")?;
        let tools = Members::parse(result.get()).ok()?.get("tools")?;
        let list = tools.get().trim();
        let inside = list.strip_prefix('[')?.strip_suffix(']')?;
        let edited = if inside.trim().is_empty() {
            format!("[{added}]")
        } else {
            format!("[{inside},{added}]")
        };
        replace(message, tools.get(), &edited)
    }
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
    use crate::config::fallback::Fallback;

    #[test]
    fn the_two_tools_follow_the_inner_servers_and_the_rest_is_kept() {
        let names = Fallback::default().names;
        let message = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"slow","inputSchema":{"n":123456789012345678901234567890}}],"nextCursor":"x"}}"#;
        let edited = append(names.clone())(message).unwrap();
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
        let value: Value = serde_json::from_str(&append(names.clone())(empty).unwrap()).unwrap();
        assert_eq!(value["result"]["tools"].as_array().unwrap().len(), 2);

        let error = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}"#;
        assert_eq!(append(names)(error), None);
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
