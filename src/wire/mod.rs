//! Wire shapes: JSON-RPC envelopes and errors, task views, and reading the
//! inner server's messages.
//!
//! Most users need none of this: [`TasksLayer`](crate::TasksLayer) reads and
//! writes the wire itself. What is public here is what a transport in front
//! of the layer needs to speak the same wire (the `mcp-tasks-gateway` crate's
//! stdio bridge uses it): the JSON-RPC errors ([`jsonrpc`]), the task views
//! ([`view`]), byte-exact edits of a message ([`raw`], [`splice`]), and
//! the SSE facts ([`sse`]: whether a client takes an SSE answer, whether a
//! response is one).

pub(crate) mod envelope;

pub use envelope::decode_header_value;
pub mod jsonrpc;
mod pass;
pub(crate) mod progress;
pub mod raw;
pub(crate) mod read;
mod scan;
pub mod splice;
pub mod sse;
pub(crate) mod verdict;
pub mod view;

pub use sse::accepts_sse;

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The extension identifier of SEP-2663.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The draft `_meta` key naming the task ids a request relates to; the
/// layer removes it from every `tools/call` it forwards.
pub(crate) const RELATED_TASK_IDS: &str = "io.modelcontextprotocol/relatedTaskIds";
/// The protocol version whose tasks this layer serves statelessly.
pub const MODERN_VERSION: &str = "2026-07-28";
/// `_meta` key of the per-request client capabilities.
#[cfg(test)]
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Whether the `Content-Type` of `headers` starts with `prefix` (lower
/// case; leading blanks and letter case ignored), without allocating.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert(http::header::CONTENT_TYPE, "Text/Event-Stream; charset=utf-8".parse().unwrap());
/// assert!(mcp_tasks::wire::is_content_type(&headers, "text/event-stream"));
/// assert!(!mcp_tasks::wire::is_content_type(&headers, "application/json"));
/// ```
pub fn is_content_type(headers: &http::HeaderMap, prefix: &str) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value_starts_with(value, prefix))
}

/// Whether a header value starts with `prefix` (lower case; leading blanks
/// and letter case ignored).
pub(crate) fn value_starts_with(value: &http::HeaderValue, prefix: &str) -> bool {
    value
        .as_bytes()
        .trim_ascii_start()
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// The `Content-Type` of a message, lower-cased (`""` when absent).
pub(crate) fn content_type(headers: &http::HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// How a call the layer is driving ended, as the inner server said it.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A result (also `isError: true`), verbatim.
    Result(Box<RawValue>),
    /// An MRTR `InputRequiredResult`, verbatim.
    InputRequired(Box<RawValue>),
    /// A JSON-RPC error object, verbatim.
    Error(Box<RawValue>),
}

/// One JSON-RPC message of the inner server, as a flight sees it.
#[derive(Debug)]
pub(crate) enum InnerMessage {
    /// The response to the request the flight sent (its outcome is read
    /// with [`read_outcome`]).
    Response,
    /// A `notifications/progress`, with a human-readable line if one can be
    /// made; `ours` when it names the layer's own token (`progress`).
    Progress { line: Option<String>, ours: bool },
    /// A request of the inner server to the client (2025-11-25 sessions),
    /// the whole message verbatim.
    Request(Box<RawValue>),
    /// Anything else: other notifications, responses to other ids.
    Other,
}

/// What [`read_outcome`] reads of a response: where its result or error is.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// What [`read_inner_message`] reads of a message: the result and error
/// are only skipped over (checked as JSON, not kept), which is cheaper
/// than marking where they are.
#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ResultHead<'a> {
    #[serde(borrow, rename = "resultType")]
    result_type: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ProgressParams<'a> {
    #[serde(borrow, rename = "progressToken")]
    token: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    progress: Option<f64>,
    total: Option<f64>,
}

/// Whether two JSON-RPC ids are the same id.
pub(crate) fn same_id(a: &RawValue, b: &RawValue) -> bool {
    if a.get() == b.get() {
        return true;
    }
    let parse = |raw: &RawValue| serde_json::from_str::<serde_json::Value>(raw.get()).ok();
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

/// Whether a message on the SSE answer of a request is plainly the
/// response, from its bytes alone: it names no method (no `"method"`, and
/// no `\u` escape that could spell one; `\n` or `\"` in a result's text
/// cannot) and holds a `"result"` or an `"error"`. On a request's own
/// stream the only response is the one to that request. A message this
/// does not vouch for is read whole with [`read_inner_message`]; one it
/// vouches for wrongly (not JSON-RPC, or a response to another id) only
/// ends the race early, and reaches the client unchanged all the same.
pub(crate) fn plainly_a_response(bytes: &[u8]) -> bool {
    names_no_method(bytes) && answers(bytes)
}

/// The searchers of [`names_no_method`] and [`answers`], built once:
/// building a searcher costs more than a search of a message.
fn words() -> &'static [memchr::memmem::Finder<'static>; 4] {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    static WORDS: LazyLock<[Finder<'static>; 4]> = LazyLock::new(|| {
        [
            Finder::new(b"\\u"),
            Finder::new(b"\"method\""),
            Finder::new(b"\"result\""),
            Finder::new(b"\"error\""),
        ]
    });
    &WORDS
}

/// Whether `bytes` hold neither a `"method"` nor a `\u` escape that could
/// spell one (see [`plainly_a_response`]).
pub(crate) fn names_no_method(bytes: &[u8]) -> bool {
    let [unicode, method, ..] = words();
    unicode.find(bytes).is_none() && method.find(bytes).is_none()
}

/// Whether `bytes` hold a `"result"` or an `"error"` (see
/// [`plainly_a_response`]).
pub(crate) fn answers(bytes: &[u8]) -> bool {
    let [.., result, error] = words();
    result.find(bytes).is_some() || error.find(bytes).is_some()
}

/// Reads one JSON-RPC message of the inner server for the request `id`,
/// sent with the layer's progress token `token`, if any.
pub(crate) fn read_inner_message(
    text: &str,
    id: &RawValue,
    token: Option<&progress::Token>,
) -> Result<InnerMessage, serde_json::Error> {
    let message: Kind<'_> = serde_json::from_str(text)?;
    if let Some(method) = message.method {
        if method == "notifications/progress" {
            let params = message
                .params
                .and_then(|raw| serde_json::from_str::<ProgressParams<'_>>(raw.get()).ok());
            let ours = token.is_some_and(|token| {
                let named = params.as_ref().and_then(|params| params.token);
                named.is_some_and(|raw| token.is(raw.get()))
            });
            let line = params.and_then(progress_line);
            return Ok(InnerMessage::Progress { line, ours });
        }
        if message.id.is_some() {
            return Ok(InnerMessage::Request(RawValue::from_string(
                text.to_owned(),
            )?));
        }
        return Ok(InnerMessage::Other);
    }
    let ours = message.id.is_some_and(|other| same_id(other, id));
    if !ours {
        return Ok(InnerMessage::Other);
    }
    if message.error.is_some() || message.result.is_some() {
        return Ok(InnerMessage::Response);
    }
    Ok(InnerMessage::Other)
}

/// How the call ended, read from its response (a message that
/// [`read_inner_message`] found to be [`InnerMessage::Response`]). Read
/// apart, and only by those who need it: an answer relayed to its client as
/// it came never is.
pub(crate) fn read_outcome(text: &str) -> Result<Outcome, serde_json::Error> {
    let message: Response<'_> = serde_json::from_str(text)?;
    if let Some(error) = message.error {
        return Ok(Outcome::Error(error.to_owned()));
    }
    let Some(result) = message.result else {
        return Err(serde::de::Error::custom(
            "a response without result or error",
        ));
    };
    Ok(if is_input_required(result)? {
        Outcome::InputRequired(result.to_owned())
    } else {
        Outcome::Result(result.to_owned())
    })
}

/// Whether a result says `"resultType": "input_required"` (an error when
/// the result is not an object).
fn is_input_required(result: &RawValue) -> Result<bool, serde_json::Error> {
    let head: ResultHead<'_> = serde_json::from_str(result.get())?;
    Ok(head.result_type.as_deref() == Some("input_required"))
}

fn progress_line(params: ProgressParams<'_>) -> Option<String> {
    if let Some(message) = params.message {
        return Some(message.into_owned());
    }
    let progress = params.progress?;
    Some(match params.total {
        Some(total) => format!("progress {progress}/{total}"),
        None => format!("progress {progress}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_client_that_names_sse_among_what_it_accepts_gets_a_stream() {
        let accepting = |values: &[&str]| {
            let mut headers = http::HeaderMap::new();
            for value in values {
                headers.append(
                    http::header::ACCEPT,
                    http::HeaderValue::from_str(value).unwrap(),
                );
            }
            accepts_sse(&headers)
        };
        assert!(accepting(&["application/json, text/event-stream"]));
        assert!(accepting(&["application/json", "text/event-stream"]));
        assert!(!accepting(&["application/json"]));
        assert!(!accepting(&[]));
    }

    fn id(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn only_a_message_that_names_no_method_and_answers_is_plainly_a_response() {
        let response = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        assert!(plainly_a_response(response.as_bytes()));
        // Text with the escapes real results carry.
        assert!(plainly_a_response(
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"a\n\"b\"\\ \"method\""}}"#
        ));
        assert!(plainly_a_response(
            br#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}"#
        ));
        // Field names around the message change nothing (the live relay
        // itself looks for the result in the data lines only).
        assert!(plainly_a_response(
            b"id: 4\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
        ));
        for other in [
            // Notifications and requests name a method.
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}"#,
            // A method spelt with escapes (or any `\u`, to be safe), or a
            // result with a member named so.
            r#"{"jsonrpc":"2.0","id":7,"m\u0065thod":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"text":"caf\u00e9"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}"#,
            // Neither a result nor an error.
            r#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert!(!plainly_a_response(other.as_bytes()), "{other}");
        }
        // Whatever it vouches for, the full read finds to be the response.
        let id = RawValue::from_string("1".to_owned()).unwrap();
        assert!(matches!(
            read_inner_message(response, &id, None).unwrap(),
            InnerMessage::Response
        ));
    }

    #[test]
    fn a_response_for_another_id_is_not_ours() {
        let message = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
        assert!(matches!(
            read_inner_message(message, &id("1"), None).unwrap(),
            InnerMessage::Other
        ));
    }

    #[test]
    fn an_input_required_result_is_never_read_as_a_plain_result() {
        let message = r#"{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","inputRequests":{}}}"#;
        let read = read_inner_message(message, &id(r#""a""#), None).unwrap();
        assert!(matches!(read, InnerMessage::Response));
        assert!(matches!(
            read_outcome(message).unwrap(),
            Outcome::InputRequired(_)
        ));
    }

    #[test]
    fn responses_to_this_call_carry_a_result_or_an_error() {
        let read = |message: &str| read_inner_message(message, &id("1"), None).unwrap();
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#;
        assert!(matches!(read(error), InnerMessage::Response));
        assert!(matches!(read_outcome(error).unwrap(), Outcome::Error(_)));
        let neither = r#"{"jsonrpc":"2.0","id":1}"#;
        assert!(matches!(read(neither), InnerMessage::Other));
        assert!(read_outcome(neither).is_err());
        // A result that is not an object cannot say resultType.
        assert!(read_outcome(r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#).is_err());
    }

    #[test]
    fn input_required_is_found_however_the_key_is_spelled_and_only_at_the_top() {
        let outcome = |result: &str| {
            let message = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            match read_outcome(&message).unwrap() {
                Outcome::InputRequired(_) => "input_required",
                Outcome::Result(_) => "result",
                Outcome::Error(_) => "error",
            }
        };
        assert_eq!(
            outcome(r#"{"result\u0054ype":"input_required"}"#),
            "input_required"
        );
        assert_eq!(
            outcome(r#"{"resultType":"input_required"}"#),
            "input_required"
        );
        assert_eq!(outcome(r#"{"resultType":"complete"}"#), "result");
        assert_eq!(
            outcome(r#"{"content":[{"type":"text","text":"resultType input_required"}]}"#),
            "result"
        );
        assert_eq!(
            outcome(r#"{"content":[{"type":"text","text":"a\"b"}]}"#),
            "result"
        );
    }

    #[test]
    fn progress_notifications_become_status_lines() {
        let message = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":3,"total":10}}"#;
        let read = read_inner_message(message, &id("1"), None).unwrap();
        assert!(matches!(
            read,
            InnerMessage::Progress { line: Some(line), ours: false } if line == "progress 3/10"
        ));
    }

    #[test]
    fn only_the_layers_own_token_makes_a_progress_notification_ours() {
        let token = progress::Token::named("t");
        let read = |token_json: &str| {
            let message = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token_json},"progress":1,"message":"m"}}}}"#
            );
            match read_inner_message(&message, &id("1"), Some(&token)).unwrap() {
                InnerMessage::Progress { line, ours } => (line, ours),
                _ => panic!("not progress"),
            }
        };
        assert_eq!(read(r#""mcp-tasks/t""#), (Some("m".to_owned()), true));
        assert_eq!(read(r#""mcp-tasks/u""#), (Some("m".to_owned()), false));
        assert_eq!(read("7"), (Some("m".to_owned()), false));
    }
}
