//! What the fallback answers: the result of a call that went on as a task,
//! and the calls of the two added tools.
//!
//! | The task is…   | `get_task_result` answers                                  | `isError` |
//! |----------------|------------------------------------------------------------|-----------|
//! | `working`      | its status and last progress message, and when to ask again | no        |
//! | `input_required` | that it waits for input only a client with tasks can give | no        |
//! | `completed`    | the call's own result, as the tool gave it                 | as the tool said |
//! | `failed`       | the error                                                  | yes       |
//! | `cancelled`    | that it was cancelled                                      | yes       |
//! | unknown, expired or another principal's | that there is no such task         | yes       |
//!
//! These are tool results, not JSON-RPC errors, so that the model driving
//! the client reads them; only a store failure is a JSON-RPC error
//! (`-32603`). A 2026-07-28 result carries `resultType: "complete"`; an
//! older one has none.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{Added, Names};
use crate::observe::{events, events::End};
use crate::runtime::{RequestContext, store_failed};
use crate::store::CancelOutcome;
use crate::task::{TaskId, TaskSnapshot, TaskState};
use crate::wire::jsonrpc::Reply;
use crate::wire::raw::edit_object;

/// A call of one of the added tools.
#[derive(Debug)]
pub(crate) struct AddedCall {
    pub id: Box<RawValue>,
    pub tool: Added,
    /// The client speaks 2026-07-28.
    pub modern: bool,
}

/// A tool result with one text and structured content.
fn tool_result(modern: bool, text: String, structured: Value, is_error: bool) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
    });
    if is_error {
        result["isError"] = Value::Bool(true);
    }
    if modern {
        result["resultType"] = Value::from("complete");
    }
    result
}

/// What a task is, as structured content.
fn status_of(task: &TaskSnapshot) -> Value {
    let mut status = json!({
        "taskId": task.id.to_string(),
        "status": task.status().as_str(),
    });
    if let Some(message) = &task.status_message {
        status["statusMessage"] = Value::from(message.as_str());
    }
    if let Some(poll) = task.poll_interval {
        status["pollIntervalMs"] = Value::from(u64::try_from(poll.as_millis()).unwrap_or(u64::MAX));
    }
    status
}

/// "in about N s", from the task's poll interval.
fn again(task: &TaskSnapshot) -> String {
    let seconds = task.poll_interval.map_or(5, |poll| poll.as_secs().max(1));
    format!("in about {seconds} s")
}

/// The answer to a call that went on as `task`: it names the task and the
/// tools that read and cancel it.
pub(crate) fn parked(task: &TaskSnapshot, names: &Names, modern: bool) -> Value {
    let text = format!(
        "The tool is still running; its work goes on as task {id}. Call the tool {result} with {{\"taskId\": \"{id}\"}} {again} for its outcome, or {cancel} to stop it.",
        id = task.id,
        result = names.result,
        cancel = names.cancel,
        again = again(task),
    );
    tool_result(modern, text, status_of(task), false)
}

/// The task id a call of an added tool names, from its body.
fn task_id(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Request {
        params: Option<Params>,
    }
    #[derive(Deserialize)]
    struct Params {
        arguments: Option<Arguments>,
    }
    #[derive(Deserialize)]
    struct Arguments {
        #[serde(rename = "taskId")]
        task_id: Option<Value>,
    }
    let request: Request = serde_json::from_slice(body).ok()?;
    match request.params?.arguments?.task_id? {
        Value::String(id) => Some(id),
        _ => None,
    }
}

/// Answers a call of an added tool for the request `cx`.
pub(crate) async fn answer(cx: &RequestContext, call: AddedCall) -> Reply {
    let (runtime, owner, body) = (&*cx.runtime, cx.owner.key(), &cx.body[..]);
    let modern = call.modern;
    let Some(asked) = task_id(body) else {
        let text = "The argument taskId (a string) is required.".to_owned();
        return Reply::result(&call.id, tool_result(modern, text, json!({}), true));
    };
    let unknown = || {
        let text = format!("There is no task {asked}: it is unknown, expired, or not yours.");
        let structured = json!({"taskId": asked, "status": "unknown"});
        Reply::result(&call.id, tool_result(modern, text, structured, true))
    };
    let Some(task) = TaskId::parse(&asked) else {
        return unknown();
    };
    match call.tool {
        Added::Result => match runtime.store.get(task, owner).await {
            Ok(Some(snapshot)) => Reply::result(&call.id, outcome(&snapshot, modern)),
            Ok(None) => unknown(),
            Err(error) => store_failed(Some(&call.id), &error),
        },
        Added::Cancel => match runtime.store.cancel(task, owner).await {
            Ok(Some(CancelOutcome::Cancelled(snapshot))) => {
                events::ended(task, End::Cancelled { by: "client" }, None);
                let text = format!("Task {task} is cancelled.");
                Reply::result(
                    &call.id,
                    tool_result(modern, text, status_of(&snapshot), false),
                )
            }
            Ok(Some(CancelOutcome::AlreadyTerminal(snapshot))) => {
                let text = format!(
                    "Task {task} had already ended ({}); nothing to cancel.",
                    snapshot.status().as_str()
                );
                Reply::result(
                    &call.id,
                    tool_result(modern, text, status_of(&snapshot), false),
                )
            }
            Ok(None) => unknown(),
            Err(error) => store_failed(Some(&call.id), &error),
        },
    }
}

/// The result tool's answer for `task`.
fn outcome(task: &TaskSnapshot, modern: bool) -> Box<RawValue> {
    let (text, is_error) = match &task.state {
        TaskState::Completed { result } => return own_result(result, modern),
        TaskState::Working => {
            let progress = task
                .status_message
                .as_deref()
                .map(|message| format!(" Progress: {message}."))
                .unwrap_or_default();
            let text = format!(
                "Task {} is still running.{progress} Ask again {}.",
                task.id,
                again(task)
            );
            (text, false)
        }
        TaskState::InputRequired { .. } => {
            let text = format!(
                "Task {} is waiting for input that only a client with tasks can give; cancel it if no such client will.",
                task.id
            );
            (text, false)
        }
        TaskState::Failed { error } => {
            let why = crate::wire::jsonrpc::error_message(error)
                .unwrap_or_else(|| "no reason given".to_owned());
            (format!("Task {} failed: {why}", task.id), true)
        }
        TaskState::Cancelled => (format!("Task {} was cancelled.", task.id), true),
    };
    let mut status = status_of(task);
    if let TaskState::Failed { error } = &task.state {
        status["error"] = serde_json::from_str(error.get()).unwrap_or(Value::Null);
    }
    let value = tool_result(modern, text, status, is_error);
    serde_json::value::to_raw_value(&value).unwrap_or_else(|_| crate::wire::raw::empty_object())
}

/// The call's own result, with `resultType` as the client's protocol has it.
fn own_result(result: &RawValue, modern: bool) -> Box<RawValue> {
    let edit = if modern {
        ("resultType", Some(r#""complete""#))
    } else {
        ("resultType", None)
    };
    edit_object(result.get(), &[edit])
        .and_then(|text| RawValue::from_string(text).ok())
        .unwrap_or_else(|| result.to_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::fallback::Fallback;

    fn snapshot(state: TaskState) -> TaskSnapshot {
        TaskSnapshot {
            status_message: Some("step 3 of 9".into()),
            poll_interval: Some(Duration::from_secs(2)),
            ..TaskSnapshot::example(state)
        }
    }

    fn value(raw: impl AsRef<RawValue>) -> Value {
        serde_json::from_str(raw.as_ref().get()).unwrap()
    }

    #[test]
    fn the_parked_answer_names_the_task_and_both_tools() {
        let task = snapshot(TaskState::Working);
        let names = Fallback::default().names;
        let answer = parked(&task, &names, true);
        let text = answer["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(&task.id.to_string()), "{text}");
        assert!(text.contains("get_task_result") && text.contains("cancel_task"));
        assert!(text.contains("in about 2 s"), "{text}");
        assert_eq!(answer["structuredContent"]["taskId"], task.id.to_string());
        assert_eq!(answer["structuredContent"]["status"], "working");
        assert_eq!(answer["resultType"], "complete");
        assert!(answer.get("isError").is_none());
        assert!(parked(&task, &names, false).get("resultType").is_none());
    }

    #[test]
    fn a_completed_task_answers_the_calls_own_result_in_the_clients_terms() {
        let result = RawValue::from_string(
            r#"{"content":[{"type":"text","text":"done"}],"resultType":"complete"}"#.into(),
        )
        .unwrap();
        let task = snapshot(TaskState::Completed { result });
        let old = value(outcome(&task, false));
        assert_eq!(old["content"][0]["text"], "done");
        assert!(old.get("resultType").is_none());
        let older = RawValue::from_string(r#"{"content":[],"isError":true}"#.into()).unwrap();
        let modern = value(outcome(
            &snapshot(TaskState::Completed { result: older }),
            true,
        ));
        assert_eq!(modern["resultType"], "complete");
        assert_eq!(modern["isError"], true);
    }

    #[test]
    fn progress_failure_and_cancellation_read_as_tool_results() {
        let working = value(outcome(&snapshot(TaskState::Working), false));
        let text = working["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("still running") && text.contains("step 3 of 9"),
            "{text}"
        );
        assert_eq!(working["structuredContent"]["statusMessage"], "step 3 of 9");
        assert!(working.get("isError").is_none());

        let error =
            RawValue::from_string(r#"{"code":-32603,"message":"disk full"}"#.into()).unwrap();
        let failed = value(outcome(&snapshot(TaskState::Failed { error }), false));
        assert_eq!(failed["isError"], true);
        assert!(
            failed["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("disk full")
        );
        assert_eq!(failed["structuredContent"]["error"]["code"], -32603);

        let cancelled = value(outcome(&snapshot(TaskState::Cancelled), true));
        assert_eq!(cancelled["isError"], true);
        assert_eq!(cancelled["structuredContent"]["status"], "cancelled");
    }

    #[test]
    fn the_task_id_is_read_from_the_arguments() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_task_result","arguments":{"taskId":"abc"}}}"#;
        assert_eq!(task_id(body).as_deref(), Some("abc"));
        let number = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"taskId":7}}}"#;
        assert_eq!(task_id(number), None);
        let none = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert_eq!(task_id(none), None);
    }
}
