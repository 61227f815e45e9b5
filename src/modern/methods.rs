//! The task methods, answered by the layer over the store.
//!
//! By the time a call reaches this module its headers, `_meta` and declared
//! extension have been checked (`classify`). What is left is the task itself:
//!
//! | Method         | Found                                   | Unknown, expired or foreign |
//! |----------------|-----------------------------------------|-----------------------------|
//! | `tasks/get`    | the detailed task, `resultType:"complete"` | `-32602`                 |
//! | `tasks/cancel` | `{"resultType":"complete"}`; a running task ends `cancelled` and its inner call stops; a terminal one is unchanged | `-32602` |
//! | `tasks/update` | `{"resultType":"complete"}`; answers to outstanding keys are recorded, others ignored | `-32602` |
//!
//! A store failure answers `-32603`, never "not found".

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::route::{TaskCall, TaskMethod};
use crate::observe::{self, events, events::End};
use crate::runtime::{RequestContext, store_failed};
use crate::store::{CancelOutcome, InputProgress, StoreError};
use crate::task::TaskId;
use crate::wire::jsonrpc::Reply;
use crate::wire::view::{TaskView, render};

/// The empty acknowledgement of `tasks/cancel` and `tasks/update`.
#[derive(serde::Serialize)]
struct Ack {
    #[serde(rename = "resultType")]
    result_type: &'static str,
}

const ACK: Ack = Ack {
    result_type: "complete",
};

/// What answering a task method produced: the reply, and a completed input
/// round the caller must resume.
pub(crate) struct Answered {
    pub reply: Reply,
    pub resume: Option<(TaskId, InputProgress)>,
}

impl From<Reply> for Answered {
    fn from(reply: Reply) -> Self {
        Self {
            reply,
            resume: None,
        }
    }
}

/// Answers one task method call.
/// The task method `call` of the request `cx`.
pub(crate) async fn answer(cx: &RequestContext, call: TaskCall) -> Answered {
    let (runtime, owner) = (&*cx.runtime, cx.owner.key());
    let Some(task) = call.task else {
        return Reply::task_not_found(&call.id).into();
    };
    let failed = |error: StoreError| -> Answered { store_failed(Some(&call.id), &error).into() };
    match call.method {
        TaskMethod::Get => {
            let started = std::time::Instant::now();
            let answered = match runtime.store.get(task, owner).await {
                Ok(Some(snapshot)) => {
                    Reply::result(&call.id, render(&snapshot, TaskView::Detailed)).into()
                }
                Ok(None) => Reply::task_not_found(&call.id).into(),
                Err(error) => failed(error),
            };
            metrics::histogram!(observe::metrics::GET).record(started.elapsed().as_secs_f64());
            answered
        }
        TaskMethod::Cancel => match runtime.store.cancel(task, owner).await {
            Ok(Some(outcome)) => {
                if let CancelOutcome::Cancelled(_) = outcome {
                    events::ended(task, End::Cancelled { by: "client" }, None);
                }
                Reply::result(&call.id, ACK).into()
            }
            Ok(None) => Reply::task_not_found(&call.id).into(),
            Err(error) => failed(error),
        },
        TaskMethod::Update => {
            let Some(raw) = call.input_responses.as_deref() else {
                let message = "params.inputResponses must be an object: it is missing or null";
                return Reply::bad_params(Some(&call.id), message).into();
            };
            let answers: BTreeMap<String, Box<RawValue>> = match serde_json::from_str(raw.get()) {
                Ok(answers) => answers,
                Err(error) => {
                    let message = format!("params.inputResponses must be an object: {error}");
                    return Reply::bad_params(Some(&call.id), message).into();
                }
            };
            // Keys of this generation are `<round>.<key>`; a bare number is
            // a request relayed to a 2025-11-25 client, answered only by a
            // JSON-RPC response from that side.
            let answers = answers
                .into_iter()
                .filter(|(key, _)| key.contains('.'))
                .collect();
            match runtime.store.answer_input(task, owner, answers).await {
                Ok(Some(progress)) => Answered {
                    reply: Reply::result(&call.id, ACK),
                    resume: matches!(progress, InputProgress::RoundComplete { .. })
                        .then_some((task, progress)),
                },
                Ok(None) => Reply::task_not_found(&call.id).into(),
                Err(error) => failed(error),
            }
        }
    }
}
