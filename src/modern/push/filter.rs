//! A `subscriptions/listen` filter, read from the place the one parse of
//! the body found it: whether it asks for task status, the task ids, and
//! the body the inner server gets for the rest.

use serde_json::value::RawValue;

use super::listen::ListenCall;
use crate::wire::TASKS_EXTENSION;
use crate::wire::envelope::Json;
use crate::wire::jsonrpc::Reply;
use crate::wire::raw::{Members, edit_object, span};
use crate::wire::splice::{Edit, splice};

/// A listen filter (`params.notifications`) that asks for task status: a
/// `taskIds` member other than `null`.
pub(crate) struct TaskFilter<'a> {
    notifications: Json<'a>,
    members: Members<'a>,
}

impl<'a> TaskFilter<'a> {
    /// The filter `notifications`, when it is an object asking for task
    /// status. Any other listen is the inner server's business.
    pub(crate) fn read(notifications: Option<Json<'a>>) -> Option<Self> {
        let notifications = notifications?;
        let members = Members::parse(notifications.get()).ok()?;
        let task_ids = members.get("taskIds")?;
        (task_ids.get() != "null").then_some(Self {
            notifications,
            members,
        })
    }

    /// The listen the layer serves, from its request `id`, its `body` (in
    /// which this filter lies) and the client's `extensions` object.
    pub(crate) fn call(
        self,
        id: &RawValue,
        body: &[u8],
        extensions: Option<Json<'_>>,
    ) -> Result<ListenCall, Reply> {
        let task_ids = self
            .members
            .get("taskIds")
            .and_then(|ids| serde_json::from_str::<Vec<String>>(ids.get()).ok())
            .ok_or_else(|| {
                Reply::bad_params(
                    Some(id),
                    "params.notifications.taskIds must be an array of strings",
                )
            })?;
        let asks_more = self.members.0.iter().any(|(key, value)| {
            let value = serde_json::from_str::<serde_json::Value>(value.get());
            key != "taskIds"
                && value.is_ok_and(|value| {
                    !matches!(
                        value,
                        serde_json::Value::Null | serde_json::Value::Bool(false)
                    ) && value.as_array().is_none_or(|list| !list.is_empty())
                })
        });
        let forward = match asks_more {
            true => Some(
                without_task_part(body, self.notifications, extensions)
                    .ok_or_else(|| Reply::internal(Some(id), "request parse lost its place"))?,
            ),
            false => None,
        };
        Ok(ListenCall {
            id: id.to_owned(),
            task_ids,
            forward,
        })
    }
}

/// A listen body without `notifications.taskIds` and without the tasks
/// extension among the client's capabilities: what the inner server gets.
/// Every other byte stays as the client sent it.
fn without_task_part(
    body: &[u8],
    notifications: Json<'_>,
    extensions: Option<Json<'_>>,
) -> Option<bytes::Bytes> {
    let filter = Edit::put(
        span(body, notifications.get())?,
        edit_object(notifications.get(), &[("taskIds", None)])?.into_bytes(),
    );
    match extensions {
        Some(extensions) => {
            let capabilities = Edit::put(
                span(body, extensions.get())?,
                edit_object(extensions.get(), &[(TASKS_EXTENSION, None)])?.into_bytes(),
            );
            splice(body, &mut [filter, capabilities])
        }
        None => splice(body, &mut [filter]),
    }
}
