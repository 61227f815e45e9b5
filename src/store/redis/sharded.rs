//! The subscriber on a Redis Cluster: sharded pub/sub.
//!
//! The scripts announce with `SPUBLISH` on their shard's channels (a
//! channel argument marked `#`, see `announce` in `lua/prelude.lua`), so an
//! announcement stays with the primary that ran the script and its
//! replicas instead of going to every node over the cluster bus. This
//! subscriber holds one cluster connection on RESP3 that `SSUBSCRIBE`s to
//! every shard's two channels, each on the node that serves its slot. When
//! a node's connection drops (a failover) or a slot moves, it subscribes
//! again, retrying until the client routes to the new owners; an
//! announcement missed meanwhile is made up for by checking every held task
//! (as after a lost subscription on a single server) and by telling the
//! change feed that it may have missed some.

use std::time::Duration;

use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{ProtocolVersion, PushInfo, PushKind, RedisResult, Value};
use tokio::sync::{mpsc, oneshot};

use super::stops::{MAX_BACKOFF, Subscriber, bounded, channels, heard, reconcile};
use crate::store::TaskChange;

/// Subscribes to every shard's channels and passes what it hears on, until
/// `shutdown`. Reports the first subscription (or its failure) on `ready`.
pub(super) async fn subscribe(sub: Subscriber, ready: oneshot::Sender<RedisResult<()>>) {
    let (ended, _) = channels(&sub);
    let (pushes, mut heard_pushes) = mpsc::unbounded_channel::<PushInfo>();
    let seeds: Vec<_> = sub
        .clients
        .iter()
        .map(|client| client.get_connection_info().clone())
        .collect();
    let connecting = async {
        let client = ClusterClientBuilder::new(seeds)
            .use_protocol(ProtocolVersion::RESP3)
            .push_sender(pushes)
            .connection_timeout(sub.timeout)
            .response_timeout(sub.timeout)
            .build()?;
        let mut conn = bounded(sub.timeout, client.get_async_connection()).await?;
        subscribe_all(&sub, &mut conn).await?;
        Ok(conn)
    };
    let connected = tokio::select! {
        _ = sub.shutdown.cancelled() => return,
        connected = connecting => connected,
    };
    // The subscriptions live on this connection.
    let mut conn = match connected {
        Ok(conn) => {
            if ready.send(Ok(())).is_err() {
                return; // `connect` was given up
            }
            conn
        }
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    loop {
        let push = tokio::select! {
            _ = sub.shutdown.cancelled() => return,
            push = heard_pushes.recv() => push,
        };
        let Some(push) = push else {
            return; // the cluster connection is gone with the store
        };
        match push.kind {
            PushKind::SMessage => {
                if let [Value::BulkString(channel), Value::BulkString(payload), ..] =
                    push.data.as_slice()
                {
                    let channel = String::from_utf8_lossy(channel);
                    heard(&sub, &ended, &channel, payload);
                }
            }
            // A node's connection dropped (a failover, a restart) or a slot
            // moved away: subscribe again where the slots are now, then
            // make up for what was missed meanwhile.
            PushKind::Disconnection | PushKind::SUnsubscribe => {
                tracing::warn!("task store: a sharded subscription was lost, resubscribing");
                let mut backoff = Duration::from_millis(100);
                loop {
                    let again = tokio::select! {
                        _ = sub.shutdown.cancelled() => return,
                        again = subscribe_all(&sub, &mut conn) => again,
                    };
                    match again {
                        Ok(()) => break,
                        Err(error) => {
                            tracing::warn!(%error, "task store: resubscribing failed");
                            tokio::select! {
                                _ = sub.shutdown.cancelled() => return,
                                _ = tokio::time::sleep(backoff) => {}
                            }
                            backoff = (backoff * 2).min(MAX_BACKOFF);
                        }
                    }
                }
                let _ = sub.changes.send(TaskChange::Missed);
                if let Err(error) = reconcile(&sub).await {
                    tracing::warn!(%error, "task store: checking held tasks after a resubscription failed");
                }
            }
            _ => {}
        }
    }
}

/// `SSUBSCRIBE` to every shard's two channels, one shard (one slot) per
/// command. Subscribing again to a channel held already changes nothing.
async fn subscribe_all(sub: &Subscriber, conn: &mut ClusterConnection) -> RedisResult<()> {
    for (_, keys) in sub.shards.all() {
        let pair = [keys.ended_name(), keys.changed_name()];
        bounded(sub.timeout, conn.ssubscribe(&pair)).await?;
    }
    Ok(())
}
