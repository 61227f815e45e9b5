//! Shared test support: the fixture MCP server, the test clients, and the
//! fixture behind `TasksLayer`.
//!
//! Use it from an integration test with `mod support;`. `fixture` and `client`
//! are also self-contained, so examples and benches can include one directly
//! with `#[path = "../tests/support/fixture/mod.rs"] mod fixture;` (or
//! `client/mod.rs`); `layered` needs the crate under test.

pub mod client;
pub mod events_upstream;
pub mod fixture;
pub mod in_process;
pub mod layered;
pub mod listen;
pub mod process;
pub mod recorded;
pub mod session;
pub mod wait;
