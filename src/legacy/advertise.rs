//! What a 2025-11-25 client learns about tasks: `capabilities.tasks` in the
//! `initialize` result and `execution.taskSupport` on every tool.
//!
//! | Inner result                          | Edit                                                         |
//! |---------------------------------------|--------------------------------------------------------------|
//! | `initialize`, `protocolVersion` 2025-11-25, with `Mcp-Session-Id` | `capabilities.tasks` = `{cancel, requests.tools.call}` plus `list` when the caller has a principal; the session is recorded |
//! | `initialize` of any other version, or without a session | none                                |
//! | `tools/list`, a tool without `execution.taskSupport`, or with `optional` or `forbidden` | `taskSupport` from its policy: `threshold`/`always` → `optional`, `required` → `required`, `never` → `forbidden`: the layer runs the task, whatever the inner server could |
//! | `tools/list`, a tool the inner server marks `required` | none: the layer follows the inner server's own task (`follow`) |
//! | `tools/list`, the fallback on, first page | the fallback's two tools appended, `forbidden` (`fallback`) |
//!
//! Every edit splices JSON text; bytes outside the edited object are kept.
//! An inner server that declares `capabilities.tasks` itself has it replaced:
//! in these sessions the layer answers every task method.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::route::LEGACY_VERSION;
use super::sessions::Sessions;
use crate::config::TasksConfig;
use crate::policy::ToolPolicy;
use crate::rewrite::replace;
use crate::wire::raw::{Members, edit_object};

/// The `capabilities.tasks` the layer declares.
fn tasks_capability(list: bool) -> &'static str {
    if list {
        r#"{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}"#
    } else {
        r#"{"cancel":{},"requests":{"tools":{"call":{}}}}"#
    }
}

/// The edit of an `initialize` response: records `session` and advertises
/// tasks when the inner server negotiated 2025-11-25.
pub(crate) fn initialize(
    session: Option<Box<str>>,
    sessions: Arc<Sessions>,
    list: bool,
) -> impl Fn(&str) -> Option<String> + Send + 'static {
    move |message| {
        let session = session.as_deref()?;
        let result = Members::parse(message).ok()?.get("result")?;
        let members = Members::parse(result.get()).ok()?;
        let version: String = serde_json::from_str(members.get("protocolVersion")?.get()).ok()?;
        if version != LEGACY_VERSION {
            return None;
        }
        let capabilities = members.get("capabilities")?;
        let edits = [("tasks", Some(tasks_capability(list)))];
        let object = edit_object(capabilities.get(), &edits)?;
        let edited = replace(message, capabilities.get(), &object)?;
        sessions.insert(session);
        Some(edited)
    }
}

/// The `taskSupport` a policy advertises.
fn task_support(policy: ToolPolicy) -> &'static str {
    match policy {
        ToolPolicy::Threshold | ToolPolicy::Always => r#""optional""#,
        ToolPolicy::Required => r#""required""#,
        ToolPolicy::Never => r#""forbidden""#,
    }
}

/// The edit of a `tools/list` response.
pub(crate) fn tools_list(config: TasksConfig) -> impl Fn(&str) -> Option<String> + Send + 'static {
    move |message| {
        let result = Members::parse(message).ok()?.get("result")?;
        let tools = Members::parse(result.get()).ok()?.get("tools")?;
        let list: Vec<&RawValue> = serde_json::from_str(tools.get()).ok()?;
        let mut edited = String::with_capacity(tools.get().len() + 48 * list.len());
        edited.push('[');
        let mut changed = false;
        for (index, tool) in list.iter().enumerate() {
            if index > 0 {
                edited.push(',');
            }
            match with_task_support(tool.get(), &config) {
                Some(tool) => {
                    changed = true;
                    edited.push_str(&tool);
                }
                None => edited.push_str(tool.get()),
            }
        }
        edited.push(']');
        changed.then(|| replace(message, tools.get(), &edited))?
    }
}

/// `tool` with `execution.taskSupport` from its policy; `None` when it has one.
fn with_task_support(tool: &str, config: &TasksConfig) -> Option<String> {
    let members = Members::parse(tool).ok()?;
    let name: String = serde_json::from_str(members.get("name")?.get()).ok()?;
    // The fallback's own tools answer at once: never a task.
    let support = match config.fallback.added(&name) {
        Some(_) => task_support(ToolPolicy::Never),
        None => task_support(config.policy_for(&name)),
    };
    let existing = match members.get("execution") {
        Some(execution) if execution.get() != "null" => execution.get(),
        _ => "{}",
    };
    let inner = Members::parse(existing).ok()?.get("taskSupport");
    if inner.is_some_and(|said| said.get() == r#""required""# || said.get() == support) {
        return None;
    }
    let execution = edit_object(existing, &[("taskSupport", Some(support))])?;
    edit_object(tool, &[("execution", Some(&execution))])
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::legacy::sessions::Known;
    use crate::legacy::sessions_for_tests;

    fn config() -> TasksConfig {
        let mut config = TasksConfig::default();
        config.policies.insert("slow".into(), ToolPolicy::Required);
        config.policies.insert("quick".into(), ToolPolicy::Never);
        config
    }

    #[test]
    fn tools_gain_task_support_from_their_policy_unless_the_inner_server_requires_tasks() {
        let message = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"slow","inputSchema":{"n":123456789012345678901234567890}},{"name":"quick","execution":{}},{"name":"other"},{"name":"own","execution":{"taskSupport":"required"}},{"name":"refused","execution":{"taskSupport":"forbidden"}},{"name":"quick","execution":{"taskSupport":"optional"}}],"nextCursor":"x"}}"#;
        let edited = tools_list(config())(message).unwrap();
        assert!(
            edited.contains("123456789012345678901234567890"),
            "{edited}"
        );
        let value: Value = serde_json::from_str(&edited).unwrap();
        let support: Vec<_> = value["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["execution"]["taskSupport"].clone())
            .collect();
        assert_eq!(
            support,
            [
                json!("required"),
                json!("forbidden"),
                json!("optional"),
                json!("required"),
                json!("optional"),
                json!("forbidden")
            ]
        );
        assert_eq!(value["result"]["nextCursor"], "x");
    }

    #[test]
    fn only_a_2025_11_25_initialize_with_a_session_advertises_tasks() {
        let sessions = sessions_for_tests(Duration::from_secs(60));
        let message = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"bogus":1}},"serverInfo":{"name":"s","version":"1"}}}"#;
        let edit = initialize(Some("s1".into()), sessions.clone(), false);
        let edited: Value = serde_json::from_str(&edit(message).unwrap()).unwrap();
        assert_eq!(
            edited["result"]["capabilities"],
            json!({"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}})
        );
        assert_eq!(edited["result"]["serverInfo"]["name"], "s");
        assert_eq!(sessions.touch("s1"), Known::Live);

        let listed = initialize(Some("s2".into()), sessions.clone(), true)(message).unwrap();
        assert!(listed.contains(r#""list":{}"#), "{listed}");

        let older = message.replace("2025-11-25", "2025-06-18");
        assert_eq!(
            initialize(Some("s3".into()), sessions.clone(), true)(&older),
            None
        );
        assert_eq!(sessions.touch("s3"), Known::Unknown);
        assert_eq!(initialize(None, sessions, true)(message), None);
    }
}
