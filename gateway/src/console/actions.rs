//! The operator's actions: `POST /console/api/tasks/{id}/cancel` and
//! `POST /console/api/tasks/{id}/delete`.
//!
//! Each needs what [`Access::who_may_change`](super::access) asks (the
//! credential; from a browser, its own origin and its session's token),
//! and writes one audit line (`info`, target `mcp_tasks_gateway::audit`)
//! with the action, the task, who and the outcome. The page asks the
//! operator to confirm first.
//!
//! | Action | Answer |
//! |--------|--------|
//! | cancel a running task | `200 {"row": ...}`: the inner call is dropped, as for its owner's `tasks/cancel` |
//! | cancel a finished task | `409`: it stays as it was |
//! | delete a finished task | `200 {"deleted": id}` |
//! | delete a running task | `409`: cancel it first |
//! | an unknown or expired id, another action | `404` |

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_tasks::{Admin, CancelOutcome, StoreError, TaskId, Timestamp};

use super::Shared;
use super::access::refuse;
use super::row::Row;

/// The audit log's target.
pub const AUDIT: &str = "mcp_tasks_gateway::audit";

/// An answer and what the audit line says of it.
type Done = (Response, &'static str);

/// The handler of both actions.
pub(crate) async fn act(
    axum::extract::State(state): Shared,
    headers: HeaderMap,
    Path((id, action)): Path<(String, String)>,
) -> Response {
    let who = match state.access.who_may_change(&headers) {
        Ok(who) => who,
        Err(refused) => return *refused,
    };
    let (Some(id), action @ ("cancel" | "delete")) = (TaskId::parse(&id), action.as_str()) else {
        return refuse(StatusCode::NOT_FOUND, "no such task or action");
    };
    let (answer, said) = match action {
        "cancel" => cancel(&state.admin, id).await,
        _ => delete(&state.admin, id).await,
    };
    tracing::info!(target: AUDIT, action, task = %id, by = %who.label(), outcome = said, "operator action");
    answer
}

/// Cancels a running task.
async fn cancel(admin: &Admin, id: TaskId) -> Done {
    match admin.cancel(id).await {
        Ok(Some(CancelOutcome::Cancelled(_))) => {
            let answer = match admin.get(id).await {
                Ok(Some(task)) => serde_json::json!({ "row": Row::of(&task, Timestamp::now()) }),
                _ => serde_json::json!({ "gone": id.to_string() }),
            };
            (axum::Json(answer).into_response(), "cancelled")
        }
        Ok(Some(_)) => (
            refuse(StatusCode::CONFLICT, "the task has finished already"),
            "refused: finished",
        ),
        Ok(None) => unknown(),
        Err(error) => failed(error),
    }
}

/// Deletes a finished task. Only a finished one: a running one is
/// cancelled first, so that its owner learns it ended instead of finding
/// nothing.
async fn delete(admin: &Admin, id: TaskId) -> Done {
    match admin.get(id).await {
        Ok(None) => unknown(),
        Ok(Some(task)) if !task.snapshot.status().is_terminal() => (
            refuse(
                StatusCode::CONFLICT,
                "the task is still running: cancel it first",
            ),
            "refused: running",
        ),
        Ok(Some(_)) => match admin.delete(id).await {
            Ok(Some(_)) => {
                let answer = serde_json::json!({ "deleted": id.to_string() });
                (axum::Json(answer).into_response(), "deleted")
            }
            Ok(None) => unknown(),
            Err(error) => failed(error),
        },
        Err(error) => failed(error),
    }
}

fn unknown() -> Done {
    (
        refuse(StatusCode::NOT_FOUND, "no such task"),
        "refused: unknown",
    )
}

fn failed(error: StoreError) -> Done {
    tracing::warn!(target: AUDIT, %error, "the store did not answer an operator action");
    (
        refuse(StatusCode::SERVICE_UNAVAILABLE, "the store did not answer"),
        "failed: store",
    )
}
