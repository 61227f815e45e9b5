//! While the task store is unreachable, task methods answer `-32603` (never
//! "task not found"), and an outcome reached during the outage is written
//! once the store is back: nothing is lost and no task stays `working`. A
//! call that would park while the store fails stays synchronous.

use crate::support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use mcp_tasks::store::{
    CancelOutcome, CreatedTask, InputProgress, InputRound, NewTask, StoreError, StoreFuture,
    TaskList,
};
use mcp_tasks::{MemoryTaskStore, RequestBody, TaskId, TaskSnapshot, TaskStore, TasksLayer};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use support::in_process::{
    self, discover_answer, json_response, read_message, send, tasks_declared,
};
use support::wait::{BOUND, wait_until};
use tower::{Layer, ServiceExt};

/// A memory store that fails every call while `down` is set, and takes
/// `create_delay` to acknowledge a new task.
#[derive(Clone, Default)]
struct Flaky {
    inner: MemoryTaskStore,
    down: Arc<AtomicBool>,
    create_delay: Duration,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::backend("connection refused"))
        } else {
            Ok(())
        }
    }
}

macro_rules! guarded {
    ($self:ident, $call:expr) => {
        Box::pin(async move {
            $self.check()?;
            $call.await
        })
    };
}

impl TaskStore for Flaky {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        Box::pin(async move {
            self.check()?;
            let created = self.inner.create(task).await;
            // Slow on purpose: a store that takes a while to acknowledge (paused time).
            tokio::time::sleep(self.create_delay).await;
            created
        })
    }
    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        guarded!(self, self.inner.get(id, owner))
    }
    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        guarded!(self, self.inner.set_status_message(id, message))
    }
    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        guarded!(self, self.inner.complete(id, result))
    }
    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        guarded!(self, self.inner.fail(id, error))
    }
    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        guarded!(self, self.inner.cancel(id, owner))
    }
    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        guarded!(self, self.inner.require_input(id, round))
    }
    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        guarded!(self, self.inner.answer_input(id, owner, answers))
    }
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        guarded!(self, self.inner.list(owner, cursor, limit))
    }
}

/// Answers any call after 400 ms with a text result.
async fn slow(
    request: Request<RequestBody<Full<Bytes>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let message = read_message(request.into_body()).await;
    if let Some(answer) = discover_answer(&message) {
        return Ok(answer);
    }
    // Slow on purpose: the tool answers after the threshold (paused time).
    tokio::time::sleep(Duration::from_millis(400)).await;
    let result =
        json!({"resultType": "complete", "content": [{"type": "text", "text": "survived"}]});
    Ok(json_response(
        &json!({"jsonrpc": "2.0", "id": message["id"], "result": result}),
    ))
}

/// A declaring 2026-07-28 POST of `method`, named `name`.
fn post(method: &str, params: Value, name: &str) -> Request<Full<Bytes>> {
    in_process::post(method, params, Some(name), tasks_declared())
}

// On paused time, here and in the next test: the outage, the tool's run and
// the store's delay are tokio time, so their order never depends on load.
#[tokio::test(start_paused = true)]
async fn an_outcome_reached_while_the_store_is_down_is_written_when_it_is_back() {
    let store = Flaky::default();
    let layer = TasksLayer::new(store.clone()).threshold(Duration::from_millis(100));
    let service = layer.layer(tower::service_fn(slow));

    let (_, handle) = send(
        &service,
        post("tools/call", json!({"name": "job", "arguments": {}}), "job"),
    )
    .await;
    let task = handle["result"]["taskId"]
        .as_str()
        .expect("a task handle")
        .to_owned();

    // The store goes away while the call is still running.
    store.down.store(true, Ordering::SeqCst);
    let get = || post("tasks/get", json!({"taskId": task}), &task);
    let (status, during) = send(&service, get()).await;
    assert_eq!(status, 200);
    assert_eq!(
        during["error"]["code"], -32603,
        "an outage is an internal error: {during}"
    );
    assert!(
        !during.to_string().contains("not found"),
        "never 'not found': {during}"
    );

    // The call finishes during the outage (the tool answers after 400 ms);
    // the store comes back a while later.
    // Paused time: the outage outlasts the tool, whose outcome meets a store that is down.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    store.down.store(false, Ordering::SeqCst);

    let now = wait_until(
        "the outcome is written once the store is back",
        BOUND,
        || async {
            let (_, now) = send(&service, get()).await;
            if now["result"]["status"] == "completed" {
                Ok(now)
            } else {
                Err(now)
            }
        },
    )
    .await;
    assert_eq!(now["result"]["result"]["content"][0]["text"], "survived");
}

#[tokio::test(start_paused = true)]
async fn a_client_hanging_up_while_the_task_is_created_leaves_a_task_that_is_still_driven() {
    let store = Flaky {
        create_delay: Duration::from_millis(300),
        ..Flaky::default()
    };
    let layer = TasksLayer::new(store.clone()).threshold(Duration::from_millis(100));
    let service = layer.layer(tower::service_fn(slow));

    // The client gives up after the threshold, while the store is still
    // acknowledging the new task.
    let call = post("tools/call", json!({"name": "job", "arguments": {}}), "job");
    let gave_up =
        tokio::time::timeout(Duration::from_millis(250), service.clone().oneshot(call)).await;
    assert!(
        gave_up.is_err(),
        "the client must have hung up before the handle"
    );

    wait_until("the task is created", BOUND, || async {
        store.inner.len() == 1
    })
    .await;
    let id = store.inner.ids().pop().expect("one task");
    wait_until(
        "the parked call is still driven to its outcome",
        BOUND,
        || async {
            let task = store
                .inner
                .get(id, None)
                .await
                .expect("store")
                .expect("task");
            match task.status() {
                mcp_tasks::TaskStatus::Completed => Ok(()),
                other => Err(other),
            }
        },
    )
    .await;
    assert_eq!(store.inner.len(), 1, "one task");
}

// On paused time too: the threshold (100 ms) always comes before the tool's
// answer (400 ms), for the refused park and for the one after the outage.
#[tokio::test(start_paused = true)]
async fn a_call_that_would_park_while_the_store_fails_stays_synchronous_with_the_tools_answer() {
    let store = Flaky::default();
    store.down.store(true, Ordering::SeqCst);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let inner = tower::service_fn(move |request: Request<RequestBody<Full<Bytes>>>| {
        if request.headers()["mcp-method"] == "tools/call" {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        slow(request)
    });
    let layer = TasksLayer::new(store.clone()).threshold(Duration::from_millis(100));
    let service = layer.layer(inner);
    let call = || post("tools/call", json!({"name": "job", "arguments": {}}), "job");

    let (status, answer) = send(&service, call()).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["result"]["content"][0]["text"], "survived",
        "the tool's own answer: {answer}"
    );
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "called once, not retried");
    assert!(store.inner.is_empty());

    // Once the store is back, slow calls park again.
    store.down.store(false, Ordering::SeqCst);
    let (_, handle) = send(&service, call()).await;
    assert_eq!(handle["result"]["resultType"], "task", "{handle}");
    assert_eq!(store.inner.len(), 1);
}
