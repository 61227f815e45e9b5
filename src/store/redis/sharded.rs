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

use tokio::time::Instant;

use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{ProtocolVersion, PushInfo, PushKind, RedisResult, Value};
use tokio::sync::{mpsc, oneshot};

use super::interest::LINGER;
use super::stops::{
    MAX_BACKOFF, Subscriber, bounded, caught_up, channel_pair, heard, reconcile, shard_of_channel,
};
use crate::backoff::Backoff;
use crate::store::TaskChange;

/// Subscribes to every shard's channels and passes what it hears on, until
/// `shutdown`. Reports the first subscription (or its failure) on `ready`.
pub(super) async fn subscribe(sub: Subscriber, ready: oneshot::Sender<RedisResult<()>>) {
    let interest = sub.stops.interest.clone();
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
        // The shards wanted now (none at connect).
        adjust(&sub, &mut conn).await?;
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
    let mut linger = tokio::time::interval(LINGER / 6);
    loop {
        let push = tokio::select! {
            _ = sub.shutdown.cancelled() => return,
            push = heard_pushes.recv() => push,
            // A shard newly wanted, or one no longer wanted: a failure here
            // is a lost connection, whose push comes next.
            _ = interest.wake.notified() => {
                let _ = adjust(&sub, &mut conn).await;
                continue;
            }
            _ = linger.tick() => {
                let _ = adjust(&sub, &mut conn).await;
                continue;
            }
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
                    heard(&sub, &channel, payload);
                }
            }
            // A node's connection dropped (a failover, a restart): every
            // subscription is redone where the slots are now.
            PushKind::Disconnection => {
                interest.clear();
                if !resubscribe(&sub, &mut conn).await {
                    return;
                }
            }
            // Our own leaving of a shard (not subscribed any more by then),
            // or the server dropping the channels of a slot that moved.
            PushKind::SUnsubscribe => {
                let shard = match push.data.first() {
                    Some(Value::BulkString(channel)) => shard_of_channel(&sub, channel),
                    _ => None,
                };
                if let Some(shard) = shard.filter(|&k| interest.is_subscribed(k)) {
                    interest.set_subscribed(shard, false);
                    if !resubscribe(&sub, &mut conn).await {
                        return;
                    }
                }
            }
            _ => {}
        }
    }
}

/// Subscribes again to the wanted shards after a loss, retrying until the
/// client routes to where the slots are now, then makes up for what was
/// missed meanwhile. `false` when the store shut down meanwhile.
async fn resubscribe(sub: &Subscriber, conn: &mut ClusterConnection) -> bool {
    tracing::warn!("task store: a sharded subscription was lost, resubscribing");
    let mut backoff = Backoff::new(Duration::from_millis(100), MAX_BACKOFF);
    loop {
        let again = tokio::select! {
            _ = sub.shutdown.cancelled() => return false,
            again = resync(sub, conn) => again,
        };
        match again {
            Ok(()) => break,
            Err(error) => {
                tracing::warn!(%error, "task store: resubscribing failed");
                tokio::select! {
                    _ = sub.shutdown.cancelled() => return false,
                    _ = backoff.sleep() => {}
                }
            }
        }
    }
    // Whether or not a shard was wanted again, ends may have been missed
    // while the node was away.
    let _ = sub.changes.send(TaskChange::Missed);
    if let Err(error) = reconcile(sub).await {
        tracing::warn!(%error, "task store: checking held tasks after a resubscription failed");
    }
    true
}

/// Subscribes to the shards newly wanted and leaves those no longer wanted
/// (one shard's pair, one slot, per command). After a new subscription,
/// held tasks are checked, and the change feed hears [`TaskChange::Missed`] when someone listens.
async fn adjust(sub: &Subscriber, conn: &mut ClusterConnection) -> RedisResult<()> {
    let interest = &sub.stops.interest;
    let (join, leave) = interest.plan();
    for &shard in &leave {
        bounded(sub.timeout, conn.sunsubscribe(&channel_pair(sub, shard))).await?;
    }
    let (mut joined, mut failed) = (Vec::new(), Ok(()));
    for &shard in &join {
        match bounded(sub.timeout, conn.ssubscribe(&channel_pair(sub, shard))).await {
            Ok(()) => {
                interest.set_subscribed(shard, true);
                joined.push(shard);
            }
            Err(error) => {
                // The rest waits for the next wake or tick.
                failed = Err(error);
                break;
            }
        }
    }
    // Those that did join are caught up even when a later one failed.
    caught_up(sub, &joined).await?;
    failed
}

/// After a lost node, every shard's subscription is set again to what is
/// wanted: joined where wanted (the client does not follow a slot to a new
/// primary by itself) and left where not (it resubscribes what it tracked,
/// shards whose linger ran out meanwhile included).
///
/// Shard by shard: one whose slot has no primary just now fails alone (and
/// the whole is tried again), and leaving is best effort, since a slot
/// without a primary holds no subscription either.
async fn resync(sub: &Subscriber, conn: &mut ClusterConnection) -> RedisResult<()> {
    let interest = &sub.stops.interest;
    let mut failed = Ok(());
    for (shard, want) in interest.wanted(Instant::now()).into_iter().enumerate() {
        let pair = channel_pair(sub, shard);
        if !want {
            let _ = bounded(sub.timeout, conn.sunsubscribe(&pair)).await;
        } else if interest.is_subscribed(shard) {
            // Joined by an earlier round of this resync.
        } else {
            match bounded(sub.timeout, conn.ssubscribe(&pair)).await {
                Ok(()) => interest.set_subscribed(shard, true),
                Err(error) => failed = Err(error),
            }
        }
    }
    failed
}
