//! The extension's errors, in one place.
//!
//! | Error | Code | HTTP | When |
//! |-------|------|------|------|
//! | NotFound | `-32011` | 200 | `events/unsubscribe` of a subscription that does not exist (`data.kind: "subscription"`) |
//! | Forbidden | `-32012` | 200 | a webhook without an authenticated principal |
//! | ResourceExhausted | `-32013` | 200 | a cap on streams or webhook subscriptions (`data.limit`, `data.max`) |
//! | Unsupported | `-32014` | 200 | webhooks without a transport, a delivery mode other than `webhook` (`data.feature`, `data.value`) |
//! | CallbackEndpointError | `-32015` | 200 | the callback did not answer its verification (`data.reason`) |
//!
//! The codes are those the released implementations of the extension
//! send (mcp-handler 2.4, the `@ai-sdk/mcp` 2.0 client's peers); the
//! latest draft of the extension proposes `-32023` to `-32027` for the
//! same five, marked provisional. A task named in `arguments.taskIds` that
//! the caller may not see gets `tasks/get`'s own "task not found", byte
//! for byte.

use http::StatusCode;
use serde_json::json;
use serde_json::value::RawValue;

use crate::wire::jsonrpc::{ErrorObject, Reply};

const NOT_FOUND: i64 = -32011;
const FORBIDDEN: i64 = -32012;
const RESOURCE_EXHAUSTED: i64 = -32013;
const UNSUPPORTED: i64 = -32014;
const CALLBACK_ENDPOINT: i64 = -32015;

fn reply(id: &RawValue, code: i64, message: &str, data: serde_json::Value) -> Reply {
    let mut error = ErrorObject::new(code, message);
    error.data = Some(data);
    Reply::error(StatusCode::OK, Some(id), error)
}

/// `events/unsubscribe` of no subscription.
pub(crate) fn no_subscription(id: &RawValue) -> Reply {
    let data = json!({"kind": "subscription"});
    reply(id, NOT_FOUND, "No such subscription", data)
}

/// A webhook without an authenticated principal.
pub(crate) fn forbidden(id: &RawValue) -> Reply {
    let message = "Webhook subscriptions need an authenticated principal";
    reply(id, FORBIDDEN, message, json!({}))
}

/// A cap reached: `limit` names it, `max` is its value.
pub(crate) fn exhausted(id: &RawValue, limit: &str, max: u32) -> Reply {
    let message = format!("Too many {limit}: at most {max}");
    reply(
        id,
        RESOURCE_EXHAUSTED,
        &message,
        json!({"limit": limit, "max": max}),
    )
}

/// A delivery mode the layer does not offer.
pub(crate) fn unsupported_mode(id: &RawValue, mode: &str) -> Reply {
    let message = format!("Delivery mode {mode} is not offered for this event");
    let data = json!({"feature": "deliveryMode", "value": mode});
    reply(id, UNSUPPORTED, &message, data)
}

/// The callback did not confirm the subscription (`reason`: one of the
/// extension's `lastError` categories).
pub(crate) fn callback(id: &RawValue, reason: &str) -> Reply {
    let message = "The callback URL did not confirm the subscription";
    reply(id, CALLBACK_ENDPOINT, message, json!({"reason": reason}))
}
