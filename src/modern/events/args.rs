//! The params of `events/poll`, `events/stream`, `events/subscribe` and
//! `events/unsubscribe` for the layer's event type, read and checked.
//!
//! | Param | Checked | Refused with |
//! |-------|---------|--------------|
//! | `arguments` | an object with at most `taskIds` (1 to 100 strings) and `statuses` (known status names); nothing else | `-32602` |
//! | `cursor` | a string or `null` (`null`, or absent: from now) | `-32602` |
//! | `maxAgeMs`, `maxEvents` | non-negative integers | `-32602` |
//! | `delivery` (webhooks) | `mode` `webhook`, `url` a string, `secret` a string | `-32602` (another mode: `Unsupported`) |
//! | `ttlMs` (webhooks) | absent, `null` or a non-negative integer | `-32602` |
//!
//! The tasks named in `taskIds` are checked against the store by the
//! callers: another principal's task is refused like one that never
//! existed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::task::{TaskId, TaskStatus};

/// The most task ids one subscription may name.
pub(super) const MAX_TASK_IDS: usize = 100;

/// Which of the caller's status changes a subscription wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// Only these tasks (as the client wrote them, and parsed); `None`:
    /// every task of the caller's.
    pub task_ids: Option<Vec<(String, Option<TaskId>)>>,
    /// Only changes to these statuses; `None`: every status.
    pub statuses: Option<Vec<TaskStatus>>,
}

impl Filter {
    /// Whether a change of task `id` to `status` is wanted.
    pub(crate) fn wants(&self, id: TaskId, status: TaskStatus) -> bool {
        let task = self
            .task_ids
            .as_ref()
            .is_none_or(|ids| ids.iter().any(|(_, parsed)| *parsed == Some(id)));
        let status = self
            .statuses
            .as_ref()
            .is_none_or(|statuses| statuses.contains(&status));
        task && status
    }

    /// Reads `arguments` (absent or `null`: everything).
    pub(crate) fn read(arguments: Option<&Value>) -> Result<Self, String> {
        let Some(arguments) = arguments.filter(|value| !value.is_null()) else {
            return Ok(Self::default());
        };
        let Value::Object(fields) = arguments else {
            return Err("arguments must be an object".into());
        };
        let mut filter = Self::default();
        for (key, value) in fields {
            match key.as_str() {
                "taskIds" => filter.task_ids = Some(task_ids(value)?),
                "statuses" => filter.statuses = Some(statuses(value)?),
                other => return Err(format!("arguments.{other} is not a known argument")),
            }
        }
        Ok(filter)
    }
}

fn task_ids(value: &Value) -> Result<Vec<(String, Option<TaskId>)>, String> {
    let Value::Array(items) = value else {
        return Err("arguments.taskIds must be an array of strings".into());
    };
    if items.is_empty() || items.len() > MAX_TASK_IDS {
        return Err(format!(
            "arguments.taskIds must name 1 to {MAX_TASK_IDS} tasks"
        ));
    }
    items
        .iter()
        .map(|item| match item {
            Value::String(text) => Ok((text.clone(), TaskId::parse(text))),
            _ => Err("arguments.taskIds must be an array of strings".into()),
        })
        .collect()
}

fn statuses(value: &Value) -> Result<Vec<TaskStatus>, String> {
    let message = "arguments.statuses must be an array of task statuses";
    let Value::Array(items) = value else {
        return Err(message.into());
    };
    items
        .iter()
        .map(|item| {
            let name = item.as_str().ok_or(message)?;
            STATUSES
                .iter()
                .find(|status| status.as_str() == name)
                .copied()
                .ok_or_else(|| format!("arguments.statuses: {name} is not a task status"))
        })
        .collect()
}

/// Every status a task event may carry.
pub(super) const STATUSES: [TaskStatus; 5] = TaskStatus::ALL;

/// The params every events method of the layer's type reads.
#[derive(Debug, Deserialize)]
struct Raw {
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default, rename = "maxAgeMs")]
    max_age_ms: Option<u64>,
    #[serde(default, rename = "maxEvents")]
    max_events: Option<u64>,
    #[serde(default)]
    delivery: Option<RawDelivery>,
    #[serde(default, rename = "ttlMs", deserialize_with = "present")]
    ttl_ms: Option<Option<u64>>,
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or set.
fn present<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(de).map(Some)
}

#[derive(Debug, Deserialize)]
struct RawDelivery {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    secret: Option<String>,
}

/// A webhook's `delivery`, as given.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub mode: Option<String>,
    pub url: String,
    pub secret: Option<String>,
}

/// The params of one events request of the layer's type.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    pub filter: Filter,
    /// `arguments` as canonical JSON (sorted keys): part of a webhook
    /// subscription's key.
    pub arguments: String,
    pub cursor: Option<String>,
    pub max_age: Option<Duration>,
    pub max_events: Option<usize>,
    pub delivery: Option<Delivery>,
    /// Absent: the default; `Some(None)`: no expiry asked.
    pub ttl: Option<Option<Duration>>,
}

impl Asked {
    /// Reads `params` (the whole `params` object of the request).
    pub(crate) fn read(params: &str) -> Result<Self, String> {
        let raw: Raw = serde_json::from_str(params)
            .map_err(|error| format!("params are not those of an events request: {error}"))?;
        let filter = Filter::read(raw.arguments.as_ref())?;
        let delivery = match raw.delivery {
            None => None,
            Some(delivery) => Some(Delivery {
                mode: delivery.mode,
                url: delivery.url.ok_or("delivery.url must be a string")?,
                secret: delivery.secret,
            }),
        };
        Ok(Self {
            filter,
            arguments: canonical(raw.arguments.as_ref()),
            cursor: raw.cursor,
            max_age: raw.max_age_ms.map(Duration::from_millis),
            max_events: raw
                .max_events
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            delivery,
            ttl: raw.ttl_ms.map(|ttl| ttl.map(Duration::from_millis)),
        })
    }
}

/// `arguments` as JSON with every object's keys sorted and no spaces
/// (absent or `null`: `{}`).
fn canonical(arguments: Option<&Value>) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(fields) => {
                let fields: BTreeMap<&String, Value> =
                    fields.iter().map(|(k, v)| (k, sorted(v))).collect();
                serde_json::to_value(fields).unwrap_or(Value::Null)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    match arguments.filter(|value| !value.is_null()) {
        None => "{}".to_owned(),
        Some(value) => sorted(value).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_tasks_and_statuses_and_nothing_else() {
        let asked = Asked::read(
            r#"{"name":"x","arguments":{"statuses":["completed"],"taskIds":["00000000000000000000000000000abc"]},"cursor":"c1","maxEvents":5}"#,
        )
        .unwrap();
        let id = TaskId::parse("00000000000000000000000000000abc").unwrap();
        assert!(asked.filter.wants(id, TaskStatus::Completed));
        assert!(!asked.filter.wants(id, TaskStatus::Working));
        assert!(
            !asked
                .filter
                .wants(TaskId::from_u128(1), TaskStatus::Completed)
        );
        assert_eq!(asked.cursor.as_deref(), Some("c1"));
        assert_eq!(asked.max_events, Some(5));
        assert_eq!(
            asked.arguments,
            r#"{"statuses":["completed"],"taskIds":["00000000000000000000000000000abc"]}"#
        );
        for bad in [
            r#"{"arguments":{"other":1}}"#,
            r#"{"arguments":{"taskIds":[]}}"#,
            r#"{"arguments":{"taskIds":[1]}}"#,
            r#"{"arguments":{"statuses":["done"]}}"#,
            r#"{"arguments":[]}"#,
            r#"{"cursor":5}"#,
            r#"{"maxEvents":-1}"#,
            r#"{"delivery":{"mode":"webhook"}}"#,
        ] {
            assert!(Asked::read(bad).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn no_arguments_want_everything_and_ttl_tells_null_from_absent() {
        let asked = Asked::read(r#"{"name":"x","ttlMs":null}"#).unwrap();
        assert!(asked.filter.wants(TaskId::from_u128(7), TaskStatus::Failed));
        assert_eq!(asked.arguments, "{}");
        assert_eq!(asked.ttl, Some(None));
        let asked = Asked::read(r#"{"name":"x","ttlMs":60000}"#).unwrap();
        assert_eq!(asked.ttl, Some(Some(Duration::from_secs(60))));
        assert_eq!(Asked::read(r#"{"name":"x"}"#).unwrap().ttl, None);
    }
}
