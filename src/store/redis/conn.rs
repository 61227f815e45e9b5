//! The store's connection: one `redis-server` or a Redis Cluster, and the
//! optional wait for replicas after each write.
//!
//! Every key of a store shares one hash tag (`{<prefix>}`), so on a cluster
//! each command, script and pipeline goes to the one primary that serves
//! that slot; the cluster client follows it there (`MOVED`, failover) and
//! loads scripts on every primary (`SCRIPT LOAD` is sent to all of them).

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection to one server (reconnecting) or to a cluster (routing).
#[derive(Clone)]
pub(super) struct Conn {
    link: Link,
    /// Set on the connection that writes: the replicas a script's writes
    /// wait for (see [`Replicas`]).
    wait: Option<Replicas>,
}

#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// How many replicas must have a write before the store acknowledges it,
/// and how long to wait for them (`WAIT numreplicas timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Replicas {
    pub(super) count: u32,
    pub(super) timeout: Duration,
}

impl Conn {
    pub(super) fn single(conn: ConnectionManager) -> Self {
        Self {
            link: Link::Single(conn),
            wait: None,
        }
    }

    pub(super) fn cluster(conn: ClusterConnection) -> Self {
        Self {
            link: Link::Cluster(conn),
            wait: None,
        }
    }

    pub(super) fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// This connection, with every script followed by `WAIT` for `wait`'s
    /// replicas (nothing changes for `None`).
    pub(super) fn waiting_for(&self, wait: Option<Replicas>) -> Self {
        Self {
            link: self.link.clone(),
            wait,
        }
    }

    fn link(&mut self) -> &mut dyn ConnectionLike {
        match &mut self.link {
            Link::Single(conn) => conn,
            Link::Cluster(conn) => conn,
        }
    }
}

/// Whether `cmd` runs a script (the store writes only through scripts).
fn is_script(cmd: &Cmd) -> bool {
    matches!(
        cmd.args_iter().next(),
        Some(redis::Arg::Simple(name)) if name.eq_ignore_ascii_case(b"EVALSHA") || name.eq_ignore_ascii_case(b"EVAL")
    )
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let Some(wait) = self.wait.filter(|_| is_script(cmd)) else {
            return self.link().req_packed_command(cmd);
        };
        Box::pin(async move {
            // One pipeline, so that a cluster sends the WAIT to the primary
            // that ran the script (the pipeline goes where its keys are).
            let mut pipe = redis::pipe();
            pipe.add_command(cmd.clone())
                .cmd("WAIT")
                .arg(wait.count)
                .arg(wait.timeout.as_millis() as u64);
            let mut replies = self.link().req_packed_commands(&pipe, 0, 2).await?;
            let acked = replies.pop();
            let reply = replies.pop().unwrap_or(Value::Nil);
            if let Value::ServerError(error) = reply {
                return Err(error.into());
            }
            let acked = match acked {
                Some(Value::Int(acked)) => acked,
                _ => 0,
            };
            if acked < i64::from(wait.count) {
                tracing::warn!(
                    acked,
                    wanted = wait.count,
                    timeout_ms = wait.timeout.as_millis() as u64,
                    "a task store write reached fewer Redis replicas than asked within the \
                     timeout; a failover now could lose it"
                );
            }
            Ok(reply)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.link().req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(conn) => conn.get_db(),
            Link::Cluster(conn) => conn.get_db(),
        }
    }
}
