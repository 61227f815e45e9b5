//! One parse per POST: what the request is and who answers it.
//!
//! The parse borrows from the request buffer; the pass-through path allocates
//! nothing beyond that buffer. Checks run in the order the specification
//! gives for the task methods:
//!
//! | Step | Check                                                         | Failure            |
//! |------|---------------------------------------------------------------|--------------------|
//! | 1    | one JSON object (no batch), a request's id a string or number, `tools/call` and the task methods with one | `-32700`/`-32600`, 400 |
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

use std::ops::Range;

use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};
use serde::de::IgnoredAny;

use crate::config::TasksConfig;
use crate::legacy::route::Decision;
use crate::legacy::{self, sessions::Sessions};
use crate::modern::events::{EventsCall, EventsMethod};
use crate::modern::fallback::answer::AddedCall;
use crate::modern::fallback::{FallbackCall, Handle};
use crate::modern::push::TaskFilter;
use crate::modern::route::{Route as Modern, TaskCall, TaskMethod, ToolCall};
use crate::policy::ToolPolicy;
use crate::rewrite::Strip;
use crate::task::TaskId;
use crate::wire::envelope::{
    Capabilities, Envelope, Json, Loose, MCP_METHOD, MCP_PROTOCOL_VERSION, Params, Spanned, as_str,
    header,
};
use crate::wire::jsonrpc::Reply;
use crate::wire::raw::span;
use crate::wire::{MODERN_VERSION, value_starts_with};

mod headers;

use headers::{Said, Sent, check_headers};

/// Who answers a request: the inner server untouched, the layer at once,
/// or one of the two wings, with the call it parsed.
#[derive(Debug)]
pub(crate) enum Route {
    /// The inner server, untouched.
    Forward,
    /// The layer answers at once, usually with an error.
    Reply(Reply),
    /// The 2026-07-28 wing (and the fallback for clients without tasks).
    Modern(Modern),
    /// A message of a 2025-11-25 session the layer takes part in.
    Legacy(crate::legacy::route::LegacyRoute),
}

/// Whether the layer must read the body of a POST with these headers.
///
/// Every JSON POST is read: a 2026-07-28 request names its method in
/// `Mcp-Method`, and a server that processes the body checks it against
/// the body (`-32020` on a mismatch), so this layer does too before any
/// request goes on. Were a request routed on the header alone, a
/// `tools/call` sent as `Mcp-Method: resources/read` would reach the
/// inner server unread, past `--policy TOOL=required`, the task quotas
/// and the call's time limit, and a server that does not check the header
/// would run the tool. A body in one frame (nearly every request) costs
/// no allocation to read (`gather.rs`), and one whose method the layer
/// does not handle is only checked, then forwarded from that buffer. A
/// POST whose `Content-Type` is not JSON (a form, an upload) carries no
/// JSON-RPC message: never read.
/// `None` when it need not; otherwise what it read of the headers, which
/// [`classify`] then takes instead of reading them again.
pub(crate) fn needs_body(headers: &HeaderMap) -> Option<Seen> {
    let routing = Routing::read(headers);
    if !routing.json {
        return None;
    }
    if as_text(routing.version) != Some(MODERN_VERSION) {
        return Some(Seen::default());
    }
    Some(Seen {
        modern: true,
        tool_call: as_text(routing.method) == Some("tools/call"),
    })
}

/// The headers a POST is routed on, found in one walk over the map: a
/// lookup hashes the name it looks for, and for these few names a walk
/// over a request's handful of headers costs less than three lookups. Each
/// is the first value of its name, as a lookup gives it.
struct Routing<'a> {
    /// No `Content-Type`, or a JSON one: the body may be a JSON-RPC message.
    json: bool,
    version: Option<&'a HeaderValue>,
    method: Option<&'a HeaderValue>,
}

impl<'a> Routing<'a> {
    fn read(headers: &'a HeaderMap) -> Self {
        let mut content_type = None;
        let (mut version, mut method) = (None, None);
        for (header, value) in headers {
            let slot = if header == CONTENT_TYPE {
                &mut content_type
            } else if header == MCP_PROTOCOL_VERSION {
                &mut version
            } else if header == MCP_METHOD {
                &mut method
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        Self {
            json: content_type.is_none_or(|value| value_starts_with(value, "application/json")),
            version,
            method,
        }
    }
}

/// A header value as text (`None` when not visible ASCII).
fn as_text(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|value| value.to_str().ok())
}

/// What [`needs_body`] found in the routing headers, for [`classify`]:
/// the fast `tools/call` reads each header once.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Seen {
    /// `MCP-Protocol-Version` is 2026-07-28.
    modern: bool,
    /// `Mcp-Method` is `tools/call` (read only when `modern`).
    tool_call: bool,
}

/// Classifies one buffered POST body.
pub(crate) fn classify(
    headers: &HeaderMap,
    seen: Seen,
    body: &[u8],
    config: &TasksConfig,
    sessions: &Sessions,
) -> Route {
    // Unreadable bodies are answered only on the 2026-07-28 wire; anything
    // else (older, session-based clients that may batch, non-MCP routes) is
    // the inner server's business.
    let header_version = if seen.modern {
        Some(MODERN_VERSION)
    } else {
        header(headers, &MCP_PROTOCOL_VERSION)
    };
    let modern_header = header_version == Some(MODERN_VERSION);
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
    // Only older generations need the span of `params` (their `tools/call`
    // may carry `params.task`); a 2026-07-28 call's params are found again
    // only if it is parked.
    let envelope = match Envelope::parse(body) {
        Ok(envelope) => envelope,
        Err(_) if !modern_header => return Route::Forward,
        Err(error) => return unusual(body, error),
    };
    if envelope.has_invalid_id() {
        return Route::Reply(Reply::invalid_request(
            None,
            "Invalid Request: the id must be a string or a number",
        ));
    }
    let spanned = envelope.params.unwrap_or_default();
    let params = &spanned.fields;
    let meta = params.meta.as_ref();
    let meta_version = meta.and_then(|m| m.version.as_deref());
    if meta_version.is_none() && !modern_header {
        // An older, session-based protocol generation.
        let method = envelope.method.as_deref();
        if method == Some("tools/call")
            && let Some(id) = envelope.id
            && let Some(tool) = as_str(params.name).and_then(|name| config.fallback.added(&name))
        {
            return Route::Modern(Modern::Added(AddedCall {
                id: id.raw().to_owned(),
                tool,
                modern: false,
            }));
        }
        let decision = legacy::route::classify(
            headers,
            envelope.id,
            method,
            &spanned,
            body,
            config,
            sessions,
        );
        return match decision {
            Decision::Forward if method == Some("tools/call") => {
                let after = as_str(params.name).and_then(|name| config.fallback_after(&name));
                match (after, envelope.id) {
                    (Some(after), Some(id)) => {
                        // Without the header, the version the specification
                        // has a server assume.
                        let older = headers
                            .get(&MCP_PROTOCOL_VERSION)
                            .cloned()
                            .unwrap_or(HeaderValue::from_static("2025-03-26"));
                        fallback_call(id, &spanned, body, after, Some(older), None)
                    }
                    _ => Route::Modern(Modern::ForwardCall(None)),
                }
            }
            Decision::Forward
                if method == Some("tools/list")
                    && envelope.id.is_some()
                    && config.fallback.on() =>
            {
                Route::Modern(Modern::ToolsList {
                    first_page: params.cursor.is_none(),
                })
            }
            Decision::Forward => Route::Forward,
            Decision::Reply(reply) => Route::Reply(reply),
            Decision::Take(route) => Route::Legacy(route),
        };
    }
    let (Some(id), Some(method)) = (envelope.id, envelope.method.as_deref()) else {
        // A `tools/call` or task method without an id is no notification
        // there is: refused, not forwarded with what only the layer may
        // see (related task ids, the tasks extension).
        if envelope.method.as_deref().is_some_and(is_owned) {
            return Route::Reply(without_id());
        }
        // Notifications and responses are the inner server's business.
        return Route::Forward;
    };
    let task_method = TaskMethod::named(method);
    // The name a `tools/call` or task method is about, read once.
    let named = match (method, task_method) {
        ("tools/call", _) => as_str(params.name),
        (_, Some(_)) => as_str(params.task_id),
        _ => None,
    };
    let sent = Sent {
        version: header_version,
        method: if seen.tool_call {
            Some("tools/call")
        } else {
            header(headers, &MCP_METHOD)
        },
    };
    let said = Said {
        id,
        method,
        meta_version,
        named: named.as_deref(),
        task_method: task_method.is_some(),
    };
    let checked = check_headers(headers, sent, said, config);
    if let Err(reply) = checked {
        return Route::Reply(reply);
    }
    let owned = is_owned(method);
    let has_meta = meta.is_some_and(|m| m.version.is_some() && m.capabilities.is_some());
    if owned && !has_meta {
        return Route::Reply(Reply::bad_params(
            Some(id.raw()),
            "Missing required _meta fields io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
        ));
    }
    let capabilities = meta.and_then(|m| m.capabilities.as_ref());
    let extensions = capabilities.and_then(|c| c.extensions);
    // Read with `extensions` by the one-pass reader; otherwise only where
    // it matters, to keep the pass-through path lean.
    let tasks_of = || {
        capabilities
            .map(Capabilities::tasks_member)
            .unwrap_or_default()
    };
    let declared = || tasks_of().declared;
    let version = meta_version.unwrap_or_default();
    if let Some(task_method) = task_method {
        return task_route(
            id,
            task_method,
            version,
            declared(),
            named.as_deref(),
            params,
        );
    }
    match method {
        "server/discover" => Route::Modern(Modern::Discover),
        "subscriptions/listen" => match TaskFilter::read(params.notifications) {
            None => Route::Forward,
            Some(_) if !declared() => Route::Reply(Reply::missing_tasks_capability(Some(id.raw()))),
            Some(filter) => match filter.call(id.raw(), body, extensions) {
                Ok(call) => Route::Modern(Modern::Listen(call)),
                Err(reply) => Route::Reply(reply),
            },
        },
        "tools/list" if config.fallback.on() => Route::Modern(Modern::ToolsList {
            first_page: params.cursor.is_none(),
        }),
        "tools/call" => {
            let tool = named.as_deref().unwrap_or_default();
            if let Some(added) = config.fallback.added(tool) {
                return Route::Modern(Modern::Added(AddedCall {
                    id: id.raw().to_owned(),
                    tool: added,
                    modern: version == MODERN_VERSION,
                }));
            }
            let policy = config.policy_for(tool);
            let tasks = tasks_of();
            let related = meta
                .and_then(|m| m.related)
                .and_then(|raw| span(body, raw.get()));
            match (tasks.declared && version == MODERN_VERSION, policy) {
                (false, ToolPolicy::Threshold | ToolPolicy::Always | ToolPolicy::Never) => {
                    match config.fallback_after(tool) {
                        Some(after) => fallback_call(id, &spanned, body, after, None, related),
                        None => Route::Modern(Modern::ForwardCall(related)),
                    }
                }
                (true, policy) => match (
                    span(body, id.get()),
                    extensions.and_then(|raw| span(body, raw.get())),
                ) {
                    (Some(id), Some(extensions)) => Route::Modern(Modern::ToolCall(ToolCall {
                        handle: Handle::Task,
                        id,
                        policy,
                        strip: Strip {
                            extensions: Some(extensions),
                            tasks: tasks.value.and_then(|value| span(body, value.get())),
                            related,
                            progress: spanned.progress_place(body),
                        },
                        params: spanned.span(body),
                        name: spanned.name_span(body),
                    })),
                    _ => Route::Reply(Reply::internal(
                        Some(id.raw()),
                        "request parse lost its place",
                    )),
                },
                (false, ToolPolicy::Required) => {
                    Route::Reply(Reply::missing_tasks_capability(Some(id.raw())))
                }
            }
        }
        // The tasks extension's namespace is the layer's: a method of it
        // that 2026-07-28 does not have (`tasks/list`, `tasks/result` of
        // 2025-11-25, any other) is no method, and never the inner server's.
        _ if is_owned(method) => Route::Reply(Reply::method_not_found(Some(id.raw()), method)),
        "events/list" if config.events.is_some() => Route::Modern(Modern::EventsList {
            first_page: params.cursor.is_none(),
            id: id.raw().to_owned(),
        }),
        _ if method.starts_with("events/") => events_route(id, method, &spanned, body, config),
        _ => Route::Forward,
    }
}

/// An events method: the layer's when it names the layer's event type,
/// the inner server's otherwise.
fn events_route(
    id: Json<'_>,
    method: &str,
    spanned: &Spanned<'_>,
    body: &[u8],
    config: &TasksConfig,
) -> Route {
    let (Some(events), Some(events_method)) = (&config.events, EventsMethod::named(method)) else {
        return Route::Forward;
    };
    if as_str(spanned.fields.name).as_deref() != Some(events.event_name()) {
        return Route::Forward;
    }
    let params = spanned
        .span(body)
        .and_then(|range| body.get(range))
        .and_then(|slice| std::str::from_utf8(slice).ok())
        .and_then(|text| serde_json::value::RawValue::from_string(text.to_owned()).ok());
    match params {
        Some(params) => Route::Modern(Modern::Events(EventsCall {
            id: id.raw().to_owned(),
            method: events_method,
            params,
        })),
        None => Route::Reply(Reply::bad_params(
            Some(id.raw()),
            "params must be an object",
        )),
    }
}

/// The `tools/call` of a client without tasks that falls back after
/// `after`: raced like a declaring client's, its related task ids
/// (`related`) cut out. `older`: the version of a session-based client.
fn fallback_call(
    id: Json<'_>,
    spanned: &Spanned<'_>,
    body: &[u8],
    after: std::time::Duration,
    older: Option<HeaderValue>,
    related: Option<Range<usize>>,
) -> Route {
    let Some(at) = span(body, id.get()) else {
        return Route::Reply(Reply::internal(
            Some(id.raw()),
            "request parse lost its place",
        ));
    };
    let name = spanned.name_span(body);
    Route::Modern(Modern::ToolCall(ToolCall {
        handle: Handle::Fallback(Box::new(FallbackCall { after, older })),
        id: at,
        policy: ToolPolicy::Threshold,
        strip: Strip {
            extensions: None,
            tasks: None,
            related,
            progress: spanned.progress_place(body),
        },
        name,
        params: spanned.span(body),
    }))
}

/// The answer to a `tools/call` or task method without an id: no
/// notification there is, and never forwarded with what only the layer may
/// see.
fn without_id() -> Reply {
    Reply::invalid_request(
        None,
        "Invalid Request: tools/call and the task methods are requests and need an id",
    )
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
        Ok(Loose {
            id: None,
            method: Some(method),
            ..
        }) if is_owned(&method) => Route::Reply(without_id()),
        Ok(_) => Route::Forward,
        Err(_) => Route::Reply(unreadable(body, error)),
    }
}

fn unreadable(body: &[u8], error: serde_json::Error) -> Reply {
    if serde_json::from_slice::<IgnoredAny>(body).is_err() {
        Reply::parse_error(error)
    } else {
        Reply::invalid_request(None, "The body is not a JSON-RPC request object")
    }
}

fn task_route(
    id: Json<'_>,
    method: TaskMethod,
    version: &str,
    declared: bool,
    task_id: Option<&str>,
    params: &Params<'_>,
) -> Route {
    let id = id.raw();
    if version != MODERN_VERSION {
        return Route::Reply(Reply::unsupported_version(Some(id), version));
    }
    if !declared {
        return Route::Reply(Reply::missing_tasks_capability(Some(id)));
    }
    let Some(task_id) = task_id else {
        return Route::Reply(Reply::bad_params(
            Some(id),
            "params.taskId must be a string",
        ));
    };
    let input_responses = match method {
        TaskMethod::Update => params.input_responses.map(ToOwned::to_owned),
        _ => None,
    };
    Route::Modern(Modern::Task(TaskCall {
        id: id.to_owned(),
        method,
        task: TaskId::parse(task_id),
        input_responses,
    }))
}
