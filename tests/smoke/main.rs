//! The test harness itself, without any layer: the fixture server and the
//! test clients of `support` work, so that a failure elsewhere is the layer's.
//!
//! | Module | What it proves |
//! |---|---|
//! | `fixture` | the fixture server and the 2026-07-28 clients |
//! | `legacy_client` | the rmcp 2.2 client (2025-11-25 sessions) against the bare fixture |

#[path = "../support/mod.rs"]
mod support;

mod fixture;
mod legacy_client;
