//! The store contract (`tests/contract/`) and the in-memory store.
//!
//! | Module | What it pins |
//! |---|---|
//! | `memory` | `MemoryTaskStore` keeps the contract |
//! | `teeth` | the contract fails a store that breaks any one of its rules |
//!
//! The Redis and SQLite stores run the same contract in binaries of their own
//! (`tests/redis/`, `tests/sqlite/`), each behind its feature.

#[path = "../contract/mod.rs"]
mod contract;

mod memory;
mod teeth;
