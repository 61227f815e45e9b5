//! Several layer instances behind one "load balancer", sharing tasks through
//! one Redis: each instance is a `TasksLayer` over its own fixture replica
//! (its own `Probe`) with its own `RedisTaskStore`, served on its own
//! loopback port. The client talks to whichever instance the test picks, as
//! a load balancer without affinity would send it.

use crate::{redis_server, support};

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::store::RedisTaskStore;
use mcp_tasks::{TaskId, TasksLayer, ToolPolicy};
use redis_server::RedisServer;
use serde_json::{Value, json};
use support::client::{Exchange, McpClient};
use support::fixture::{self, FixtureMode, Probe, Served};
use support::layered::{
    CLIENT_TIMEOUT, USER_HEADER, error_of, ms, principal_from_header, send, task_id, text,
};
use support::listen::{listen, next, polled, pushed, without_meta};
use support::wait::{BOUND, wait_until};
use tower::ServiceBuilder;

/// One instance behind the load balancer.
struct Instance {
    /// The HTTP server (stops when dropped).
    served: Served,
    /// What this instance's own fixture replica did.
    probe: Arc<Probe>,
}

impl Instance {
    /// A fixture replica behind a layer over its own store on `redis`, with
    /// the test authentication middleware outside the layer.
    async fn start(redis: &RedisServer, prefix: &str) -> Self {
        Self::start_with_lease(redis.url(), prefix, Duration::from_secs(10)).await
    }

    /// Like [`Self::start`], with the instance lease `lease`. No tool may
    /// run again (the fixture marks `slow_compute` idempotent).
    async fn start_with_lease(url: String, prefix: &str, lease: Duration) -> Self {
        Self::start_with(url, prefix, lease, 1).await
    }

    /// Like [`Self::start_with_lease`], with `slow_compute` allowed
    /// `attempts` runs in all.
    async fn start_with(url: String, prefix: &str, lease: Duration, attempts: u32) -> Self {
        let store = RedisTaskStore::builder(url)
            .prefix(prefix)
            .lease(lease)
            .response_timeout(Duration::from_secs(2))
            .connection_timeout(ms(500))
            .connect()
            .await
            .expect("connect to the test redis-server");
        let layer = TasksLayer::new(store)
            .threshold(ms(300))
            .ttl(Some(Duration::from_secs(60)))
            .tool_policy("confirm_delete", ToolPolicy::Always)
            .tool_retry("slow_compute", attempts);
        let probe = Probe::new();
        let app = ServiceBuilder::new()
            .map_request(principal_from_header)
            .layer(layer)
            .service(fixture::service(FixtureMode::Stateless, probe.clone()));
        let served = fixture::serve(app).await;
        Self { served, probe }
    }

    /// A fresh raw client of this instance (it can answer elicitations).
    fn client(&self) -> McpClient {
        McpClient::new(&self.served.url)
            .with_capabilities(json!({"elicitation": {}}))
            .with_timeout(CLIENT_TIMEOUT)
    }
}

/// A Redis server and `count` instances sharing one key prefix on it.
async fn cluster(redis: &RedisServer, count: usize) -> Vec<Instance> {
    let prefix = format!("lb-{}", TaskId::generate().expect("a task id"));
    let mut instances = Vec::with_capacity(count);
    for _ in 0..count {
        instances.push(Instance::start(redis, &prefix).await);
    }
    instances
}

/// Runs a blocking `RedisServer` operation without stalling the runtime.
fn blocking<T>(operation: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(operation)
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Polls `client` until the task is terminal; asserts it `completed`.
async fn wait_completed(client: &McpClient, task: &str, within: Duration) -> Value {
    let polled = client
        .wait_task_status(task, &["completed", "failed", "cancelled"], within)
        .await;
    assert_eq!(polled["result"]["status"], "completed", "{polled}");
    polled["result"].clone()
}

/// A task method as `user` (`None`: anonymous).
async fn as_user(client: &McpClient, method: &str, params: Value, user: Option<&str>) -> Exchange {
    let extra: Vec<(&str, &str)> = user.map(|user| (USER_HEADER, user)).into_iter().collect();
    send(client, 7, method, params, true, &extra).await
}

/// `confirm_delete` of `filename` parked on `a`, read through `b` once it
/// asks for input; the task id and that `tasks/get` answer.
async fn asking_on(a: &Instance, b: &Instance, filename: &str) -> (String, Value) {
    let created = a
        .client()
        .call_tool("confirm_delete", json!({"filename": filename}), true)
        .await;
    let task = task_id(&created);
    let waiting = b
        .client()
        .wait_task_status(&task, &["input_required", "completed", "failed"], BOUND)
        .await;
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    (task, waiting)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_parked_on_one_instance_is_read_through_another() {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let instances = cluster(&redis, 2).await;
    let (a, b) = (&instances[0], &instances[1]);

    let created = a
        .client()
        .call_tool("slow_compute", json!({"seconds": 1.0, "label": "lb"}), true)
        .await;
    let task = task_id(&created);

    let seen = b.client().tasks_get(&task).await;
    assert_eq!(seen["result"]["taskId"], task.as_str(), "{seen}");
    assert_eq!(seen["result"]["status"], "working", "{seen}");

    let done = wait_completed(&b.client(), &task, BOUND).await;
    assert_eq!(text(&done["result"]), "lb done after 1s", "{done}");
    // The work ran on A's replica only; B merely read the store.
    assert_eq!(a.probe.started("slow_compute"), 1);
    assert_eq!(a.probe.finished("slow_compute"), 1);
    assert_eq!(b.probe.started("slow_compute"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_another_instance_stops_the_inner_call_within_a_second() {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let instances = cluster(&redis, 2).await;
    let (a, b) = (&instances[0], &instances[1]);

    let created = a
        .client()
        .call_tool("slow_compute", json!({"seconds": 30}), true)
        .await;
    let task = task_id(&created);
    assert_eq!(a.probe.running("slow_compute"), 1);

    let cancelled = b.client().tasks_cancel(&task).await;
    assert_eq!(
        cancelled["result"],
        json!({"resultType": "complete"}),
        "{cancelled}"
    );
    assert!(
        a.probe.wait_cancelled("slow_compute", BOUND).await,
        "A's inner call still runs a second after the cancel on B: {:?}",
        a.probe.stats("slow_compute")
    );
    for instance in [a, b] {
        let polled = instance.client().tasks_get(&task).await;
        assert_eq!(polled["result"]["status"], "cancelled", "{polled}");
    }
    assert_eq!(a.probe.finished("slow_compute"), 0);
    assert_eq!(b.probe.started("slow_compute"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_round_completed_on_another_instance_resumes_the_call_there() {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let instances = cluster(&redis, 2).await;
    let (a, b) = (&instances[0], &instances[1]);

    let (task, waiting) = asking_on(a, b, "notes.txt").await;
    let requests = waiting["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputRequests: {waiting}"));
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["1.confirm"],
        "{waiting}"
    );

    let answer = accept(json!({"confirm": true}));
    let ack = b
        .client()
        .tasks_update(&task, json!({"1.confirm": answer}))
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");

    let done = wait_completed(&a.client(), &task, BOUND).await;
    assert!(
        text(&done["result"]).starts_with("Deleted notes.txt"),
        "{done}"
    );
    // A ran the first round only; B's replica got the retry with the answer.
    let on_a = a.probe.stats("confirm_delete");
    assert_eq!(on_a.started, 1, "{on_a:?}");
    assert_eq!(on_a.last_input_responses, None, "{on_a:?}");
    let on_b = b.probe.stats("confirm_delete");
    assert_eq!(on_b.started, 1, "{on_b:?}");
    assert_eq!(on_b.finished, 1, "{on_b:?}");
    assert_eq!(
        on_b.last_input_responses,
        Some(json!({"confirm": answer})),
        "{on_b:?}"
    );
    assert!(on_b.last_request_state.is_some(), "{on_b:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_on_one_instance_sees_the_changes_made_on_another() {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let instances = cluster(&redis, 2).await;
    let (a, b) = (&instances[0], &instances[1]);
    let (task, _) = asking_on(a, b, "push.txt").await;

    let (mut stream, id) = listen(&b.client(), &[&task], None).await;
    let ack = next(&mut stream).await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([task]),
        "{ack}"
    );
    let now = pushed(&mut stream, id).await;
    assert_eq!(now["status"], "input_required", "{now}");

    // Answered on A: A resumes and completes the call; B's stream sees it.
    let answer = accept(json!({"confirm": true}));
    a.client()
        .tasks_update(&task, json!({"1.confirm": answer}))
        .await;
    let resumed = pushed(&mut stream, id).await;
    assert_eq!(resumed["status"], "working", "{resumed}");
    let done = pushed(&mut stream, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(without_meta(done), polled(&a.client(), &task).await);
    let end = next(&mut stream).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_is_down_task_methods_fail_internally_and_an_outcome_reached_meanwhile_is_written_after()
 {
    let Some(mut redis) = blocking(RedisServer::start_persistent) else {
        return;
    };
    let instances = cluster(&redis, 2).await;
    let (a, b) = (&instances[0], &instances[1]);

    let created = a
        .client()
        .call_tool(
            "slow_compute",
            json!({"seconds": 1.2, "label": "outage"}),
            true,
        )
        .await;
    let task = task_id(&created);
    let seen = b.client().tasks_get(&task).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");

    // Redis goes away while the call is still running on A.
    blocking(|| redis.kill());
    assert_eq!(
        a.probe.running("slow_compute"),
        1,
        "finished before the outage"
    );
    let answers = json!({"1.confirm": accept(json!({"confirm": true}))});
    for (name, instance) in [("A", a), ("B", b)] {
        let client = instance.client();
        for (method, params) in [
            ("tasks/get", json!({"taskId": task})),
            (
                "tasks/update",
                json!({"taskId": task, "inputResponses": answers}),
            ),
            ("tasks/cancel", json!({"taskId": task})),
        ] {
            let response = as_user(&client, method, params, None).await.into_response();
            let error = error_of(&response, -32603);
            assert!(
                !error.to_string().to_lowercase().contains("not found"),
                "{method} on {name}: never 'not found': {response}"
            );
        }
    }

    // The call finishes during the outage, and was not cancelled by it.
    assert!(
        a.probe.wait_finished("slow_compute", BOUND).await,
        "{:?}",
        a.probe.stats("slow_compute")
    );
    assert_eq!(a.probe.cancelled("slow_compute"), 0);
    // The scenario: the outage goes on after the call ended, so its outcome meets Redis down.
    tokio::time::sleep(ms(200)).await;

    // Redis comes back with its data; the outcome is written by the retries.
    blocking(|| redis.restart());
    let done = wait_completed(&b.client(), &task, BOUND).await;
    assert_eq!(text(&done["result"]), "outage done after 1.2s", "{done}");
    let on_a = a.client().tasks_get(&task).await;
    assert_eq!(on_a["result"]["status"], "completed", "{on_a}");
    assert_eq!(b.probe.started("slow_compute"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_stays_invisible_to_another_principal_on_every_instance() {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let instances = cluster(&redis, 2).await;
    let (a, b) = (&instances[0], &instances[1]);
    let (on_a, on_b) = (a.client(), b.client());

    let params = json!({"name": "slow_compute", "arguments": {"seconds": 1.0, "label": "mine"}});
    let created = send(
        &on_a,
        1,
        "tools/call",
        params,
        true,
        &[(USER_HEADER, "alice")],
    )
    .await;
    let task = task_id(&created.into_response());

    // On B, alice sees her task; bob and an anonymous caller get the very
    // bytes of a task that never existed, for every task method.
    let seen = as_user(&on_b, "tasks/get", json!({"taskId": task}), Some("alice")).await;
    assert_eq!(seen.into_response()["result"]["status"], "working");
    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = |id: &str| json!({"taskId": id, "inputResponses": {"k": {}}});
        let reference = as_user(&on_b, method, params(unknown), Some("alice")).await;
        error_of(&reference.clone().into_response(), -32602);
        for user in [Some("bob"), None] {
            let other = as_user(&on_b, method, params(&task), user).await;
            assert_eq!(other.status, reference.status, "{method} as {user:?}");
            assert_eq!(other.body, reference.body, "{method} as {user:?}");
        }
    }

    // None of that touched the task: it completes for alice, on either instance.
    let done = wait_until("alice's task ends", BOUND, || async {
        let polled = as_user(&on_b, "tasks/get", json!({"taskId": task}), Some("alice"))
            .await
            .into_response();
        (polled["result"]["status"] != "working").then_some(polled)
    })
    .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]["result"]), "mine done after 1s");
    let from_a = as_user(&on_a, "tasks/get", json!({"taskId": task}), Some("alice")).await;
    assert_eq!(from_a.into_response()["result"]["status"], "completed");
    let bob = as_user(&on_a, "tasks/get", json!({"taskId": task}), Some("bob")).await;
    error_of(&bob.into_response(), -32602);
    assert_eq!(a.probe.cancelled("slow_compute"), 0);
    assert_eq!(b.probe.started("slow_compute"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_crashes_mid_task_has_the_task_failed_by_another_instance() {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let prefix = format!("crash-{}", TaskId::generate().expect("a task id"));
    let lease = ms(600);

    let url = redis.url();
    let (a_url, crash, a_thread) = blocking(|| crashing_instance(url, &prefix, lease, 1));
    let b = Instance::start_with_lease(redis.url(), &prefix, lease).await;

    let on_a = McpClient::new(&a_url).with_timeout(CLIENT_TIMEOUT);
    let created = on_a
        .call_tool(
            "slow_compute",
            json!({"seconds": 30.0, "label": "doomed"}),
            true,
        )
        .await;
    let task = task_id(&created);
    let before = b.client().tasks_get(&task).await;
    assert_eq!(before["result"]["status"], "working", "{before}");

    blocking(|| crash_now(crash, a_thread));

    // B sweeps A's tasks once A's lease has run out: within 2 × lease, plus margin.
    let failed = b
        .client()
        .wait_task_status(&task, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert_eq!(failed["result"]["error"]["code"], -32603, "{failed}");
    let message = failed["result"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("instance") && message.contains("lost"),
        "{failed}"
    );
}

/// Instance A on a runtime of its own, so that dropping that runtime stops
/// everything A does at once (its server, its drivers, its lease), with
/// `slow_compute` allowed `attempts` runs: its URL, the trigger of its
/// crash, and its thread.
fn crashing_instance(
    url: String,
    prefix: &str,
    lease: Duration,
    attempts: u32,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (crash, crashed) = tokio::sync::oneshot::channel::<()>();
    let prefix = prefix.to_owned();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime for instance A");
        runtime.block_on(async move {
            let a = Instance::start_with(url, &prefix, lease, attempts).await;
            url_tx.send(a.served.url.clone()).expect("report A's url");
            let _ = crashed.await;
            drop(a);
        });
        drop(runtime);
    });
    let a_url = url_rx.recv().expect("instance A started");
    (a_url, crash, thread)
}

/// Crashes instance A and waits until its thread is gone.
fn crash_now(crash: tokio::sync::oneshot::Sender<()>, thread: std::thread::JoinHandle<()>) {
    let _ = crash.send(());
    thread.join().expect("instance A stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_may_run_again_is_claimed_and_run_by_another_instance_when_its_instance_crashes()
 {
    let Some(redis) = blocking(RedisServer::start) else {
        return;
    };
    let prefix = format!("rerun-{}", TaskId::generate().expect("a task id"));
    let lease = ms(600);
    let url = redis.url();
    let (a_url, crash, a_thread) = blocking(|| crashing_instance(url, &prefix, lease, 3));
    let b = Instance::start_with(redis.url(), &prefix, lease, 3).await;

    let on_a = McpClient::new(&a_url).with_timeout(CLIENT_TIMEOUT);
    let created = on_a
        .call_tool(
            "slow_compute",
            json!({"seconds": 1.0, "label": "again"}),
            true,
        )
        .await;
    let task = task_id(&created);
    // B serves a request before the crash: it listens for claims from then on.
    let before = b.client().tasks_get(&task).await;
    assert_eq!(before["result"]["status"], "working", "{before}");
    blocking(|| crash_now(crash, a_thread));

    let done = b
        .client()
        .wait_task_status(&task, &["completed", "failed", "cancelled"], BOUND)
        .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]["result"]), "again done after 1s");
    assert_eq!(b.probe.started("slow_compute"), 1, "B ran the call again");
}
