//! Which messages of a 2025-11-25 session the layer takes part in.
//!
//! | Message (in a 2025-11-25 session, see below)         | Route                                        |
//! |------------------------------------------------------|----------------------------------------------|
//! | `initialize` (any session, any version)              | forwarded; a 2025-11-25 result gains `capabilities.tasks` |
//! | `tools/list`                                         | forwarded; tools gain `execution.taskSupport` |
//! | `tools/call` with `params.task`                      | a task, answered at once                     |
//! | `tools/call` with `params.task`, tool `Never`        | `-32601`                                     |
//! | `tools/call` without `params.task`, tool `Required`  | `-32601`                                     |
//! | `tools/call` without `params.task`                   | forwarded untouched: no threshold, no task   |
//! | `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` | answered by the layer                   |
//! | a response whose id is `"mcp-tasks:<task>:<n>"`      | an answer to a relayed input request         |
//! | `notifications/cancelled` for a task-augmented call  | swallowed (`202`): tasks are cancelled with `tasks/cancel` |
//! | anything else, or a session that is not recorded     | forwarded untouched                          |
//!
//! A request is in a 2025-11-25 session when it has an `Mcp-Session-Id`
//! that the registry has not seen end and either says
//! `MCP-Protocol-Version: 2025-11-25` or, without that header, names a
//! session the registry recorded.
//!
//! Errors are JSON-RPC errors with HTTP 200: in a 2025-11-25 session an HTTP
//! 404 means "your session is gone", which none of them is.

use std::ops::Range;

use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::sessions::{Known, Sessions};
use crate::config::TasksConfig;
use crate::policy::ToolPolicy;
use crate::task::TaskId;
use crate::wire::envelope::{Json, MCP_PROTOCOL_VERSION, Spanned, as_str, header};
use crate::wire::jsonrpc::{ErrorObject, INVALID_PARAMS, METHOD_NOT_FOUND, Reply};
use crate::wire::progress::Place;
use crate::wire::raw::span;

/// The protocol version whose experimental tasks the layer serves.
pub(crate) const LEGACY_VERSION: &str = "2025-11-25";

/// The prefix of the ids the layer gives the requests it relays.
pub(crate) const RELAY_PREFIX: &str = "mcp-tasks:";

/// What the layer does with a message of a 2025-11-25 session.
#[derive(Debug)]
pub(crate) enum LegacyRoute {
    /// `initialize`: forward, then advertise tasks if 2025-11-25 was negotiated.
    Initialize,
    /// `tools/list`: forward, then add `execution.taskSupport` (and, on
    /// the first page, the fallback's tools when it is on).
    ToolsList { session: Box<str>, first_page: bool },
    /// A task-augmented `tools/call`.
    Call(LegacyCall),
    /// A task method.
    Task(LegacyTask),
    /// The client's answer to an input request the layer relayed.
    Answer { task: TaskId, key: String },
    /// A notification the inner server must not see: answered `202`.
    Swallow,
}

/// A task-augmented `tools/call`.
#[derive(Debug)]
pub(crate) struct LegacyCall {
    pub id: Box<RawValue>,
    pub session: Box<str>,
    /// The requested TTL in milliseconds.
    pub ttl: Option<u64>,
    /// Where the request's `id` is in the body.
    pub id_at: Range<usize>,
    /// Where `params` is in the body.
    pub params: Range<usize>,
    /// Where the value of `params.task` is in the body.
    pub task: Range<usize>,
    /// Where `params.name` (the JSON string) is in the body, for the span.
    pub name: Option<Range<usize>>,
    /// Where the layer's progress token goes (`None`: the client sent its
    /// own, or no place is certain).
    pub progress: Option<Place>,
}

impl LegacyRoute {
    /// The MCP method, for the request's span.
    pub(crate) fn method_name(&self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::ToolsList { .. } => "tools/list",
            Self::Call(_) => "tools/call",
            Self::Task(call) => match call.method {
                LegacyMethod::Get => "tasks/get",
                LegacyMethod::Result => "tasks/result",
                LegacyMethod::List => "tasks/list",
                LegacyMethod::Cancel => "tasks/cancel",
            },
            Self::Answer { .. } => "response",
            Self::Swallow => "notification",
        }
    }
}

/// The 2025-11-25 task methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegacyMethod {
    Get,
    Result,
    List,
    Cancel,
}

/// A task method call of a 2025-11-25 session.
#[derive(Debug)]
pub(crate) struct LegacyTask {
    pub id: Box<RawValue>,
    pub method: LegacyMethod,
    /// `params.taskId` (empty for `tasks/list`).
    pub task_id: String,
    /// `params.cursor` of `tasks/list`.
    pub cursor: Option<String>,
}

#[derive(Deserialize)]
struct TaskParam {
    ttl: Option<u64>,
}

/// What `classify` does with a message that carries no 2026-07-28 marks.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Not the layer's business: the inner server gets it untouched.
    Forward,
    /// The layer answers at once, with an error.
    Reply(Reply),
    /// The layer takes part.
    Take(LegacyRoute),
}

/// A JSON-RPC error in a 2025-11-25 session (HTTP 200).
pub(crate) fn error(id: &RawValue, code: i64, message: impl Into<String>) -> Reply {
    Reply::error(StatusCode::OK, Some(id), ErrorObject::new(code, message))
}

/// Classifies a message that carries no 2026-07-28 marks.
pub(crate) fn classify(
    headers: &HeaderMap,
    id: Option<Json<'_>>,
    method: Option<&str>,
    spanned: &Spanned<'_>,
    body: &[u8],
    config: &TasksConfig,
    sessions: &Sessions,
) -> Decision {
    let params = &spanned.fields;
    if method == Some("initialize") && id.is_some() {
        return Decision::Take(LegacyRoute::Initialize);
    }
    let Some(session) = header(headers, "mcp-session-id") else {
        return Decision::Forward;
    };
    // The negotiated version travels on every request after initialize; a
    // client that leaves it out is known by its recorded session. A session
    // the registry forgot (idle, evicted, another instance) is still served
    // when it says 2025-11-25: its tasks are in the store, owner-checked.
    let legacy = match (
        sessions.touch(session),
        header(headers, &MCP_PROTOCOL_VERSION),
    ) {
        // Ended: the inner server answers 404, as it must.
        (Known::Ended, _) => false,
        (_, Some(version)) => version == LEGACY_VERSION,
        (known, None) => known == Known::Live,
    };
    if !legacy {
        return Decision::Forward;
    }
    // The id as a `&RawValue` only once the session is one the layer serves.
    let route = match (id.map(Json::raw), method) {
        (Some(id), None) => match relayed(id) {
            Some((task, key)) => LegacyRoute::Answer { task, key },
            None => return Decision::Forward,
        },
        (None, Some("notifications/cancelled")) => match params.request_id {
            Some(request) if sessions.is_augmented(session, request) => LegacyRoute::Swallow,
            _ => return Decision::Forward,
        },
        (Some(id), Some(method)) => return request(id, method, session, spanned, body, config),
        _ => return Decision::Forward,
    };
    Decision::Take(route)
}

fn request(
    id: &RawValue,
    method: &str,
    session: &str,
    spanned: &Spanned<'_>,
    body: &[u8],
    config: &TasksConfig,
) -> Decision {
    let params = &spanned.fields;
    let route = match method {
        "tools/list" => LegacyRoute::ToolsList {
            session: session.into(),
            first_page: params.cursor.is_none(),
        },
        "tools/call" => return tool_call(id, session, spanned, body, config),
        "tasks/get" | "tasks/result" | "tasks/cancel" => {
            let Some(task_id) = as_str(params.task_id) else {
                return Decision::Reply(error(
                    id,
                    INVALID_PARAMS,
                    "params.taskId must be a string",
                ));
            };
            let method = match method {
                "tasks/get" => LegacyMethod::Get,
                "tasks/result" => LegacyMethod::Result,
                _ => LegacyMethod::Cancel,
            };
            LegacyRoute::Task(LegacyTask {
                id: id.to_owned(),
                method,
                task_id: task_id.into_owned(),
                cursor: None,
            })
        }
        "tasks/list" => {
            let cursor = match params.cursor {
                None => None,
                Some(raw) if raw.get() == "null" => None,
                Some(raw) => match as_str(Some(raw.into())) {
                    Some(cursor) => Some(cursor.into_owned()),
                    None => {
                        return Decision::Reply(error(
                            id,
                            INVALID_PARAMS,
                            "params.cursor must be a string",
                        ));
                    }
                },
            };
            LegacyRoute::Task(LegacyTask {
                id: id.to_owned(),
                method: LegacyMethod::List,
                task_id: String::new(),
                cursor,
            })
        }
        _ => return Decision::Forward,
    };
    Decision::Take(route)
}

fn tool_call(
    id: &RawValue,
    session: &str,
    spanned: &Spanned<'_>,
    body: &[u8],
    config: &TasksConfig,
) -> Decision {
    let params = &spanned.fields;
    let name = as_str(params.name);
    let name = name.as_deref().unwrap_or_default();
    let policy = config.policy_for(name);
    let task = params.task.filter(|raw| raw.get() != "null");
    let Some(task) = task else {
        if policy == ToolPolicy::Required {
            let message = format!(
                "Tool {name:?} requires task augmentation: send params.task (taskSupport \"required\")"
            );
            return Decision::Reply(error(id, METHOD_NOT_FOUND, message));
        }
        return Decision::Forward;
    };
    if policy == ToolPolicy::Never {
        let message =
            format!("Tool {name:?} does not support task augmentation (taskSupport \"forbidden\")");
        return Decision::Reply(error(id, METHOD_NOT_FOUND, message));
    }
    let ttl = match serde_json::from_str::<TaskParam>(task.get()) {
        Ok(task) => task.ttl,
        Err(_) => {
            return Decision::Reply(error(
                id,
                INVALID_PARAMS,
                "params.task must be an object whose ttl is a number of milliseconds",
            ));
        }
    };
    let spans = (
        span(body, id.get()),
        spanned.span(body),
        span(body, task.get()),
    );
    match spans {
        (Some(id_at), Some(params), Some(task)) => Decision::Take(LegacyRoute::Call(LegacyCall {
            id: id.to_owned(),
            session: session.into(),
            ttl,
            id_at,
            params,
            task,
            name: spanned.name_span(body),
            progress: spanned.progress_place(body),
        })),
        _ => Decision::Reply(error(id, INVALID_PARAMS, "params must be an object")),
    }
}

/// The task and key of a relayed request's id, `"mcp-tasks:<task>:<n>"`.
pub(crate) fn relayed(id: &RawValue) -> Option<(TaskId, String)> {
    let text: String = serde_json::from_str(id.get()).ok()?;
    let rest = text.strip_prefix(RELAY_PREFIX)?;
    let (task, key) = rest.split_once(':')?;
    let valid = !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit());
    Some((TaskId::parse(task)?, key.to_owned())).filter(|_| valid)
}

/// The id the layer gives the `n`th request it relays for `task`.
pub(crate) fn relay_id(task: TaskId, n: u32) -> String {
    format!("{RELAY_PREFIX}{task}:{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_ids_round_trip_and_other_ids_are_not_relays() {
        let task = TaskId::generate().unwrap();
        let id = RawValue::from_string(serde_json::to_string(&relay_id(task, 3)).unwrap()).unwrap();
        assert_eq!(relayed(&id), Some((task, "3".to_owned())));
        for other in [
            "7",
            r#""mcp-tasks:nope:1""#,
            r#""abc""#,
            r#""mcp-tasks:00000000000000000000000000000001:""#,
        ] {
            let other = RawValue::from_string(other.to_owned()).unwrap();
            assert_eq!(relayed(&other), None, "{other}");
        }
    }
}
