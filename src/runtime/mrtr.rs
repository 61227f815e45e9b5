//! Bridging MRTR (`input_required`) into task input and back.
//!
//! The inner server asks for input by answering `resultType:"input_required"`
//! with `inputRequests` (keys unique only within that answer) and an opaque
//! `requestState`. Once a call is a task the client answers the *task*
//! (`tasks/update`), so the layer does the retrying:
//!
//! | Step | The layer                                                                 |
//! |------|---------------------------------------------------------------------------|
//! | 1    | re-keys each request as `"<round>.<key>"`, unique for the task's life      |
//! | 2    | stores the round with a resume context the client never sees              |
//! | 3    | records answers for outstanding keys, ignores all others                  |
//! | 4    | when the round is complete, re-issues `tools/call`: new id, same name and arguments, answers under the inner keys, the echoed `requestState` |
//! | —    | an `input_required` with only `requestState` (load shedding) is retried at once |

use std::collections::BTreeMap;

use base64::Engine as _;
use bytes::Bytes;
use http::Request;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::runtime::deadline::Deadline;
use crate::store::InputRound;
use crate::task::{TaskId, Timestamp};
use crate::wire::raw::{Members, edit_object, write_object};
use crate::wire::{MODERN_VERSION, sse};

/// What the layer keeps to re-issue a call: never shown to the client.
#[derive(Serialize, Deserialize)]
pub(crate) struct Resume {
    /// The round that asked; the next one is `round + 1`.
    pub round: u32,
    /// Client-facing key → the inner server's key.
    pub keys: Vec<(String, String)>,
    /// The inner server's `requestState`, echoed verbatim.
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The original `tools/call` params (name, arguments, `_meta`).
    pub params: Box<RawValue>,
    /// When the task expires, in milliseconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// When the task must be terminal at the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Deadline>,
    /// The original call's `Mcp-Param-*` headers, which describe its
    /// arguments and so go with every re-issued call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub param_headers: Vec<(String, String)>,
    /// The inner server's own task that asked (`runtime::follow`): the
    /// answers go to its `tasks/update` rather than into a re-issued call.
    #[serde(rename = "innerTask", default, skip_serializing_if = "Option::is_none")]
    pub inner_task: Option<String>,
}

/// The parts of an `InputRequiredResult` the layer reads.
#[derive(Deserialize)]
struct InputRequired {
    #[serde(rename = "inputRequests", default)]
    input_requests: BTreeMap<String, Box<RawValue>>,
    #[serde(rename = "requestState")]
    request_state: Option<String>,
}

/// What to do with an `input_required` answer.
pub(crate) enum Next {
    /// Ask the client: store this round.
    Ask(InputRound),
    /// Nothing to ask: retry the call at once with this `requestState`.
    Retry(Option<String>),
}

/// Reads an `input_required` result of round `round` of a call with
/// `params`; `inner_task`: the inner server's own task that asked, if any.
pub(crate) fn on_input_required(
    result: &RawValue,
    round: u32,
    params: &RawValue,
    (expires, deadline): (Option<Timestamp>, Option<Deadline>),
    template: &Template,
    inner_task: Option<&str>,
) -> Result<Next, String> {
    let asked: InputRequired = serde_json::from_str(result.get())
        .map_err(|error| format!("the input_required result is malformed: {error}"))?;
    if asked.input_requests.is_empty() {
        if asked.request_state.is_none() {
            return Err(
                "the input_required result has neither inputRequests nor requestState".into(),
            );
        }
        return Ok(Next::Retry(asked.request_state));
    }
    let mut keys = Vec::with_capacity(asked.input_requests.len());
    let mut requests = Vec::with_capacity(asked.input_requests.len());
    for (key, request) in asked.input_requests {
        let client_key = format!("{round}.{key}");
        keys.push((client_key.clone(), key));
        requests.push((client_key, request));
    }
    let resume = Resume {
        round,
        keys,
        request_state: asked.request_state,
        params: params.to_owned(),
        expires: expires.map(Timestamp::as_millis),
        deadline,
        param_headers: template.param_headers(),
        inner_task: inner_task.map(str::to_owned),
    };
    let resume = serde_json::value::to_raw_value(&resume).map_err(|e| e.to_string())?;
    Ok(Next::Ask(InputRound { requests, resume }))
}

/// The headers and extensions a re-issued call is sent with.
///
/// Cheap to take because every declaring client's call takes one before it
/// is sent, and small once parked because a parked task holds one: the
/// kept headers are a list (one allocation for a request's usual few,
/// nothing when the client sent nothing beyond what a re-issued call sets
/// itself), not a `HeaderMap`, whose first insert
/// allocates room for six entries and a hash index; a parked call's list is
/// cut to its length ([`Template::parked`]).
#[derive(Clone, Debug)]
pub(crate) struct Template {
    pub uri: http::Uri,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub extensions: http::Extensions,
}

/// Whether the template keeps a header: not one every re-issued call sets
/// itself, nor a hop-by-hop header that belonged to the client's
/// connection. (A `match` on the name: one comparison by length and bytes,
/// where a list would compare each entry.)
fn is_kept(name: &HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "content-length"
            | "content-type"
            | "accept"
            | "mcp-protocol-version"
            | "mcp-method"
            | "mcp-name"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "expect"
    )
}

fn is_param_header(name: &HeaderName) -> bool {
    name.as_str().starts_with("mcp-param-")
}

impl Template {
    /// Takes credentials and extensions from a request the client sent.
    ///
    /// Only headers the re-issued call does not set itself are kept, so a
    /// parked task holds little beyond its credentials.
    pub(crate) fn from_parts(parts: &http::request::Parts) -> Self {
        Self::with_extensions(parts, parts.extensions.clone())
    }

    /// As [`from_parts`](Self::from_parts), with `extensions` in place of
    /// the request's (those a parked call keeps: [`crate::carry`]).
    pub(crate) fn with_extensions(
        parts: &http::request::Parts,
        extensions: http::Extensions,
    ) -> Self {
        // One walk over the headers: a call that answers in time builds and
        // drops one of these (no allocation when nothing is kept, one for up
        // to four kept headers), and a parked one is cut to size then.
        let headers = parts
            .headers
            .iter()
            .filter(|(name, _)| is_kept(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        Self {
            uri: parts.uri.clone(),
            headers,
            extensions,
        }
    }

    /// The template, its header list cut to its length: what a task holds.
    pub(crate) fn parked(mut self) -> Self {
        self.headers.shrink_to_fit();
        self
    }

    /// A JSON POST of `body` to the inner server, with the kept headers and
    /// extensions and the `MCP-Protocol-Version` `version`.
    pub(crate) fn post(
        &self,
        body: impl Into<Bytes>,
        version: &'static str,
    ) -> Result<Request<Bytes>, http::Error> {
        let mut request = Request::post(self.uri.clone()).body(body.into())?;
        *request.extensions_mut() = self.extensions.clone();
        let headers = request.headers_mut();
        for (name, value) in &self.headers {
            headers.append(name.clone(), value.clone());
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(sse::ACCEPT_BOTH));
        headers.insert("mcp-protocol-version", HeaderValue::from_static(version));
        Ok(request)
    }

    /// The `Mcp-Param-*` headers, as text.
    pub(crate) fn param_headers(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter(|(name, _)| is_param_header(name))
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
            .collect()
    }

    /// Replaces the `Mcp-Param-*` headers with `params` (those of the
    /// original call, when this template comes from a `tasks/update`).
    pub(crate) fn set_param_headers(&mut self, params: &[(String, String)]) {
        let original = params.iter().filter_map(|(name, value)| {
            Some((
                HeaderName::from_bytes(name.as_bytes()).ok()?,
                HeaderValue::from_str(value).ok()?,
            ))
        });
        let headers = std::mem::take(&mut self.headers);
        self.headers = headers
            .into_iter()
            .filter(|(name, _)| !is_param_header(name))
            .chain(original)
            .collect();
    }

    /// The kept header `name`, if any.
    pub(crate) fn header(&self, name: &str) -> Option<&HeaderValue> {
        self.headers
            .iter()
            .find(|(kept, _)| kept == name)
            .map(|(_, value)| value)
    }

    /// Sets header `name` to `value`, replacing any kept value.
    pub(crate) fn set_header(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.retain(|(kept, _)| *kept != name);
        self.headers.push((name, value));
    }
}

/// An `Mcp-Name` value for `name`, base64-encoded when it is not header-safe.
fn name_header(name: &str) -> Option<HeaderValue> {
    let plain = name.bytes().all(|b| b.is_ascii_graphic() || b == b' ') && !name.starts_with("=?");
    if plain {
        return HeaderValue::from_str(name).ok();
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(name);
    HeaderValue::from_str(&format!("=?base64?{encoded}?=")).ok()
}

/// Which retry of which task a re-issued call is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    pub task: TaskId,
    pub round: u32,
    pub attempt: u32,
}

/// Builds the `tools/call` that retries a call.
///
/// `params` are the original params, copied member by member as sent;
/// `answers` (inner keys) and `request_state` replace whatever they carried.
pub(crate) fn reissue(
    template: &Template,
    call: Call,
    params: &RawValue,
    answers: Option<Vec<(String, Box<RawValue>)>>,
    request_state: Option<String>,
) -> Result<(Box<RawValue>, Request<Bytes>), String> {
    let members =
        Members::parse(params.get()).map_err(|e| format!("stored params unreadable: {e}"))?;
    let name: String = members
        .get("name")
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .ok_or("stored params have no tool name")?;
    let answers_text = answers.map(|answers| {
        let mut text = String::new();
        write_object(
            &mut text,
            answers.iter().map(|(k, v)| (k.as_str(), v.get())),
        );
        text
    });
    let state_text = request_state.map(|state| Value::String(state).to_string());
    let edits = [
        ("inputResponses", answers_text.as_deref()),
        ("requestState", state_text.as_deref()),
    ];
    let params_text = edit_object(params.get(), &edits).ok_or("stored params are not an object")?;

    let id = Value::String(format!(
        "mcp-tasks:{}:{}.{}",
        call.task, call.round, call.attempt
    ));
    let id = serde_json::value::to_raw_value(&id).map_err(|e| e.to_string())?;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{params_text}}}"#,
        id.get()
    );

    let mut request = template
        .post(body, MODERN_VERSION)
        .map_err(|e| e.to_string())?;
    let headers = request.headers_mut();
    headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
    match name_header(&name) {
        Some(value) => {
            headers.insert("mcp-name", value);
        }
        None => return Err(format!("tool name {name:?} cannot be sent as Mcp-Name")),
    }
    Ok((id, request))
}

/// Maps client-keyed answers back to the inner server's keys.
pub(crate) fn inner_answers(
    resume: &Resume,
    answers: Vec<(String, Box<RawValue>)>,
) -> Vec<(String, Box<RawValue>)> {
    let mut mapped = Vec::with_capacity(answers.len());
    for (client_key, answer) in answers {
        let inner = resume.keys.iter().find(|(client, _)| *client == client_key);
        if let Some((_, inner_key)) = inner {
            mapped.push((inner_key.clone(), answer));
        }
    }
    mapped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn template() -> Template {
        let parts = Request::post("/mcp")
            .header("mcp-param-region", "eu")
            .header("authorization", "Bearer old")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        Template::from_parts(&parts)
    }

    #[test]
    fn the_template_keeps_credentials_and_custom_headers_but_not_per_call_or_hop_headers() {
        let mut request = Request::post("/mcp");
        for name in [
            "content-length",
            "content-type",
            "accept",
            "mcp-protocol-version",
            "mcp-method",
            "mcp-name",
            "connection",
            "keep-alive",
            "proxy-connection",
            "te",
            "trailer",
            "transfer-encoding",
            "expect",
            "authorization",
            "mcp-param-region",
            "x-tenant",
            "host",
        ] {
            request = request.header(name, "v");
        }
        let parts = request.body(()).unwrap().into_parts().0;
        let template = Template::from_parts(&parts);
        let kept: Vec<&str> = template
            .headers
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(
            kept,
            ["authorization", "mcp-param-region", "x-tenant", "host"]
        );
    }

    #[test]
    fn a_resumed_call_keeps_the_original_param_headers_and_the_update_credentials() {
        let result =
            raw(r#"{"resultType":"input_required","inputRequests":{"k":{"method":"roots/list"}}}"#);
        let Ok(Next::Ask(round)) =
            on_input_required(&result, 1, &raw("{}"), (None, None), &template(), None)
        else {
            panic!("expected a round")
        };
        let resume: Resume = serde_json::from_str(round.resume.get()).unwrap();
        assert_eq!(
            resume.param_headers,
            vec![("mcp-param-region".to_owned(), "eu".to_owned())]
        );
        let update = Request::post("/mcp")
            .header("mcp-param-region", "us")
            .header("authorization", "Bearer fresh")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let mut from_update = Template::from_parts(&update);
        from_update.set_param_headers(&resume.param_headers);
        assert_eq!(from_update.header("mcp-param-region").unwrap(), "eu");
        assert_eq!(from_update.header("authorization").unwrap(), "Bearer fresh");
    }

    #[test]
    fn keys_are_prefixed_with_the_round_so_a_reused_inner_key_stays_unique() {
        let result = raw(
            r#"{"resultType":"input_required","inputRequests":{"answer":{"method":"elicitation/create"}},"requestState":"s2"}"#,
        );
        let params = raw(r#"{"name":"two_rounds"}"#);
        let Ok(Next::Ask(round)) =
            on_input_required(&result, 2, &params, (None, None), &template(), None)
        else {
            panic!("expected a round")
        };
        assert_eq!(round.requests[0].0, "2.answer");
        let resume: Resume = serde_json::from_str(round.resume.get()).unwrap();
        assert_eq!(
            resume.keys,
            vec![("2.answer".to_owned(), "answer".to_owned())]
        );
        assert_eq!(resume.request_state.as_deref(), Some("s2"));
    }

    #[test]
    fn only_a_request_state_means_retry_at_once() {
        let result = raw(r#"{"resultType":"input_required","requestState":"later"}"#);
        let next =
            on_input_required(&result, 1, &raw("{}"), (None, None), &template(), None).unwrap();
        assert!(matches!(next, Next::Retry(Some(state)) if state == "later"));
    }

    #[test]
    fn the_reissued_call_has_a_new_id_the_answers_and_consistent_headers() {
        let mut parts = Request::post("/mcp").body(()).unwrap().into_parts().0;
        parts
            .headers
            .insert("authorization", HeaderValue::from_static("Bearer fresh"));
        parts
            .headers
            .insert("mcp-method", HeaderValue::from_static("tasks/update"));
        parts
            .headers
            .insert("content-length", HeaderValue::from_static("99"));
        let template = Template::from_parts(&parts);
        let params = raw(
            r#"{"name":"confirm_delete","arguments":{"filename":"a","n":123456789012345678901234567890},"requestState":"old"}"#,
        );
        let answers = vec![("confirm".to_owned(), raw(r#"{"action":"accept"}"#))];
        let task = TaskId::from_u128(7);
        let call = Call {
            task,
            round: 1,
            attempt: 1,
        };
        let (id, request) =
            reissue(&template, call, &params, Some(answers), Some("new".into())).unwrap();
        assert_eq!(id.get(), format!(r#""mcp-tasks:{task}:1.1""#));
        assert_eq!(request.headers()["mcp-method"], "tools/call");
        assert_eq!(request.headers()["mcp-name"], "confirm_delete");
        assert_eq!(request.headers()["authorization"], "Bearer fresh");
        assert!(request.headers().get("content-length").is_none());
        let body: Value = serde_json::from_slice(request.body()).unwrap();
        assert_eq!(body["params"]["requestState"], "new");
        assert_eq!(
            body["params"]["inputResponses"]["confirm"]["action"],
            "accept"
        );
        assert_eq!(body["params"]["arguments"]["filename"], "a");
        let text = std::str::from_utf8(request.body()).unwrap();
        assert!(
            text.contains(r#""n":123456789012345678901234567890"#),
            "{text}"
        );
    }
}
