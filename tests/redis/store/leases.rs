//! An instance that dies leaves no task `working` forever: its lease runs
//! out and another instance fails the tasks it was running, within
//! `2 × lease` (its lease key found gone at two sweeps). A live instance,
//! however quiet, keeps its tasks.

use std::time::Duration;

use futures_util::StreamExt;
use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{
    InputProgress, NewTask, StoreError, TaskSnapshot, TaskState, TaskStatus, TaskStore,
};

use super::redis_server::RedisServer;
use super::wait::{BOUND, wait_until};
use super::{connect_with_lease, drop_lease, fresh_prefix, new_task, raw, waiting_task};

async fn status_of(store: &RedisTaskStore, task: &NewTask) -> TaskStatus {
    let read = store.get(task.id, task.owner.as_deref()).await.unwrap();
    read.expect("the task exists").status()
}

/// Polls until `task` leaves `working`. How soon is not asserted: on a
/// loaded machine the sweeper's own timers run late.
async fn wait_for_end(store: &RedisTaskStore, task: &NewTask) -> TaskSnapshot {
    wait_until("the task leaves working", BOUND, || async {
        let read = store.get(task.id, task.owner.as_deref()).await.unwrap();
        let read = read.expect("the task exists");
        if read.status() != TaskStatus::Working {
            Ok(read)
        } else {
            Err(read.status())
        }
    })
    .await
}

/// Waits until a lease of `lease` has run out and been swept: a witness
/// instance connects, makes a task and dies, and `reader` reads that task
/// failed. Every instance alive throughout renewed its own lease meanwhile,
/// and a sweep ran after that (a sweep looks at every instance).
async fn a_lease_runs_out(
    server: &RedisServer,
    prefix: &str,
    lease: Duration,
    reader: &RedisTaskStore,
) {
    let witness = connect_with_lease(server, prefix, lease).await;
    let task = new_task(None, None);
    witness.create(task.clone()).await.unwrap();
    drop(witness);
    assert_eq!(
        wait_for_end(reader, &task).await.status(),
        TaskStatus::Failed
    );
}

/// How long the lease of instance `iid` has left, read from Redis.
/// Polls `store` until `task` leaves `working`, checking at every read that
/// it is still `working` while the lease of instance `iid` lives. The lease
/// is read after the status: if it lived then, it lived at the status read.
async fn wait_for_sweep_after_lease(
    store: &RedisTaskStore,
    task: &NewTask,
    conn: &redis::aio::MultiplexedConnection,
    prefix: &str,
    iid: &str,
) -> TaskSnapshot {
    wait_until(
        "the task leaves working once the lease is gone",
        BOUND,
        || {
            let mut conn = conn.clone();
            async move {
                let read = store.get(task.id, task.owner.as_deref()).await.unwrap();
                let read = read.expect("the task exists");
                let still = lease_left(&mut conn, prefix, iid).await;
                assert!(
                    read.status() == TaskStatus::Working || still == Duration::ZERO,
                    "swept while its lease lived: {:?}, {still:?} left",
                    read.status()
                );
                if read.status() != TaskStatus::Working {
                    Ok(read)
                } else {
                    Err(still)
                }
            }
        },
    )
    .await
}

async fn lease_left(
    conn: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    iid: &str,
) -> Duration {
    let left: i64 = redis::cmd("PTTL")
        .arg(format!("{{{prefix}}}:instance:{iid}"))
        .query_async(conn)
        .await
        .unwrap();
    Duration::from_millis(left.max(0) as u64)
}

const LOST: &str = "The server instance running this task was lost";

#[tokio::test]
async fn an_instance_that_dies_has_its_running_tasks_failed_by_another_within_the_bound() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let lease = Duration::from_millis(600);
    // B and C both sweep: two sweepers race for A's tasks.
    let a = connect_with_lease(&server, &prefix, lease).await;
    let b = connect_with_lease(&server, &prefix, lease).await;
    let c = connect_with_lease(&server, &prefix, lease).await;

    // A drives `running`. `waiting` waits for input: nothing runs. `resumed`
    // was A's, but its round was completed on B, which drives it now.
    let running = new_task(Some("alice"), Some(Duration::from_secs(60)));
    a.create(running.clone()).await.unwrap();
    let waiting = waiting_task(&a).await;
    let resumed = waiting_task(&a).await;
    let answered = b
        .answer_input(resumed.id, Some("alice"), vec![("1.a".into(), raw("1"))])
        .await
        .unwrap();
    assert!(matches!(
        answered,
        Some(InputProgress::RoundComplete { .. })
    ));
    let on_b = new_task(None, None);
    b.create(on_b.clone()).await.unwrap();

    let client = redis::Client::open(server.url()).unwrap();
    let mut raw_conn = client.get_multiplexed_async_connection().await.unwrap();
    let lost_id = a.instance_id().to_owned();
    let driving = format!("{{{prefix}}}:driving:{lost_id}");
    let driven: Vec<String> = redis::cmd("SMEMBERS")
        .arg(&driving)
        .query_async(&mut raw_conn)
        .await
        .unwrap();
    assert_eq!(
        driven,
        vec![running.id.to_string()],
        "A drives only `running`"
    );
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub
        .subscribe(format!("{{{prefix}}}:ended"))
        .await
        .unwrap();

    // A dies: no more renewals. Its lease was renewed at most lease / 3 ago.
    drop(a);
    let left = lease_left(&mut raw_conn, &prefix, &lost_id).await;
    assert!(left > Duration::ZERO, "A's lease outlives A");
    let read = wait_for_sweep_after_lease(&b, &running, &raw_conn, &prefix, &lost_id).await;
    match &read.state {
        TaskState::Failed { error } => {
            let error: serde_json::Value = serde_json::from_str(error.get()).unwrap();
            assert_eq!(error, serde_json::json!({"code": -32603, "message": LOST}));
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert_eq!(read.status_message.as_deref(), Some(LOST));

    // The end was announced once, though two sweepers raced for it.
    let mut messages = pubsub.on_message();
    let first = tokio::time::timeout(BOUND, messages.next()).await;
    let first = first.expect("the end was announced").unwrap();
    assert_eq!(
        first.get_payload::<String>().unwrap(),
        running.id.to_string()
    );
    let again = tokio::time::timeout(
        Duration::from_millis(2 * lease.as_millis() as u64),
        messages.next(),
    )
    .await;
    assert!(again.is_err(), "announced once, got another: {again:?}");

    assert_eq!(status_of(&b, &waiting).await, TaskStatus::InputRequired);
    assert_eq!(
        status_of(&c, &resumed).await,
        TaskStatus::Working,
        "B drives it"
    );
    assert_eq!(status_of(&c, &on_b).await, TaskStatus::Working);
    let instances: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("{{{prefix}}}:instances"))
        .query_async(&mut raw_conn)
        .await
        .unwrap();
    assert!(!instances.contains(&lost_id), "A was forgotten");
    assert!(instances.contains(&b.instance_id().to_owned()));
    assert!(instances.contains(&c.instance_id().to_owned()));
    let exists: bool = redis::cmd("EXISTS")
        .arg(&driving)
        .query_async(&mut raw_conn)
        .await
        .unwrap();
    assert!(!exists, "A's driving set is gone");
    // A late outcome of A's call would be refused: failed stays failed.
    let late = b.complete(running.id, raw("{}")).await;
    assert!(
        matches!(
            late,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::Failed,
                ..
            })
        ),
        "got {late:?}"
    );
}

#[tokio::test]
async fn a_live_instance_keeps_its_tasks_while_its_lease_is_renewed() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let lease = Duration::from_millis(600);
    let a = connect_with_lease(&server, &prefix, lease).await;
    let b = connect_with_lease(&server, &prefix, lease).await;
    let on_a = new_task(None, None);
    let created = a.create(on_a.clone()).await.unwrap();
    let on_b = new_task(None, None);
    b.create(on_b.clone()).await.unwrap();
    // Resumed on A after a round: A drives it again.
    let resumed = waiting_task(&b).await;
    a.answer_input(resumed.id, Some("alice"), vec![("1.a".into(), raw("1"))])
        .await
        .unwrap();
    // Several lease periods, each instance sweeping every half lease.
    for _ in 0..3 {
        a_lease_runs_out(&server, &prefix, lease, &b).await;
    }
    for task in [&on_a, &on_b, &resumed] {
        assert_eq!(status_of(&b, task).await, TaskStatus::Working);
        assert_eq!(status_of(&a, task).await, TaskStatus::Working);
    }
    assert!(!created.stop.is_cancelled());
    assert_eq!(a.held_stop_signals(), 2);
    a.complete(on_a.id, raw("{}")).await.unwrap();
    assert_eq!(status_of(&b, &on_a).await, TaskStatus::Completed);
}

#[tokio::test]
async fn an_instance_that_stops_renewing_keeps_its_tasks_until_its_lease_runs_out() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // A silent instance with a long lease, watched by a quick sweeper.
    let lease = Duration::from_millis(1500);
    let sweeper = connect_with_lease(&server, &prefix, Duration::from_millis(200)).await;
    let silent = connect_with_lease(&server, &prefix, lease).await;
    let task = new_task(None, None);
    silent.create(task.clone()).await.unwrap();
    let silent_id = silent.instance_id().to_owned();
    let client = redis::Client::open(server.url()).unwrap();
    let mut raw_conn = client.get_multiplexed_async_connection().await.unwrap();
    drop(silent);
    // Renewed at most lease / 3 before it stopped: alive for 2/3 of a lease,
    // while the sweeper looks every 100 ms; every read until the sweep
    // checks that the task is kept while the lease lives.
    let left = lease_left(&mut raw_conn, &prefix, &silent_id).await;
    assert!(left > Duration::ZERO, "the lease outlives its instance");
    let read = wait_for_sweep_after_lease(&sweeper, &task, &raw_conn, &prefix, &silent_id).await;
    assert_eq!(read.status(), TaskStatus::Failed);
}

#[tokio::test]
async fn an_instance_that_lost_its_lease_has_its_tasks_failed_and_its_late_outcome_refused() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // A renews every 10 s; its lease vanishing now stands for a long pause.
    let a = connect_with_lease(&server, &prefix, Duration::from_secs(30)).await;
    let b = connect_with_lease(&server, &prefix, Duration::from_millis(200)).await;
    let task = new_task(None, None);
    let created = a.create(task.clone()).await.unwrap();
    drop_lease(&server, &prefix, &a).await;
    let read = wait_for_end(&b, &task).await;
    assert_eq!(read.status(), TaskStatus::Failed);
    // A's call is told to stop, and its outcome, if it comes, is refused.
    let stopped = tokio::time::timeout(BOUND, created.stop.cancelled()).await;
    assert!(stopped.is_ok(), "A's stop signal fired");
    let late = a.complete(task.id, raw("{}")).await;
    assert!(
        matches!(
            late,
            Err(StoreError::InvalidTransition {
                from: TaskStatus::Failed,
                ..
            })
        ),
        "got {late:?}"
    );
    // A is alive: its next create registers it again, and nothing of it is
    // swept while its lease lives (B swept after it, for a witness).
    let next = new_task(None, None);
    a.create(next.clone()).await.unwrap();
    a_lease_runs_out(&server, &prefix, Duration::from_millis(200), &b).await;
    assert_eq!(status_of(&b, &next).await, TaskStatus::Working);
}

#[tokio::test]
async fn a_released_instance_has_its_running_tasks_failed_at_the_next_sweep_of_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // A long lease: without the release, B would wait 30 s or more.
    let lease = Duration::from_secs(20);
    let a = connect_with_lease(&server, &prefix, lease).await;
    let b = connect_with_lease(&server, &prefix, lease).await;
    let running = new_task(Some("alice"), Some(Duration::from_secs(60)));
    a.create(running.clone()).await.unwrap();

    a.release().await.unwrap();
    // B sweeps every lease / 2 = 10 s; A is swept at B's next sweep.
    let read = wait_for_end(&b, &running).await;
    match &read.state {
        TaskState::Failed { error } => {
            let error: serde_json::Value = serde_json::from_str(error.get()).unwrap();
            assert_eq!(error["message"], LOST);
        }
        other => panic!("expected failed, got {other:?}"),
    }
}
