//! `SqliteTaskStore` (feature `sqlite`): `cargo test --features sqlite --test sqlite`.
//!
//! | Module | What it pins |
//! |---|---|
//! | `store` | the store contract on a file, reopened, and after a SIGKILL |

#[path = "../contract/mod.rs"]
mod contract;

mod store;
