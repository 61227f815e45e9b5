//! JSON-RPC envelopes and the errors the layer answers itself.
//!
//! | Code     | When                                                     | HTTP | Basis                               |
//! |----------|----------------------------------------------------------|------|-------------------------------------|
//! | `-32700` | the body is not JSON                                     | 400  | JSON-RPC 2.0                        |
//! | `-32600` | not a single JSON-RPC request (a batch, no `method`)     | 400  | JSON-RPC 2.0; batches are gone      |
//! | `-32600` | the body is larger than the configured limit             | 413  | a limit, not a parse failure        |
//! | `-32020` | a routing header is missing or disagrees with the body   | 400  | Streamable HTTP §Server Validation  |
//! | `-32021` | the tasks extension was not declared on this request     | 400  | SEP-2663 §Capability Negotiation    |
//! | `-32022` | a protocol version the layer does not serve              | 400  | 2026-07-28 versioning               |
//! | `-32602` | a required `_meta` field is missing                      | 400  | 2026-07-28 `_meta` fields           |
//! | `-32602` | unknown, expired or foreign task                         | 200  | SEP-2663 §Error Handling            |
//! | `-32601` | `tasks/list`, `tasks/result` on 2026-07-28               | 404  | SEP-2663 §Backward Compatibility    |
//! | `-32603` | the task store failed                                    | 200  | SEP-2663 §Error Handling            |

use bytes::Bytes;
use http::StatusCode;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::wire::TASKS_EXTENSION;

/// JSON-RPC parse error.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC invalid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP 2026-07-28: a header is missing or does not match the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request lacks a client capability the server needs.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// MCP 2026-07-28: the protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// A limit of the layer refused the request (a server error in JSON-RPC's
/// implementation-defined range): a 2025-11-25 `params.task` over a task
/// cap, a `tasks/result` waiter over its cap, or a task started while the
/// layer drains. Trying again later may succeed.
pub const LIMIT_REACHED: i64 = -32000;

/// A JSON-RPC error object.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorObject {
    /// The code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional structured data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error as raw JSON, for storing in a failed task.
    pub fn to_raw(&self) -> Box<RawValue> {
        serde_json::value::to_raw_value(self).unwrap_or_else(|_| {
            RawValue::from_string(r#"{"code":-32603,"message":"internal error"}"#.to_owned())
                .expect("valid JSON literal")
        })
    }
}

/// A reply the layer produces itself: an HTTP status and a JSON body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The JSON-RPC message.
    pub body: Bytes,
    /// The error's code when the message is an error (the request span's
    /// `error.type`).
    pub code: Option<i64>,
}

#[derive(Serialize)]
struct Success<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: T,
}

#[derive(Serialize)]
struct Failure<'a, E: Serialize> {
    jsonrpc: &'static str,
    id: Option<&'a RawValue>,
    error: E,
}

fn encode(message: &impl Serialize) -> Bytes {
    // Serializing plain structs of strings, numbers and raw JSON cannot fail.
    Bytes::from(serde_json::to_vec(message).unwrap_or_default())
}

impl Reply {
    /// A `200 OK` success response.
    pub fn result(id: &RawValue, result: impl Serialize) -> Self {
        Self {
            status: StatusCode::OK,
            body: encode(&Success {
                jsonrpc: "2.0",
                id,
                result,
            }),
            code: None,
        }
    }

    /// An error response with the given HTTP status; `id` is `null` when the
    /// request's id could not be read.
    pub fn error(status: StatusCode, id: Option<&RawValue>, error: ErrorObject) -> Self {
        Self::failure(status, id, Some(error.code), error)
    }

    /// An error response carrying an error object verbatim (a failed
    /// task's).
    pub fn error_raw(status: StatusCode, id: Option<&RawValue>, error: &RawValue) -> Self {
        Self::failure(status, id, error_fields(error).code, error)
    }

    fn failure(
        status: StatusCode,
        id: Option<&RawValue>,
        code: Option<i64>,
        error: impl Serialize,
    ) -> Self {
        Self {
            status,
            code,
            body: encode(&Failure {
                jsonrpc: "2.0",
                id,
                error,
            }),
        }
    }

    /// `-32700`, HTTP 400.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        let error = ErrorObject::new(PARSE_ERROR, format!("Parse error: {detail}"));
        Self::error(StatusCode::BAD_REQUEST, None, error)
    }

    /// `-32600`, HTTP 400.
    pub fn invalid_request(id: Option<&RawValue>, message: impl Into<String>) -> Self {
        let error = ErrorObject::new(INVALID_REQUEST, message);
        Self::error(StatusCode::BAD_REQUEST, id, error)
    }

    /// `-32600`, HTTP 413.
    pub fn too_large(limit: usize) -> Self {
        let message = format!("Request body exceeds the limit of {limit} bytes");
        let error = ErrorObject::new(INVALID_REQUEST, message);
        Self::error(StatusCode::PAYLOAD_TOO_LARGE, None, error)
    }

    /// `-32020`, HTTP 400.
    pub fn header_mismatch(id: Option<&RawValue>, message: impl Into<String>) -> Self {
        let error = ErrorObject::new(HEADER_MISMATCH, message);
        Self::error(StatusCode::BAD_REQUEST, id, error)
    }

    /// `-32021` naming the tasks extension, HTTP 400.
    pub fn missing_tasks_capability(id: Option<&RawValue>) -> Self {
        let mut error = ErrorObject::new(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability: the io.modelcontextprotocol/tasks extension must be declared on this request",
        );
        error.data = Some(serde_json::json!({
            "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } }
        }));
        Self::error(StatusCode::BAD_REQUEST, id, error)
    }

    /// `-32022`, HTTP 400.
    pub fn unsupported_version(id: Option<&RawValue>, requested: &str) -> Self {
        let mut error =
            ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        error.data = Some(serde_json::json!({
            "supported": [crate::wire::MODERN_VERSION],
            "requested": requested,
        }));
        Self::error(StatusCode::BAD_REQUEST, id, error)
    }

    /// `-32602` for a malformed request, HTTP 400.
    pub fn bad_params(id: Option<&RawValue>, message: impl Into<String>) -> Self {
        let error = ErrorObject::new(INVALID_PARAMS, message);
        Self::error(StatusCode::BAD_REQUEST, id, error)
    }

    /// `-32602` "task not found", HTTP 200: the same bytes for an unknown, an
    /// expired and a foreign task.
    pub fn task_not_found(id: &RawValue) -> Self {
        let error = ErrorObject::new(INVALID_PARAMS, "Failed to retrieve task: Task not found");
        Self::error(StatusCode::OK, Some(id), error)
    }

    /// `-32601`, HTTP 404.
    pub fn method_not_found(id: Option<&RawValue>, method: &str) -> Self {
        let message = format!("Method not found: {method}");
        let error = ErrorObject::new(METHOD_NOT_FOUND, message);
        Self::error(StatusCode::NOT_FOUND, id, error)
    }

    /// `-32603`, HTTP 200.
    pub fn internal(id: Option<&RawValue>, message: impl Into<String>) -> Self {
        let error = ErrorObject::new(INTERNAL_ERROR, message);
        Self::error(StatusCode::OK, id, error)
    }
}

/// The `code` and `message` of a JSON-RPC error object, as far as it has
/// them.
#[derive(serde::Deserialize, Default)]
struct ErrorFields {
    code: Option<i64>,
    message: Option<String>,
}

fn error_fields(error: &RawValue) -> ErrorFields {
    serde_json::from_str(error.get()).unwrap_or_default()
}

/// The `message` of a JSON-RPC error object, if it has one.
pub(crate) fn error_message(error: &RawValue) -> Option<String> {
    error_fields(error).message
}
