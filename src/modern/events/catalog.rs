//! The layer's event type as `events/list` lists it, and the extension in
//! `server/discover`.
//!
//! | Answer of the inner server | What the client gets |
//! |----------------------------|----------------------|
//! | an `events/list` result, first page | its events and the layer's descriptor (an inner type of the same name is replaced, with a warning in the log) |
//! | an `events/list` result, a later page | unchanged |
//! | `-32601` (in a 200 or a 404), or a 404 or 405 | the layer's descriptor alone |
//! | any other error | unchanged |
//! | a `server/discover` result | `capabilities.extensions["io.modelcontextprotocol/events"]` (the inner server's own settings kept) and `capabilities.events` (which released clients still read) |

use bytes::Bytes;
use http::Response;
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::args::{MAX_TASK_IDS, STATUSES};
use crate::body::{BoxError, ResponseBody, reply_response};
use crate::config::events::EventsConfig;
use crate::rewrite::edit_response;
use crate::wire::jsonrpc::Reply;

/// The extension's key.
pub(crate) const EVENTS_EXTENSION: &str = "io.modelcontextprotocol/events";

/// The layer's descriptor in `events/list`.
pub(crate) fn descriptor(config: &EventsConfig) -> Value {
    let statuses: Vec<&str> = STATUSES.iter().map(|status| status.as_str()).collect();
    let mut delivery = vec!["poll", "push"];
    if config.has_webhooks() {
        delivery.push("webhook");
    }
    json!({
        "name": &*config.name,
        "description": "A status change of one of your tasks (created, input required, working again, completed, failed, cancelled). Read the outcome with tasks/get.",
        "delivery": delivery,
        "inputSchema": {
            "type": "object",
            "properties": {
                "taskIds": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": MAX_TASK_IDS,
                    "description": "Only these tasks; all of yours when left out",
                },
                "statuses": {
                    "type": "array",
                    "items": {"type": "string", "enum": statuses},
                    "description": "Only changes to these statuses; all when left out",
                },
            },
            "additionalProperties": false,
        },
        "payloadSchema": {
            "type": "object",
            "properties": {
                "taskId": {"type": "string"},
                "status": {"type": "string", "enum": statuses},
                "statusMessage": {"type": "string"},
                "createdAt": {"type": "string", "format": "date-time"},
                "lastUpdatedAt": {"type": "string", "format": "date-time"},
                "ttlMs": {"type": ["integer", "null"]},
                "pollIntervalMs": {"type": "integer"},
            },
            "required": ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"],
        },
    })
}

/// The answer to `events/list` (request id `id`, JSON text) when the inner
/// server has no events: the layer's descriptor alone.
pub(crate) fn own_list(config: &EventsConfig, id: &RawValue) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"resultType": "complete", "events": [descriptor(config)]},
    })
    .to_string()
}

/// The client's answer to `events/list` (id `id`), from the inner
/// server's `response` (an error body read up to `limit` bytes).
pub(crate) async fn list_response<B>(
    response: Response<B>,
    config: Option<EventsConfig>,
    first_page: bool,
    id: Box<RawValue>,
    limit: usize,
) -> Response<ResponseBody<B>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let Some(config) = config else {
        return response.map(ResponseBody::inner);
    };
    let own = own_list(&config, &id);
    let status = response.status();
    if status.is_success() {
        if !first_page {
            return response.map(ResponseBody::inner);
        }
        return edit_response(response, move |message: &str| {
            if is_method_not_found(message) {
                return Some(own.clone());
            }
            merged(&config, message)
        })
        .await;
    }
    let ours = || {
        let result = json!({"resultType": "complete", "events": [descriptor(&config)]});
        reply_response(Reply::result(&id, result))
    };
    if matches!(status.as_u16(), 404 | 405) {
        return ours();
    }
    // Another error: the layer's list only for a -32601 in it.
    let (head, body) = response.into_parts();
    match Limited::new(body, limit).collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            let text = std::str::from_utf8(&bytes).unwrap_or_default();
            if is_method_not_found(text) {
                return ours();
            }
            Response::from_parts(head, ResponseBody::full(bytes))
        }
        Err(_) => {
            let mut response = Response::new(ResponseBody::full(Bytes::new()));
            *response.status_mut() = http::StatusCode::BAD_GATEWAY;
            response
        }
    }
}

/// Whether `message` is a `-32601` error (the inner server has no events).
pub(crate) fn is_method_not_found(message: &str) -> bool {
    serde_json::from_str::<Value>(message)
        .ok()
        .and_then(|value| value.get("error")?.get("code")?.as_i64())
        == Some(-32601)
}

/// `message` (the inner server's `events/list` answer, first page) with
/// the layer's descriptor; `None` for a message that is not a result with
/// an `events` array.
pub(crate) fn merged(config: &EventsConfig, message: &str) -> Option<String> {
    let mut value: Value = serde_json::from_str(message).ok()?;
    let listed = value.get_mut("result")?.get_mut("events")?.as_array_mut()?;
    let before = listed.len();
    listed.retain(|event| event.get("name").and_then(Value::as_str) != Some(&*config.name));
    if listed.len() != before {
        tracing::warn!(
            name = &*config.name,
            "the inner server lists an event type of the layer's name; the layer's replaces it"
        );
    }
    listed.push(descriptor(config));
    Some(value.to_string())
}

/// `message` (a `server/discover` answer) with the extension declared;
/// `None` when it is not a result with `capabilities`.
pub(crate) fn advertised(message: &str) -> Option<String> {
    let mut value: Value = serde_json::from_str(message).ok()?;
    let capabilities = value
        .get_mut("result")?
        .get_mut("capabilities")?
        .as_object_mut()?;
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| json!({}))
        .as_object_mut()?;
    extensions
        .entry(EVENTS_EXTENSION)
        .or_insert_with(|| json!({}));
    capabilities.entry("events").or_insert_with(|| json!({}));
    Some(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_joins_the_inner_list_and_replaces_a_namesake() {
        let config = EventsConfig::new();
        let inner = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","events":[{"name":"build.done","delivery":["poll"],"inputSchema":{},"payloadSchema":{}},{"name":"mcp-tasks/status","delivery":["poll"]}]}}"#;
        let value: Value = serde_json::from_str(&merged(&config, inner).unwrap()).unwrap();
        let names: Vec<&str> = value["result"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["build.done", "mcp-tasks/status"]);
        assert_eq!(
            value["result"]["events"][1]["delivery"],
            json!(["poll", "push"])
        );
        assert!(
            merged(
                &config,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#
            )
            .is_none()
        );
        assert!(is_method_not_found(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#
        ));
    }

    #[test]
    fn discover_gains_the_extension_and_keeps_the_inner_settings() {
        let plain = r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}}}}"#;
        let value: Value = serde_json::from_str(&advertised(plain).unwrap()).unwrap();
        assert_eq!(
            value["result"]["capabilities"]["extensions"][EVENTS_EXTENSION],
            json!({})
        );
        assert_eq!(value["result"]["capabilities"]["events"], json!({}));
        let own = r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"extensions":{"io.modelcontextprotocol/events":{"listChanged":true}}}}}"#;
        let value: Value = serde_json::from_str(&advertised(own).unwrap()).unwrap();
        assert_eq!(
            value["result"]["capabilities"]["extensions"][EVENTS_EXTENSION],
            json!({"listChanged": true})
        );
    }
}
