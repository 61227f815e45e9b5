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

use serde::Serialize;

use super::route::{LegacyMethod, LegacyTask, error};
use crate::runtime::RequestContext;
use crate::runtime::{Owner, Runtime, store_failed};
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

/// Answers `tasks/get`, `tasks/list` or `tasks/cancel`.
pub(crate) async fn answer(cx: &RequestContext, call: &LegacyTask) -> Reply {
    let (runtime, owner) = (&*cx.runtime, &cx.owner);
    if call.method == LegacyMethod::List {
        return list(runtime, owner, call).await;
    }
    let owner = owner.key();
    let Some(task) = TaskId::parse(&call.task_id) else {
        return Reply::task_not_found(&call.id);
    };
    match call.method {
        LegacyMethod::Cancel => match runtime.store.cancel(task, owner).await {
            Ok(Some(CancelOutcome::Cancelled(snapshot))) => {
                crate::observe::events::ended(
                    task,
                    crate::observe::events::End::Cancelled { by: "client" },
                    None,
                );
                Reply::result(&call.id, render(&snapshot, TaskView::Legacy))
            }
            Ok(Some(CancelOutcome::AlreadyTerminal(snapshot))) => {
                let status = status_in(&snapshot, TaskView::Legacy);
                let message = format!("Cannot cancel task: already in terminal status '{status}'");
                error(&call.id, INVALID_PARAMS, message)
            }
            Ok(None) => Reply::task_not_found(&call.id),
            Err(e) => store_failed(Some(&call.id), &e),
        },
        _ => match runtime.store.get(task, owner).await {
            Ok(Some(snapshot)) => Reply::result(&call.id, render(&snapshot, TaskView::Legacy)),
            Ok(None) => Reply::task_not_found(&call.id),
            Err(e) => store_failed(Some(&call.id), &e),
        },
    }
}

async fn list(runtime: &Runtime, owner: &Owner, call: &LegacyTask) -> Reply {
    if owner.principal.is_none() {
        let message = "Method not found: tasks/list is served only to authenticated callers";
        return error(&call.id, METHOD_NOT_FOUND, message);
    }
    let page = runtime.config.list_page_size;
    match runtime
        .store
        .list(owner.key(), call.cursor.as_deref(), page)
        .await
    {
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
        Err(e) => store_failed(Some(&call.id), &e),
    }
}
