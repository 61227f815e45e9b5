//! Tasks that outlive a gateway process: kept in SQLite across a SIGKILL and
//! a restart, or shared by two replicas over Redis.
//!
//! | Module | What it pins |
//! |---|---|
//! | `restart` | `--sqlite`: a gateway killed mid-task and started again on the same file |
//! | `replicas` | two gateways over one `redis-server` (and a 3+3 cluster), a replica that dies or drains |

#[path = "../support/gateway.rs"]
mod gateway;
#[path = "../../../tests/support/mod.rs"]
mod support;

mod replicas;
mod restart;
