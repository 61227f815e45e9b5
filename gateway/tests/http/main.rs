//! `mcp-tasks-gateway` as a process in front of the rmcp fixture over
//! loopback HTTP: what crosses it, how it starts and stops, what it counts and
//! whom it lets in.
//!
//! | Module | What it pins |
//! |---|---|
//! | `proxy` | what crosses the proxy and what the gateway answers when the upstream does not |
//! | `hardening` | what one client may do to the gateway and its other clients |
//! | `startup` | how the gateway starts, as an operator sees it |
//! | `shutdown` | SIGTERM as the gateway's clients see it |
//! | `metrics` | `--metrics` as Prometheus reads it |
//! | `oauth` | tokens required and checked, tasks owned by the token's subject |

#[path = "../support/gateway.rs"]
mod gateway;
#[path = "../../../tests/support/mod.rs"]
mod support;

mod hardening;
mod metrics;
mod oauth;
mod proxy;
mod shutdown;
mod startup;
