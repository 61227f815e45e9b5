//! `Mcp-Param-*` headers (SEP-2243): a 2026-07-28 client copies the
//! arguments a tool marks `x-mcp-header` in its input schema into headers
//! an intermediary can route on, and the server that processes the body
//! checks that they say what the body says. An older upstream knows no
//! such headers, so the bridge checks them, from the tool schemas it saw
//! in the upstream's `tools/list` answers.
//!
//! | A `tools/call` of a tool whose schema marks argument P with `x-mcp-header: H` | Answer |
//! |------------------------------------------------------------------------------|--------|
//! | P in the body, `Mcp-Param-H` equal to it (a string as it is, a number or boolean as JSON writes it; surrounding spaces and tabs left out) | passed |
//! | `Mcp-Param-H` as `=?base64?…?=` whose standard, padded Base64 decodes to UTF-8 equal to P | passed |
//! | the same with invalid Base64 (bad padding, a character outside the alphabet) | `-32020`, 400 |
//! | a value without both the `=?base64?` start and the `?=` end | taken literally |
//! | P in the body without the header, the header without P, or the two different | `-32020`, 400 |
//! | neither | passed |
//! | a tool the bridge has not seen listed yet | passed (nothing to check against) |
//!
//! At most [`MAX_TOOLS`] tools are remembered; a `tools/list` page that
//! lists a tool again replaces what was known of it.

use std::collections::HashMap;
use std::sync::Mutex;

use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::checked::Refused;
use super::message::{Message, member};
use mcp_tasks::wire::jsonrpc::Reply;

/// The most tools whose headers are remembered.
pub(crate) const MAX_TOOLS: usize = 10_000;

/// The `x-mcp-header` arguments of the upstream's tools: tool name →
/// `(argument, header name)`.
#[derive(Default)]
pub(crate) struct ParamHeaders {
    tools: Mutex<HashMap<String, Vec<(String, String)>>>,
}

/// What the bridge reads of a `tools/list` answer.
#[derive(Deserialize)]
struct Listed {
    result: Option<ListResult>,
}

#[derive(Deserialize)]
struct ListResult {
    #[serde(default)]
    tools: Vec<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    name: String,
    #[serde(rename = "inputSchema")]
    input_schema: Option<Schema>,
}

#[derive(Deserialize)]
struct Schema {
    #[serde(default)]
    properties: HashMap<String, Property>,
}

#[derive(Deserialize)]
struct Property {
    #[serde(rename = "x-mcp-header")]
    header: Option<String>,
}

impl ParamHeaders {
    /// Learns the tools of `answer`, if it is a `tools/list` result (one
    /// with a `tools` array; any other answer is left alone).
    pub(crate) fn learn(&self, answer: &[u8]) {
        // Most answers are no tool list: only one that names tools is read.
        if !answer.windows(7).any(|at| at == br#""tools""#) {
            return;
        }
        let Ok(Listed { result: Some(list) }) = serde_json::from_slice::<Listed>(answer) else {
            return;
        };
        let mut tools = self
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for tool in list.tools {
            let mut headers: Vec<(String, String)> = tool
                .input_schema
                .map(|schema| schema.properties)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(argument, property)| property.header.map(|header| (argument, header)))
                .collect();
            headers.sort();
            if headers.is_empty() {
                tools.remove(&tool.name);
            } else if tools.len() < MAX_TOOLS || tools.contains_key(&tool.name) {
                tools.insert(tool.name, headers);
            }
        }
    }

    /// Checks the `Mcp-Param-*` headers of `message`, a 2026-07-28
    /// request sent with `headers`, against the arguments they copy.
    pub(crate) fn check(&self, headers: &HeaderMap, message: &Message<'_>) -> Result<(), Refused> {
        if message.method.as_deref() != Some("tools/call") {
            return Ok(());
        }
        let params = message.params;
        let name = params
            .and_then(|params| member(params, "name"))
            .and_then(|name| serde_json::from_str::<String>(name.get()).ok());
        let Some(name) = name else { return Ok(()) };
        let marked = {
            let tools = self
                .tools
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match tools.get(&name) {
                Some(marked) => marked.clone(),
                None => return Ok(()),
            }
        };
        let arguments = params.and_then(|params| member(params, "arguments"));
        for (argument, header) in &marked {
            let value = arguments.and_then(|arguments| member(arguments, argument));
            let sent = headers.get(format!("mcp-param-{header}"));
            if let Err(why) = agrees(sent.map(http::HeaderValue::as_bytes), value) {
                let what = format!("Mcp-Param-{header} {why} (argument {argument:?})");
                return Err(Reply::header_mismatch(message.id, what).into());
            }
        }
        Ok(())
    }
}

/// Whether header value `sent` says what the argument `value` is.
fn agrees(sent: Option<&[u8]>, value: Option<&RawValue>) -> Result<(), &'static str> {
    let (sent, value) = match (sent, value) {
        (None, None) => return Ok(()),
        (None, Some(_)) => return Err("is missing for an argument the body has"),
        (Some(_), None) => return Err("is sent for an argument the body does not have"),
        (Some(sent), Some(value)) => (sent, value),
    };
    let sent = std::str::from_utf8(sent.trim_ascii()).map_err(|_| "is not visible ASCII")?;
    let sent = mcp_tasks::wire::decode_header_value(sent).ok_or("is not valid Base64")?;
    let expected = match serde_json::from_str::<Value>(value.get()) {
        Ok(Value::String(text)) => text,
        Ok(Value::Number(number)) => number.to_string(),
        Ok(Value::Bool(flag)) => flag.to_string(),
        _ => return Err("copies an argument that is not a string, number or boolean"),
    };
    if sent == expected {
        Ok(())
    } else {
        Err("does not match the argument")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> ParamHeaders {
        let params = ParamHeaders::default();
        params.learn(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"route","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer"}}}},{"name":"plain","inputSchema":{"type":"object"}}]}}"#);
        params
    }

    fn call(arguments: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"route","arguments":{arguments}}}}}"#
        )
    }

    fn checked(params: &ParamHeaders, arguments: &str, header: Option<&str>) -> Result<(), u16> {
        let mut headers = HeaderMap::new();
        if let Some(value) = header {
            headers.insert("mcp-param-region", value.parse().unwrap());
        }
        let body = call(arguments);
        let message = Message::read(body.as_bytes()).unwrap();
        params
            .check(&headers, &message)
            .map_err(|refused| refused.status.as_u16())
    }

    #[test]
    fn a_header_must_say_what_the_argument_says() {
        let params = listed();
        let hello = r#"{"region":"Hello"}"#;
        assert_eq!(checked(&params, hello, Some("Hello")), Ok(()));
        assert_eq!(checked(&params, hello, Some("  Hello\t")), Ok(()));
        assert_eq!(checked(&params, hello, Some("=?base64?SGVsbG8=?=")), Ok(()));
        assert_eq!(checked(&params, hello, Some("Other")), Err(400));
        assert_eq!(checked(&params, hello, None), Err(400), "missing");
        assert_eq!(
            checked(&params, "{}", Some("Hello")),
            Err(400),
            "no argument"
        );
        assert_eq!(checked(&params, "{}", None), Ok(()));
    }

    #[test]
    fn invalid_base64_is_refused_and_a_value_without_both_marks_is_literal() {
        let params = listed();
        let hello = r#"{"region":"Hello"}"#;
        assert_eq!(
            checked(&params, hello, Some("=?base64?SGVsbG8?=")),
            Err(400)
        );
        assert_eq!(
            checked(&params, hello, Some("=?base64?SGVs!!!bG8=?=")),
            Err(400)
        );
        let literal = r#"{"region":"=?base64?SGVsbG8="}"#;
        assert_eq!(checked(&params, literal, Some("=?base64?SGVsbG8=")), Ok(()));
        let number = r#"{"region":42}"#;
        assert_eq!(checked(&params, number, Some("42")), Ok(()));
    }

    #[test]
    fn a_tool_not_listed_or_listed_again_without_marks_is_not_checked() {
        let params = ParamHeaders::default();
        assert_eq!(checked(&params, r#"{"region":"x"}"#, None), Ok(()));
        let params = listed();
        params.learn(br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"route","inputSchema":{"type":"object"}}]}}"#);
        assert_eq!(checked(&params, r#"{"region":"x"}"#, None), Ok(()));
    }
}
