//! One parse per POST: what the request is and who answers it.
//!
//! The parse borrows from the request buffer; the pass-through path allocates
//! nothing beyond that buffer. Checks run in the order the specification
//! gives for the task methods:
//!
//! | Step | Check                                                         | Failure            |
//! |------|---------------------------------------------------------------|--------------------|
//! | 1    | one JSON object (no batch)                                    | `-32700`/`-32600`, 400 |
//! | 2    | `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` match the body | `-32020`, 400      |
//! | 3    | required `_meta` fields present                               | `-32602`, 400      |
//! | 4    | a version the layer serves (task methods)                     | `-32022`, 400      |
//! | 5    | the tasks extension declared on this request                  | `-32021`, 400      |
//!
//! In step 2 a missing `Mcp-Name` fails `tools/call` always, and a task
//! method only when `require_task_name_header` is on (off by default: the
//! `taskId` in the body is authoritative); a present one must match.
//!
//! Ownership and existence are checked later, against the store.
//!
//! A request without `_meta["io.modelcontextprotocol/protocolVersion"]` and
//! without a 2026-07-28 `MCP-Protocol-Version` header belongs to an older,
//! session-based protocol generation: `legacy::route` decides, and most such
//! messages go to the inner server unchanged.

use std::borrow::Cow;
use std::ops::Range;

use base64::Engine as _;
use http::HeaderMap;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use crate::config::TasksConfig;
use crate::legacy::{self, sessions::Sessions};
use crate::policy::ToolPolicy;
use crate::wire::jsonrpc::Reply;
use crate::wire::raw::{empty_object, span};
use crate::wire::{MODERN_VERSION, TASKS_EXTENSION};

/// Who answers a request, and what they need to know.
#[derive(Debug)]
pub(crate) enum Route {
    /// The inner server, untouched.
    Forward,
    /// The inner server; the layer adds the tasks extension to its answer.
    Discover,
    /// A `tools/call` from a client that declared the extension.
    ToolCall(ToolCall),
    /// `tasks/get`, `tasks/update` or `tasks/cancel`.
    Task(TaskCall),
    /// The layer answers at once, usually with an error.
    Reply(Reply),
    /// A message of a 2025-11-25 session the layer takes part in.
    Legacy(crate::legacy::route::LegacyRoute),
}

/// A declaring client's `tools/call`.
#[derive(Debug)]
pub(crate) struct ToolCall {
    pub id: Box<RawValue>,
    pub policy: ToolPolicy,
    /// Where `params` is in the body.
    pub params: Range<usize>,
    /// Where `params._meta.clientCapabilities.extensions` is in the body.
    pub extensions: Range<usize>,
}

/// The task methods the layer answers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMethod {
    Get,
    Update,
    Cancel,
}

/// A task method call that passed the request-level checks.
#[derive(Debug)]
pub(crate) struct TaskCall {
    pub id: Box<RawValue>,
    pub method: TaskMethod,
    pub task_id: String,
    pub params: Box<RawValue>,
}

/// The request, parsed in one pass over the buffer.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Text<'a>>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

/// The request with `params` left unread, for bodies [`Envelope`] refuses
/// and for locating `params` in the buffer.
#[derive(Deserialize)]
struct Loose<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Text<'a>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// A string, borrowed from the buffer unless it holds escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct Params<'a> {
    #[serde(borrow)]
    pub name: Option<&'a RawValue>,
    #[serde(borrow, rename = "taskId")]
    pub task_id: Option<&'a RawValue>,
    /// The 2025-11-25 task augmentation of a `tools/call`.
    #[serde(borrow)]
    pub task: Option<&'a RawValue>,
    /// The 2025-11-25 `tasks/list` cursor.
    #[serde(borrow)]
    pub cursor: Option<&'a RawValue>,
    /// The request a `notifications/cancelled` cancels.
    #[serde(borrow, rename = "requestId")]
    pub request_id: Option<&'a RawValue>,
    #[serde(borrow, rename = "_meta")]
    meta: Option<Meta<'a>>,
    /// The filter of `subscriptions/listen`.
    notifications: Option<ListenFilter>,
}

#[derive(Deserialize)]
struct ListenFilter {
    #[serde(rename = "taskIds")]
    task_ids: Option<IgnoredAny>,
}

/// Whether a JSON value is an object (the value is read and discarded).
struct IsObject(bool);

impl<'de> Deserialize<'de> for IsObject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Kind;
        impl<'de> serde::de::Visitor<'de> for Kind {
            type Value = bool;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(true)
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<bool, S::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(false)
            }
            fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_str<E>(self, _: &str) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_unit<E>(self) -> Result<bool, E> {
                Ok(false)
            }
        }
        deserializer.deserialize_any(Kind).map(Self)
    }
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<Text<'a>>,
    #[serde(borrow, rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<Capabilities<'a>>,
}

#[derive(Deserialize)]
struct Capabilities<'a> {
    #[serde(borrow)]
    extensions: Option<&'a RawValue>,
}

/// Whether an object has a member named `key`, read without allocating.
struct HasMember<const TASKS: bool>(bool);

impl<'de, const TASKS: bool> Deserialize<'de> for HasMember<TASKS> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = bool;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
                let mut found = false;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    // The extension is declared by an object, not by `null`.
                    if key == TASKS_EXTENSION {
                        found |= map.next_value::<IsObject>()?.0;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
        }
        deserializer.deserialize_map(Keys).map(Self)
    }
}

/// Reads a JSON string out of a raw value, if it is one.
pub(crate) fn as_str(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    raw.and_then(|raw| serde_json::from_str::<Cow<'_, str>>(raw.get()).ok())
}

/// Whether an `extensions` object declares the tasks extension.
fn declares_tasks(extensions: Option<&RawValue>) -> bool {
    extensions.is_some_and(|raw| {
        serde_json::from_str::<HasMember<true>>(raw.get()).is_ok_and(|has| has.0)
    })
}

pub(crate) fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// Decodes the `=?base64?…?=` form of `Mcp-Name`; other values are literal.
fn decode_name(value: &str) -> Option<Cow<'_, str>> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(value)),
    }
}

/// Classifies one buffered POST body.
pub(crate) fn classify(
    headers: &HeaderMap,
    body: &[u8],
    config: &TasksConfig,
    sessions: &Sessions,
) -> Route {
    // Unreadable bodies are answered only on the 2026-07-28 wire; anything
    // else (older, session-based clients that may batch, non-MCP routes) is
    // the inner server's business.
    let modern_header = header(headers, "mcp-protocol-version") == Some(MODERN_VERSION);
    let first = body.iter().copied().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        if !modern_header {
            return Route::Forward;
        }
        return Route::Reply(Reply::invalid_request(
            None,
            "Batch requests are not supported: send one JSON-RPC message per POST",
        ));
    }
    let envelope: Envelope<'_> = match serde_json::from_slice(body) {
        Ok(envelope) => envelope,
        Err(_) if !modern_header => return Route::Forward,
        Err(error) => return unusual(body, error),
    };
    let params = envelope.params.unwrap_or_default();
    let meta = params.meta.as_ref();
    let meta_version = meta.and_then(|m| m.version.as_deref());
    if meta_version.is_none() && !modern_header {
        // An older, session-based protocol generation.
        let method = envelope.method.as_deref();
        return legacy::route::classify(
            headers,
            envelope.id,
            method,
            &params,
            body,
            config,
            sessions,
        );
    }
    let (Some(id), Some(method)) = (envelope.id, envelope.method.as_deref()) else {
        // Notifications and responses are the inner server's business.
        return Route::Forward;
    };
    if let Err(reply) = check_headers(headers, id, method, meta_version, &params, config) {
        return Route::Reply(reply);
    }
    let owned = is_owned(method);
    let has_meta = meta.is_some_and(|m| m.version.is_some() && m.capabilities.is_some());
    if owned && !has_meta {
        return Route::Reply(Reply::bad_params(
            Some(id),
            "Missing required _meta fields io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
        ));
    }
    let extensions = meta
        .and_then(|m| m.capabilities.as_ref())
        .and_then(|c| c.extensions);
    // Read only where it matters, to keep the pass-through path lean.
    let declared = || declares_tasks(extensions);
    let version = meta_version.unwrap_or_default();
    match method {
        "server/discover" => Route::Discover,
        "subscriptions/listen" => {
            let wants_tasks = params
                .notifications
                .as_ref()
                .is_some_and(|n| n.task_ids.is_some());
            if wants_tasks && !declared() {
                Route::Reply(Reply::missing_tasks_capability(Some(id)))
            } else {
                Route::Forward
            }
        }
        "tools/call" => {
            let name = as_str(params.name);
            let policy = config.policy_for(name.as_deref().unwrap_or_default());
            match (declared() && version == MODERN_VERSION, policy) {
                (false, ToolPolicy::Threshold | ToolPolicy::Always | ToolPolicy::Never) => {
                    Route::Forward
                }
                (true, policy) => match (
                    params_span(body),
                    extensions.and_then(|raw| span(body, raw.get())),
                ) {
                    (Some(params), Some(extensions)) => Route::ToolCall(ToolCall {
                        id: id.to_owned(),
                        policy,
                        params,
                        extensions,
                    }),
                    _ => Route::Reply(Reply::internal(Some(id), "request parse lost its place")),
                },
                (false, ToolPolicy::Required) => {
                    Route::Reply(Reply::missing_tasks_capability(Some(id)))
                }
            }
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            task_route(id, method, version, declared(), &params, body)
        }
        "tasks/list" | "tasks/result" => Route::Reply(Reply::method_not_found(Some(id), method)),
        _ => Route::Forward,
    }
}

fn is_owned(method: &str) -> bool {
    method == "tools/call" || method.starts_with("tasks/")
}

/// A body the one-pass parse refused: not JSON, not an object, or `params`
/// of an unexpected shape.
fn unusual(body: &[u8], error: serde_json::Error) -> Route {
    match serde_json::from_slice::<Loose<'_>>(body) {
        Ok(Loose {
            id: Some(id),
            method: Some(method),
            ..
        }) if is_owned(&method) => Route::Reply(Reply::bad_params(
            Some(id),
            "params must be an object with well-formed _meta",
        )),
        Ok(_) => Route::Forward,
        Err(_) => Route::Reply(unreadable(body, error)),
    }
}

/// Where `params` is in the buffer.
pub(crate) fn params_span(body: &[u8]) -> Option<Range<usize>> {
    let loose: Loose<'_> = serde_json::from_slice(body).ok()?;
    span(body, loose.params?.get())
}

/// The `params` of a request, as sent.
fn raw_params(body: &[u8]) -> Option<Box<RawValue>> {
    let loose: Loose<'_> = serde_json::from_slice(body).ok()?;
    loose.params.map(ToOwned::to_owned)
}

fn unreadable(body: &[u8], error: serde_json::Error) -> Reply {
    if serde_json::from_slice::<IgnoredAny>(body).is_err() {
        Reply::parse_error(error)
    } else {
        Reply::invalid_request(None, "The body is not a JSON-RPC request object")
    }
}

fn task_route(
    id: &RawValue,
    method: &str,
    version: &str,
    declared: bool,
    params: &Params<'_>,
    body: &[u8],
) -> Route {
    if version != MODERN_VERSION {
        return Route::Reply(Reply::unsupported_version(Some(id), version));
    }
    if !declared {
        return Route::Reply(Reply::missing_tasks_capability(Some(id)));
    }
    let Some(task_id) = as_str(params.task_id) else {
        return Route::Reply(Reply::bad_params(
            Some(id),
            "params.taskId must be a string",
        ));
    };
    let method = match method {
        "tasks/get" => TaskMethod::Get,
        "tasks/update" => TaskMethod::Update,
        _ => TaskMethod::Cancel,
    };
    Route::Task(TaskCall {
        id: id.to_owned(),
        method,
        task_id: task_id.into_owned(),
        params: raw_params(body).unwrap_or_else(empty_object),
    })
}

/// Step 2: the routing headers agree with the body.
fn check_headers(
    headers: &HeaderMap,
    id: &RawValue,
    method: &str,
    meta_version: Option<&str>,
    params: &Params<'_>,
    config: &TasksConfig,
) -> Result<(), Reply> {
    let mismatch = |message: String| Err(Reply::header_mismatch(Some(id), message));
    let header_version = header(headers, "mcp-protocol-version");
    if let Some(version) = meta_version
        && header_version != Some(version)
    {
        return mismatch(format!(
            "MCP-Protocol-Version header {:?} does not match _meta protocolVersion {version:?}",
            header_version.unwrap_or("(missing)")
        ));
    }
    match header(headers, "mcp-method") {
        Some(value) if value == method => {}
        other => {
            return mismatch(format!(
                "Mcp-Method header {:?} does not match method {method:?}",
                other.unwrap_or("(missing)")
            ));
        }
    }
    let (expected, required) = match method {
        "tools/call" => (as_str(params.name), true),
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            (as_str(params.task_id), config.require_task_name_header)
        }
        _ => return Ok(()),
    };
    let Some(raw) = headers.get("mcp-name") else {
        if required {
            return mismatch(format!("Mcp-Name header is required for {method}"));
        }
        return Ok(());
    };
    let given = raw.to_str().ok().and_then(decode_name);
    if given.is_none() || given != expected {
        return mismatch(format!(
            "Mcp-Name header does not match the {} in the body",
            if method == "tools/call" {
                "tool name"
            } else {
                "taskId"
            }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_names_are_decoded_and_plain_names_pass_as_they_are() {
        assert_eq!(decode_name("=?base64?aMOpbGxv?=").as_deref(), Some("héllo"));
        assert_eq!(decode_name("greet").as_deref(), Some("greet"));
        assert_eq!(decode_name("=?base64?***?="), None);
    }

    #[test]
    fn the_extension_is_declared_by_a_member_of_extensions() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(declares_tasks(Some(&raw(
            r#"{"a":1,"io.modelcontextprotocol/tasks":{}}"#
        ))));
        assert!(!declares_tasks(Some(&raw(r#"{"tasks":{"list":{}}}"#))));
        assert!(!declares_tasks(Some(&raw(r#"[]"#))));
        assert!(!declares_tasks(Some(&raw(
            r#"{"io.modelcontextprotocol/tasks":null}"#
        ))));
        assert!(!declares_tasks(Some(&raw(
            r#"{"io.modelcontextprotocol/tasks":false}"#
        ))));
        assert!(!declares_tasks(None));
    }
}
