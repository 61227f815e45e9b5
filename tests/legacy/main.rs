//! 2025-11-25 sessions and their experimental tasks, end to end over
//! loopback HTTP with the layer in front of the rmcp fixture in session mode.
//!
//! | Module | What it pins |
//! |---|---|
//! | `tasks` | the task requests of a session, as raw messages on the wire |
//! | `listing` | who sees which task, `tasks/list` paging, both generations on one layer |
//! | `limits` | the caps on `params.task` and on `tasks/result` waiters |
//! | `rmcp_client` | the real rmcp 2.2 client against the layer |

#[path = "../support/mod.rs"]
mod support;

mod limits;
mod listing;
mod rmcp_client;
mod tasks;
