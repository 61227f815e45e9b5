//! Tools the inner server runs only as tasks of its own.
//!
//! A 2025-11-25 server may mark a tool `execution.taskSupport: "required"`
//! (the reference server's `simulate-research-query`): called without
//! `params.task`, it refuses. The layer keeps its own task for the client,
//! as for any tool, and takes the inner server's task over:
//!
//! ```text
//! client ── tools/call {task} ──► layer: its own task, answered at once
//!                                  layer ── tools/call {task} ──► inner: CreateTaskResult {task: T}
//!                                  layer ── tasks/result {T} ───► inner: … the tool's result
//!                                  (its requests on that stream are relayed, as for any call)
//! client ── tasks/cancel ───────► layer ── tasks/cancel {T} ────► inner
//! ```
//!
//! So the client sees one task, the layer's: its id, owner, TTL, limits and
//! store are the layer's, and the inner task id never leaves the layer. The
//! inner task's own TTL is the one the client asked for (its `params.task`
//! is forwarded as sent).

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::route::LEGACY_VERSION;
use crate::runtime::Work;
use crate::runtime::flight::Flight;

/// What marks a result as a 2025-11-25 `CreateTaskResult`.
#[derive(Deserialize)]
struct Created {
    task: Option<TaskRef>,
    content: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct TaskRef {
    #[serde(rename = "taskId")]
    task_id: String,
}

/// The inner server's task id, when `result` is a `CreateTaskResult`
/// rather than a tool's result.
pub(crate) fn created_task(result: &RawValue) -> Option<String> {
    let created: Created = serde_json::from_str(result.get()).ok()?;
    if created.content.is_some() {
        return None;
    }
    created.task.map(|task| task.task_id)
}

/// A request of the layer's about the inner task `inner`, for `work`.
fn request(work: &Work, method: &str, inner: &str) -> String {
    let id = format!(
        "\"mcp-tasks:{}:{}\"",
        work.id,
        method.trim_start_matches("tasks/")
    );
    let task = serde_json::Value::String(inner.to_owned());
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"taskId":{task}}}}}"#)
}

/// The flight that reads the outcome of the inner task `inner`: its
/// `tasks/result`, in the tool's session.
pub(crate) fn result_flight(work: &mut Work, inner: &str) -> Result<Flight, String> {
    let body = request(work, "tasks/result", inner);
    let id = format!("\"mcp-tasks:{}:result\"", work.id);
    let id = RawValue::from_string(id).map_err(|e| e.to_string())?;
    let request = work
        .template
        .post(body, LEGACY_VERSION)
        .map_err(|e| format!("the inner task could not be followed: {e}"))?;
    let future = Box::pin(work.caller.call(request));
    Ok(Flight::background(id, future, work.max_result))
}

/// The `tasks/cancel` of the inner task `inner`.
pub(crate) fn cancel_body(work: &Work, inner: &str) -> String {
    request(work, "tasks/cancel", inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn only_a_task_handle_without_content_is_the_inner_servers_task() {
        let created = raw(r#"{"task":{"taskId":"t-1","status":"working","ttl":60000}}"#);
        assert_eq!(created_task(&created).as_deref(), Some("t-1"));
        let result = raw(r#"{"content":[{"type":"text","text":"x"}]}"#);
        assert_eq!(created_task(&result), None);
        // A tool's result that happens to carry a `task` member is a result.
        let both = raw(r#"{"content":[],"task":{"taskId":"t-2"}}"#);
        assert_eq!(created_task(&both), None);
        assert_eq!(created_task(&raw(r#"{"task":{"id":1}}"#)), None);
    }
}
