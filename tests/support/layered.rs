//! The fixture behind `TasksLayer`, served over loopback HTTP, for the
//! end-to-end layer tests (`tests/layer/`).
//!
//! Unlike `fixture` and `client`, this module needs the crate under test, so it
//! is for integration tests only.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use mcp_tasks::{
    MemoryTaskStore, NewTask, Principal, Quota, TaskId, TaskStore, TasksLayer, Timestamp,
};
use serde_json::{Value, json};
use tower::ServiceBuilder;

use super::client::{Exchange, McpClient};
use super::fixture::{self, FixtureMode, FixtureOptions, Probe, Served};

/// The header the test authentication middleware reads the principal from.
pub const USER_HEADER: &str = "x-test-user";

/// How long one exchange of a layer test may take before it fails the test.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Shorthand for a number of milliseconds.
pub fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// A layered fixture: the server, what its tools did, and the task store.
pub struct Layered {
    /// The HTTP server (stops when dropped).
    pub served: Served,
    /// What the fixture's tool handlers did.
    pub probe: Arc<Probe>,
    /// The layer's store (shared with the layer), to check what it holds.
    pub store: MemoryTaskStore,
}

impl Layered {
    /// Serves the `Stateless` fixture behind `configure(TasksLayer::new(store))`.
    pub async fn start(configure: impl FnOnce(TasksLayer) -> TasksLayer) -> Self {
        Self::serve(stateless(), false, MemoryTaskStore::new(), configure).await
    }

    /// Like [`Self::start`], with a test authentication middleware outside
    /// the layer that turns the [`USER_HEADER`] into a [`Principal`].
    pub async fn start_with_users(configure: impl FnOnce(TasksLayer) -> TasksLayer) -> Self {
        Self::serve(stateless(), true, MemoryTaskStore::new(), configure).await
    }

    /// Like [`Self::start_with_users`], over `store` (which other layers
    /// may share).
    pub async fn start_over(
        store: MemoryTaskStore,
        configure: impl FnOnce(TasksLayer) -> TasksLayer,
    ) -> Self {
        Self::serve(stateless(), true, store, configure).await
    }

    /// Like [`Self::start`], with the fixture answering `application/json`
    /// (rather than SSE) when a tool sends no notification first.
    pub async fn start_json(configure: impl FnOnce(TasksLayer) -> TasksLayer) -> Self {
        let options = stateless().json_response(true);
        Self::serve(options, false, MemoryTaskStore::new(), configure).await
    }

    /// Serves the dual-era `Session` fixture (rmcp legacy sessions) behind
    /// `configure(TasksLayer::new(store))`, with the test authentication
    /// middleware outside the layer.
    pub async fn start_sessions(configure: impl FnOnce(TasksLayer) -> TasksLayer) -> Self {
        let options = FixtureOptions::new(FixtureMode::Session);
        Self::serve(options, true, MemoryTaskStore::new(), configure).await
    }

    async fn serve(
        options: FixtureOptions,
        users: bool,
        store: MemoryTaskStore,
        configure: impl FnOnce(TasksLayer) -> TasksLayer,
    ) -> Self {
        let probe = Probe::new();
        let layer = configure(TasksLayer::new(store.clone()));
        let app = ServiceBuilder::new()
            .map_request(move |request| {
                if users {
                    principal_from_header(request)
                } else {
                    request
                }
            })
            .layer(layer)
            .service(fixture::service_with(options, probe.clone()));
        let served = fixture::serve(app).await;
        Self {
            served,
            probe,
            store,
        }
    }

    /// A fresh raw client (its own connection pool) with [`CLIENT_TIMEOUT`].
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.served.url).with_timeout(CLIENT_TIMEOUT)
    }
}

fn stateless() -> FixtureOptions {
    FixtureOptions::new(FixtureMode::Stateless)
}

/// The test authentication middleware: `x-test-user: NAME` → `Principal(NAME)`.
pub fn principal_from_header(mut request: http::Request<Body>) -> http::Request<Body> {
    let user = request
        .headers()
        .get(USER_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(user) = user {
        request.extensions_mut().insert(Principal::new(user));
    }
    request
}

/// Sends `method` with JSON-RPC id `id`, the standard 2026-07-28 headers and
/// `_meta`, plus `extra` headers (e.g. the user).
pub async fn send(
    client: &McpClient,
    id: u64,
    method: &str,
    params: Value,
    declare_tasks: bool,
    extra: &[(&str, &str)],
) -> Exchange {
    let body = client.build_request(id, method, params, declare_tasks);
    let name = body["params"]["taskId"]
        .as_str()
        .or_else(|| body["params"]["name"].as_str());
    let mut headers = McpClient::standard_headers(method, name);
    headers.extend(
        extra
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    client.exchange(id, &headers, body.to_string()).await
}

/// `tasks/get` as `user` (`None`: anonymous) with JSON-RPC id `id`.
pub async fn get_as(client: &McpClient, id: u64, task_id: &str, user: Option<&str>) -> Exchange {
    let extra: Vec<(&str, &str)> = user.map(|user| (USER_HEADER, user)).into_iter().collect();
    send(
        client,
        id,
        "tasks/get",
        json!({"taskId": task_id}),
        true,
        &extra,
    )
    .await
}

/// Text of the first content block of a tool result (`result` of a
/// `tools/call` response, or of a completed task).
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {result}"))
}

/// The `taskId` of a `CreateTaskResult` response; panics if it is not one.
pub fn task_id(response: &Value) -> String {
    assert_eq!(response["result"]["resultType"], "task", "{response}");
    response["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId in {response}"))
        .to_owned()
}

/// Asserts that `response` is a JSON-RPC error with `code`; returns the error.
pub fn error_of(response: &Value, code: i64) -> &Value {
    assert!(response.get("result").is_none(), "{response}");
    assert_eq!(response["error"]["code"], code, "{response}");
    &response["error"]
}

/// Parses an ISO 8601 / RFC 3339 timestamp; panics on anything else.
pub fn timestamp(value: &Value) -> SystemTime {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("timestamp is not a string: {value}"));
    humantime::parse_rfc3339(text).unwrap_or_else(|error| panic!("{text:?}: {error}"))
}

/// A `working` task without owner created straight in `store` (no inner
/// call behind it), living `ttl`.
pub async fn stored_task(store: &MemoryTaskStore, ttl: Duration) -> TaskId {
    let id = TaskId::generate().expect("a task id");
    store
        .create(NewTask {
            id,
            owner: None,
            created_at: Timestamp::now(),
            ttl: Some(ttl),
            poll_interval: None,
            status_message: None,
            quota: Quota::default(),
            tool: None,
            rerun: None,
        })
        .await
        .expect("create");
    id
}
