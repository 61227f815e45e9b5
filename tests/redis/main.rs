//! `RedisTaskStore` against real `redis-server` processes (feature `redis`):
//! `cargo test --features redis --test redis`. Each test starts its own server
//! or 3+3 cluster on free loopback ports.
//!
//! | Module | What it pins |
//! |---|---|
//! | `store` | the store contract on one server, and several stores sharing it |
//! | `instances` | several layer instances sharing tasks through one Redis |
//! | `legacy` | 2025-11-25 sessions on two instances over one Redis |
//! | `cluster` | the contract and the multi-instance rules on a 3+3 Redis Cluster |

// The shared harnesses are self-contained, so some files load twice here:
// the cluster's and the server's both include support/redis_common.rs, and
// `contract` and `support` both include support/wait.rs.
#![allow(clippy::duplicate_mod)]

#[path = "../contract/mod.rs"]
mod contract;
#[path = "../support/redis_pair.rs"]
mod pair;
// `pair` takes its waits from the crate's root.
use contract::wait;
#[path = "../support/redis_cluster.rs"]
mod redis_cluster;
#[path = "../support/redis_server.rs"]
mod redis_server;
#[path = "../support/mod.rs"]
mod support;

mod cluster;
mod instances;
mod legacy;
mod store;
