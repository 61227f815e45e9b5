//! Task events through `mcp-tasks-gateway` (issue #50): the HTTPS
//! transport of webhook deliveries against receivers on loopback sockets,
//! deliveries to a Python receiver that checks each signature on its own
//! (through failures, a SIGKILL over SQLite, an instance lost over Redis),
//! an upstream's own events passing through, and a released Events client.
//!
//! | Module | What it pins |
//! |---|---|
//! | `transport` | `HttpsDeliver`: trust, the address policy, no redirect, the time and size bounds |
//! | `delivery` | signed deliveries, retries, deliveries that outlive a killed gateway; an upstream's own events |
//! | `ai_sdk` | `@ai-sdk/mcp` 2.0.99 lists, subscribes and takes a task's events |

#[path = "../support/events.rs"]
mod events;
#[path = "../support/gateway.rs"]
mod gateway;
#[path = "../../../tests/support/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;
#[path = "../../../tests/support/mod.rs"]
mod support;
#[path = "../support/tls.rs"]
mod tls;
#[path = "../support/oauth/tokens.rs"]
mod tokens;

mod ai_sdk;
mod delivery;
mod transport;
