//! `tasks/get`, `tasks/list` and `tasks/cancel` of a 2025-11-25 session.
//!
//! | Method         | Answer                                                   | Errors                                   |
//! |----------------|----------------------------------------------------------|------------------------------------------|
//! | `tasks/get`    | the flat task (`ttl`, `pollInterval`)                     | `-32602` unknown, expired or foreign     |
//! | `tasks/list`   | `{"tasks":[…],"nextCursor"?}`, the caller's tasks only, oldest first | `-32602` bad cursor; `-32601` without a principal |
//! | `tasks/cancel` | the task, already `cancelled`; the inner call is told    | `-32602` unknown, or already terminal    |
//!
//! Anonymous callers cannot list: without a principal every anonymous
//! client would share one list, and `tasks/list` would hand out the ids that
//! are the only protection of unowned tasks. The `initialize` result
//! advertises `tasks.list` only to a caller with a principal, as 2025-11-25
//! asks of servers that cannot tell requestors apart.

use http::request::Parts;
use serde::Serialize;

use super::route::{LegacyMethod, LegacyTask, error};
use crate::service::Shared;
use crate::store::{CancelOutcome, StoreError};
use crate::task::TaskId;
use crate::wire::jsonrpc::{INVALID_PARAMS, METHOD_NOT_FOUND, Reply};
use crate::wire::view::{Rendered, TaskView, render, status_in};

/// `tasks/list` result.
#[derive(Serialize)]
struct Listed<'a> {
    tasks: Vec<Rendered<'a>>,
    #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
}

fn store_failed(id: &serde_json::value::RawValue, error: StoreError) -> Reply {
    tracing::warn!(%error, "task store failed");
    Reply::internal(Some(id), format!("The task store failed: {error}"))
}

/// Answers `tasks/get`, `tasks/list` or `tasks/cancel`.
pub(crate) async fn answer(shared: &Shared, parts: &Parts, call: &LegacyTask) -> Reply {
    let owner = shared.owner.resolve(parts);
    let owner = owner.as_deref();
    if call.method == LegacyMethod::List {
        return list(shared, owner, call).await;
    }
    let Some(task) = TaskId::parse(&call.task_id) else {
        return Reply::task_not_found(&call.id);
    };
    match call.method {
        LegacyMethod::Cancel => match shared.store.cancel(task, owner).await {
            Ok(Some(CancelOutcome::Cancelled(snapshot))) => {
                Reply::result(&call.id, render(&snapshot, TaskView::Legacy))
            }
            Ok(Some(CancelOutcome::AlreadyTerminal(snapshot))) => {
                let status = status_in(&snapshot, TaskView::Legacy);
                let message = format!("Cannot cancel task: already in terminal status '{status}'");
                error(&call.id, INVALID_PARAMS, message)
            }
            Ok(None) => Reply::task_not_found(&call.id),
            Err(e) => store_failed(&call.id, e),
        },
        _ => match shared.store.get(task, owner).await {
            Ok(Some(snapshot)) => Reply::result(&call.id, render(&snapshot, TaskView::Legacy)),
            Ok(None) => Reply::task_not_found(&call.id),
            Err(e) => store_failed(&call.id, e),
        },
    }
}

async fn list(shared: &Shared, owner: Option<&str>, call: &LegacyTask) -> Reply {
    if owner.is_none() {
        let message = "Method not found: tasks/list is served only to authenticated callers";
        return error(&call.id, METHOD_NOT_FOUND, message);
    }
    let page = shared.config.list_page_size;
    match shared.store.list(owner, call.cursor.as_deref(), page).await {
        Ok(list) => {
            let listed = Listed {
                tasks: list
                    .tasks
                    .iter()
                    .map(|task| render(task, TaskView::Legacy))
                    .collect(),
                next_cursor: list.next_cursor.as_deref(),
            };
            Reply::result(&call.id, listed)
        }
        Err(StoreError::InvalidCursor) => error(
            &call.id,
            INVALID_PARAMS,
            "Invalid cursor: it was not given out by tasks/list",
        ),
        Err(e) => store_failed(&call.id, e),
    }
}
