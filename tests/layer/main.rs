//! `TasksLayer` end to end, one module per concern: the layer served over
//! loopback HTTP in front of the rmcp fixture or a scripted inner service,
//! driven by the test clients of `support`.
//!
//! | Module | What it pins |
//! |---|---|
//! | `parking` | when a call stays synchronous, when it becomes a task, how a parked call ends |
//! | `methods`, `gates`, `headers`, `bad_input` | the task methods, what needs the extension, routing headers, malformed requests |
//! | `policies`, `limits`, `scope`, `ownership` | per-tool policies, caps, scopes over one store, who owns a task |
//! | `mrtr`, `resume_credentials`, `shed_extensions` | input rounds and the call the layer re-issues |
//! | `live_sse`, `keep_alive`, `event_limit`, `progress`, `background_reads` | SSE answers, keep-alive comments, progress, what a background call keeps |
//! | `inner_answers`, `inner_errors`, `store_outage`, `drain` | what breaks: the inner server, the store, a drain |
//! | `fallback`, `rmcp_client`, `polls` | clients without tasks, the rmcp client, the fast path's polls |

#[path = "../support/mod.rs"]
mod support;
// The paths the bench helpers that `polls` shares (benches/support/) take
// the client and the fixture from.
use support::{client, fixture};

mod background_reads;
mod bad_input;
mod drain;
mod event_limit;
mod fallback;
mod gates;
mod headers;
mod inner_answers;
mod inner_errors;
mod keep_alive;
mod limits;
mod live_sse;
mod methods;
mod mrtr;
mod ownership;
mod parking;
mod policies;
mod polls;
mod progress;
mod resume_credentials;
mod rmcp_client;
mod scope;
mod shed_extensions;
mod store_outage;
