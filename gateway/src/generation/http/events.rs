//! One 2026-07-28 call as the bridge sent it on, and each event of its
//! answer's stream as the client gets it: the response under the client's
//! id and [`modernize`]d, the log messages it did not ask for left out.

use bytes::Bytes;
use mcp_tasks::wire::raw::edit_object;
use serde_json::value::RawValue;
use sse_stream::Sse;

use std::sync::Arc;

use super::pending::Pending;
use crate::generation::message::{Kind, Message, member, replaced};
use crate::generation::params::ParamHeaders;
use crate::generation::results::modernize;

/// A 2026-07-28 call as the bridge sent it on.
pub(crate) struct Call {
    /// The client's id (JSON text), put back on the answer.
    pub id: String,
    /// Whether its result is cacheable.
    pub cacheable: bool,
    /// The least severe log message its client asked for
    /// (`_meta["io.modelcontextprotocol/logLevel"]`, as a [`LEVELS`]
    /// index); none asked, no log messages.
    pub log_level: Option<usize>,
    /// The upstream to tell if the client goes away first.
    pub pending: Pending,
    /// Where a `tools/list` answer's `x-mcp-header` marks are learnt.
    pub params: Option<Arc<ParamHeaders>>,
}

/// The log levels of MCP, least severe first.
pub(crate) const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The index in [`LEVELS`] of the level the JSON text `level` names.
pub(crate) fn level(level: &RawValue) -> Option<usize> {
    let level: String = serde_json::from_str(level.get()).ok()?;
    LEVELS.iter().position(|known| *known == level)
}

/// Whether `read` is a log message the call's client did not ask for:
/// 2026-07-28 sends log messages only at or above the level a request
/// names, and none to a request that names none.
fn unasked_log(read: &Message<'_>, call: &Call) -> bool {
    if read.method.as_deref() != Some("notifications/message") {
        return false;
    }
    let sent = read
        .params
        .and_then(|params| member(params, "level"))
        .and_then(level);
    match (call.log_level, sent) {
        (Some(least), Some(sent)) => sent < least,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// One message of the upstream on `call`'s answer: the response to it (or
/// an error under a `null` id, the upstream's answer to a request whose id
/// it could not read) [`modernize`]d under the client's id, any other
/// message as it is. Whether it was the response.
pub(crate) fn answer_for(message: Bytes, call: &Call) -> (Bytes, bool) {
    let answer = Message::read(&message)
        .filter(|read| read.kind() == Kind::Response || read.is_unattributed_error())
        .and_then(|read| restored(&message, &read, call));
    match answer {
        Some(answer) => (answer, true),
        None => (message, false),
    }
}

/// The response `message`, read as `read`, under the client's id and
/// [`modernize`]d; `None` when the client's id could not be written in.
fn restored(message: &[u8], read: &Message<'_>, call: &Call) -> Option<Bytes> {
    if let Some(params) = &call.params {
        params.learn(message);
    }
    let restored = match read.id {
        Some(id) => replaced(message, &[(id, &call.id)]),
        // An error under a `null` id: the call's id written in.
        None => std::str::from_utf8(message)
            .ok()
            .and_then(|text| edit_object(text, &[("id", Some(&call.id))]))
            .map(Bytes::from),
    };
    Some(modernize(restored?, call.cacheable))
}

/// One event of an older upstream's stream, written for a 2026-07-28
/// client: without `id` and `retry` (no resumable streams), each line of
/// its data on a `data:` line of its own; an event with no data (a
/// 2025-11-25 priming event) is left out. The response marks the call
/// answered.
pub(crate) fn modern_event(event: Sse, call: &mut Call) -> Bytes {
    let Some(data) = event.data.filter(|data| !data.is_empty()) else {
        return Bytes::new();
    };
    let read = Message::read(data.as_bytes());
    modern_read(event.event.as_deref(), &data, read.as_ref(), call)
}

/// [`modern_event`] of an event named `name` whose `data` was read as
/// `read` (read once by whoever looked at it first).
pub(crate) fn modern_read(
    name: Option<&str>,
    data: &str,
    read: Option<&Message<'_>>,
    call: &mut Call,
) -> Bytes {
    if read.is_some_and(|read| unasked_log(read, call)) {
        return Bytes::new();
    }
    let response = read.filter(|read| read.kind() == Kind::Response);
    let data = match response {
        Some(read) => {
            call.pending.answered();
            restored(data.as_bytes(), read, call)
                .unwrap_or_else(|| Bytes::copy_from_slice(data.as_bytes()))
        }
        None => Bytes::copy_from_slice(data.as_bytes()),
    };
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(name) = name {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    for line in data.split(|byte| *byte == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.push(b'\n');
    }
    out.push(b'\n');
    Bytes::from(out)
}
