//! Reading script replies back into tasks.
//!
//! Scripts answer in plain arrays of strings. A Lua `false` arrives as nil on
//! RESP2 and as a boolean on RESP3; both read as "absent" here, so the store
//! works whichever protocol the connection URL asks for.

use std::time::Duration;

use redis::Value;
use serde_json::value::RawValue;

use super::super::StoreError;
use crate::task::{TaskId, TaskSnapshot, TaskState, TaskStatus, Timestamp};

/// A reply that does not have the shape its script gives: another writer
/// under the same prefix, or a bug. Never "no such task".
pub(super) fn corrupt(what: &str) -> StoreError {
    StoreError::backend(format!("unexpected task record in Redis: {what}"))
}

/// Whether a reply is Lua's `false` (or `nil`).
pub(super) fn is_absent(value: &Value) -> bool {
    matches!(value, Value::Nil | Value::Boolean(false))
}

/// One reply element as text; `None` when absent.
pub(super) fn text(value: Value) -> Result<Option<String>, StoreError> {
    match value {
        Value::Nil | Value::Boolean(false) => Ok(None),
        Value::BulkString(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| corrupt("text that is not UTF-8")),
        Value::SimpleString(text) => Ok(Some(text)),
        Value::Int(number) => Ok(Some(number.to_string())),
        _ => Err(corrupt("a nested reply where text was expected")),
    }
}

/// A reply element that must be present.
pub(super) fn required(value: Option<Value>, what: &str) -> Result<String, StoreError> {
    text(value.ok_or_else(|| corrupt(what))?)?.ok_or_else(|| corrupt(what))
}

/// The elements of an array reply.
pub(super) fn items(value: Value) -> Result<Vec<Value>, StoreError> {
    match value {
        Value::Array(items) | Value::Set(items) => Ok(items),
        _ => Err(corrupt("a scalar where an array was expected")),
    }
}

/// A status by its wire name.
pub(super) fn status(name: &str) -> Result<TaskStatus, StoreError> {
    Ok(match name {
        "working" => TaskStatus::Working,
        "input_required" => TaskStatus::InputRequired,
        "completed" => TaskStatus::Completed,
        "failed" => TaskStatus::Failed,
        "cancelled" => TaskStatus::Cancelled,
        _ => return Err(corrupt("an unknown status")),
    })
}

/// The reply of a write script: `1` written, absent for no such task, or the
/// status that refused the transition (`to` names the status asked for).
pub(super) fn written(
    value: Value,
    to: impl FnOnce(TaskStatus) -> TaskStatus,
) -> Result<(), StoreError> {
    match value {
        Value::Int(1) | Value::Boolean(true) => Ok(()),
        value if is_absent(&value) => Err(StoreError::NotFound),
        value => {
            let from = status(&text(value)?.ok_or_else(|| corrupt("no status"))?)?;
            Err(StoreError::InvalidTransition { from, to: to(from) })
        }
    }
}

pub(super) fn raw(text: String) -> Result<Box<RawValue>, StoreError> {
    RawValue::from_string(text).map_err(|_| corrupt("a payload that is not JSON"))
}

fn millis(text: Option<String>, what: &str) -> Result<Timestamp, StoreError> {
    text.and_then(|t| t.parse().ok())
        .map(Timestamp::from_millis)
        .ok_or_else(|| corrupt(what))
}

/// A duration stored as decimal nanoseconds, so that any `Duration` round-trips.
pub(super) fn nanos_text(duration: Duration) -> String {
    duration.as_nanos().to_string()
}

fn nanos(text: Option<String>) -> Result<Option<Duration>, StoreError> {
    let Some(text) = text else { return Ok(None) };
    let nanos: u128 = text.parse().map_err(|_| corrupt("a duration"))?;
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| corrupt("a duration"))?;
    Ok(Some(Duration::new(secs, (nanos % 1_000_000_000) as u32)))
}

/// Reads the snapshot `prelude.lua` appends, which is also the reply of
/// `get`'s `HMGET`: status, created, updated, ttl, poll, message, payload,
/// then the outstanding requests as one JSON object (input rounds only).
pub(super) fn snapshot(
    id: TaskId,
    fields: impl IntoIterator<Item = Value>,
) -> Result<TaskSnapshot, StoreError> {
    let mut fields = fields.into_iter();
    let mut next = || fields.next().map(text).transpose().map(Option::flatten);
    let status = status(&next()?.ok_or_else(|| corrupt("no status"))?)?;
    let created_at = millis(next()?, "creation time")?;
    let last_updated_at = millis(next()?, "update time")?;
    let ttl = nanos(next()?)?;
    let poll_interval = nanos(next()?)?;
    let status_message = next()?;
    let payload = next()?;
    let requests = next()?;
    let payload = || raw(payload.clone().ok_or_else(|| corrupt("no outcome"))?);
    let state = match status {
        TaskStatus::Working => TaskState::Working,
        TaskStatus::Completed => TaskState::Completed { result: payload()? },
        TaskStatus::Failed => TaskState::Failed { error: payload()? },
        TaskStatus::Cancelled => TaskState::Cancelled,
        TaskStatus::InputRequired => TaskState::InputRequired {
            requests: raw(requests.ok_or_else(|| corrupt("an input round without requests"))?)?,
        },
    };
    Ok(TaskSnapshot {
        id,
        state,
        status_message,
        created_at,
        last_updated_at,
        ttl,
        poll_interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_duration_round_trips_through_its_stored_text() {
        for duration in [
            Duration::ZERO,
            Duration::from_millis(250),
            Duration::new(3600, 1),
            Duration::MAX,
        ] {
            assert_eq!(nanos(Some(nanos_text(duration))).unwrap(), Some(duration));
        }
    }

    #[test]
    fn a_write_reply_maps_to_ok_not_found_or_the_refusing_status() {
        assert!(written(Value::Int(1), |s| s).is_ok());
        assert!(matches!(
            written(Value::Nil, |s| s),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            written(Value::Boolean(false), |s| s),
            Err(StoreError::NotFound)
        ));
        let refused = written(Value::BulkString(b"cancelled".to_vec()), |_| {
            TaskStatus::Completed
        });
        assert!(matches!(
            refused,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::Cancelled,
                to: TaskStatus::Completed
            })
        ));
    }
}
