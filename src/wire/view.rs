//! One renderer for every way a task appears on the wire.
//!
//! | Use                          | `resultType` | payload (`inputRequests`/`result`/`error`) | field names            |
//! |------------------------------|--------------|--------------------------------------------|------------------------|
//! | 2026-07-28 `CreateTaskResult`| `"task"`     | never                                      | `ttlMs`, `pollIntervalMs` |
//! | 2026-07-28 `tasks/get`       | `"complete"` | the one its status carries                 | `ttlMs`, `pollIntervalMs` |
//! | 2026-07-28 `notifications/tasks` | absent   | the one its status carries                 | `ttlMs`, `pollIntervalMs` |
//! | 2025-11-25 task              | absent       | never (`tasks/result` carries the outcome) | `ttl`, `pollInterval`  |
//! | a task event's `data` (MCP Events) | absent | never (a status change, read with `tasks/get`) | `ttlMs`, `pollIntervalMs` |
//!
//! Keeping this in one function means the handle, the poll and the legacy view
//! cannot drift apart.

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::task::{TaskSnapshot, TaskState};

/// Which wire form to render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskView {
    /// The flat 2026-07-28 `CreateTaskResult`.
    Created,
    /// The 2026-07-28 `tasks/get` result.
    Detailed,
    /// The params of a 2026-07-28 `notifications/tasks`: the `tasks/get`
    /// result without `resultType`.
    Pushed,
    /// The 2025-11-25 `Task` object.
    Legacy,
    /// The `data` of a task event (MCP Events extension): the task's
    /// status without its payload.
    Event,
}

/// A snapshot rendered in a [`TaskView`].
#[derive(Debug)]
pub struct Rendered<'a> {
    snapshot: &'a TaskSnapshot,
    view: TaskView,
}

/// Renders `snapshot` as `view`; the result implements [`Serialize`].
pub fn render(snapshot: &TaskSnapshot, view: TaskView) -> Rendered<'_> {
    Rendered { snapshot, view }
}

/// The status a view shows. 2025-11-25 counts a tool result with
/// `isError: true` as `failed`; 2026-07-28 as `completed`. The store keeps
/// what happened (a result), each view names it in its own terms.
pub fn status_in(task: &TaskSnapshot, view: TaskView) -> &'static str {
    match &task.state {
        TaskState::Completed { result } if view == TaskView::Legacy && is_error(result) => "failed",
        state => state.status().as_str(),
    }
}

/// Whether a tool result says `isError: true`.
fn is_error(result: &serde_json::value::RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(rename = "isError")]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Head>(result.get()).is_ok_and(|head| head.is_error == Some(true))
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Serialize for Rendered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let task = self.snapshot;
        let legacy = self.view == TaskView::Legacy;
        let mut map = serializer.serialize_map(None)?;
        match self.view {
            TaskView::Created => map.serialize_entry("resultType", "task")?,
            TaskView::Detailed => map.serialize_entry("resultType", "complete")?,
            TaskView::Legacy | TaskView::Pushed | TaskView::Event => {}
        }
        map.serialize_entry("taskId", &task.id.to_string())?;
        map.serialize_entry("status", status_in(task, self.view))?;
        if let Some(message) = &task.status_message {
            map.serialize_entry("statusMessage", message)?;
        }
        map.serialize_entry("createdAt", &task.created_at.to_string())?;
        map.serialize_entry("lastUpdatedAt", &task.last_updated_at.to_string())?;
        let (ttl_key, poll_key) = if legacy {
            ("ttl", "pollInterval")
        } else {
            ("ttlMs", "pollIntervalMs")
        };
        map.serialize_entry(ttl_key, &task.ttl.map(millis))?;
        if let Some(poll) = task.poll_interval {
            map.serialize_entry(poll_key, &millis(poll).max(1))?;
        }
        if matches!(self.view, TaskView::Detailed | TaskView::Pushed) {
            match &task.state {
                TaskState::InputRequired { requests } => {
                    map.serialize_entry("inputRequests", requests)?
                }
                TaskState::Completed { result } => map.serialize_entry("result", result)?,
                TaskState::Failed { error } => map.serialize_entry("error", error)?,
                TaskState::Working | TaskState::Cancelled => {}
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    fn snapshot(state: TaskState) -> TaskSnapshot {
        TaskSnapshot::example(state)
    }

    fn json(value: impl Serialize) -> String {
        serde_json::to_string(&value).unwrap()
    }

    #[test]
    fn a_created_task_is_flat_with_result_type_task_and_no_payload() {
        let result = RawValue::from_string(r#"{"content":[]}"#.into()).unwrap();
        let task = snapshot(TaskState::Completed { result });
        assert_eq!(
            json(render(&task, TaskView::Created)),
            r#"{"resultType":"task","taskId":"00000000000000000000000000000abc","status":"completed","createdAt":"2025-11-29T07:10:25.000Z","lastUpdatedAt":"2025-11-29T07:10:26.500Z","ttlMs":60000,"pollIntervalMs":500}"#
        );
    }

    #[test]
    fn a_detailed_completed_task_inlines_the_result_verbatim() {
        let result = RawValue::from_string(r#"{"content":[],"isError":true}"#.into()).unwrap();
        let task = snapshot(TaskState::Completed { result });
        assert_eq!(
            json(render(&task, TaskView::Detailed)),
            r#"{"resultType":"complete","taskId":"00000000000000000000000000000abc","status":"completed","createdAt":"2025-11-29T07:10:25.000Z","lastUpdatedAt":"2025-11-29T07:10:26.500Z","ttlMs":60000,"pollIntervalMs":500,"result":{"content":[],"isError":true}}"#
        );
    }

    #[test]
    fn a_failed_task_carries_its_error_and_an_unlimited_ttl_is_null() {
        let error = RawValue::from_string(r#"{"code":-32603,"message":"boom"}"#.into()).unwrap();
        let mut task = snapshot(TaskState::Failed { error });
        task.ttl = None;
        task.status_message = Some("boom".into());
        let text = json(render(&task, TaskView::Detailed));
        assert!(text.contains(r#""statusMessage":"boom""#), "{text}");
        assert!(text.contains(r#""ttlMs":null"#), "{text}");
        assert!(
            text.ends_with(r#""error":{"code":-32603,"message":"boom"}}"#),
            "{text}"
        );
    }

    #[test]
    fn an_is_error_result_is_failed_in_the_legacy_view_only() {
        let result = RawValue::from_string(r#"{"content":[],"isError":true}"#.into()).unwrap();
        let task = snapshot(TaskState::Completed { result });
        assert!(json(render(&task, TaskView::Legacy)).contains(r#""status":"failed""#));
        assert!(json(render(&task, TaskView::Detailed)).contains(r#""status":"completed""#));
        let result = RawValue::from_string(r#"{"content":[],"isError":false}"#.into()).unwrap();
        let task = snapshot(TaskState::Completed { result });
        assert!(json(render(&task, TaskView::Legacy)).contains(r#""status":"completed""#));
    }

    #[test]
    fn the_legacy_view_uses_ttl_and_poll_interval_and_no_result_type() {
        let task = snapshot(TaskState::Working);
        let text = json(render(&task, TaskView::Legacy));
        assert!(text.starts_with(r#"{"taskId""#), "{text}");
        assert!(text.contains(r#""ttl":60000,"pollInterval":500"#), "{text}");
    }
}
