//! [`McpClient`]: raw HTTP for the stateless 2026-07-28 wire, exact headers
//! and `_meta`, responses as received.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use reqwest::{StatusCode, header::HeaderMap};
use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::exchange::{OpenCall, content_type, read_exchange, sse_events};
use super::{
    Exchange, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, PROTOCOL_VERSION,
    TASKS_EXTENSION,
};

/// Raw-HTTP MCP client for the stateless 2026-07-28 wire.
#[derive(Clone)]
pub struct McpClient {
    http: reqwest::Client,
    url: String,
    next_id: Arc<AtomicU64>,
    capabilities: Value,
    client_info: Value,
    timeout: Duration,
    bearer: Option<String>,
}

impl McpClient {
    /// A client for `url` declaring no optional capabilities.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.into(),
            next_id: Arc::new(AtomicU64::new(1)),
            capabilities: json!({}),
            client_info: json!({"name": "mcp-tasks-test-client", "version": "0.1.0"}),
            timeout: Duration::from_secs(20),
            bearer: None,
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request but
    /// [`Self::raw_post`], which sends exactly the headers it is given.
    pub fn with_bearer(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// Base `clientCapabilities` sent on every request (e.g.
    /// `{"elicitation":{}}`). The tasks extension is added per request.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Overall deadline of one exchange (default 20 s); exceeding it panics.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A fresh JSON-RPC id.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The `clientCapabilities` for one request.
    pub fn capabilities(&self, declare_tasks: bool) -> Value {
        let mut capabilities = self.capabilities.clone();
        if declare_tasks {
            capabilities["extensions"][TASKS_EXTENSION] = json!({});
        }
        capabilities
    }

    /// The required 2026-07-28 `_meta` of one request.
    pub fn meta(&self, declare_tasks: bool) -> Value {
        json!({
            META_PROTOCOL_VERSION: PROTOCOL_VERSION,
            META_CLIENT_INFO: self.client_info,
            META_CLIENT_CAPABILITIES: self.capabilities(declare_tasks),
        })
    }

    /// The headers a 2026-07-28 client sends for `method` (`name` becomes
    /// `Mcp-Name`). Useful as a starting point for bad-header tests.
    pub fn standard_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            (
                "MCP-Protocol-Version".to_owned(),
                PROTOCOL_VERSION.to_owned(),
            ),
            ("Mcp-Method".to_owned(), method.to_owned()),
        ];
        if let Some(name) = name {
            headers.push(("Mcp-Name".to_owned(), name.to_owned()));
        }
        headers
    }

    /// Builds a JSON-RPC request: `params` plus the standard `_meta` (keys
    /// already in `params._meta`, e.g. `progressToken`, are kept and win).
    pub fn build_request(
        &self,
        id: u64,
        method: &str,
        params: Value,
        declare_tasks: bool,
    ) -> Value {
        let mut params = match params {
            Value::Object(params) => params,
            Value::Null => JsonObject::new(),
            other => panic!("params must be an object, got {other}"),
        };
        let mut meta = self.meta(declare_tasks);
        if let Some(Value::Object(extra)) = params.remove("_meta") {
            for (key, value) in extra {
                meta[key] = value;
            }
        }
        params.insert("_meta".to_owned(), meta);
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Sends one request with the standard headers and reads the response
    /// (JSON, or SSE up to the response carrying this id).
    pub async fn request(&self, method: &str, params: Value, declare_tasks: bool) -> Exchange {
        let id = self.next_id();
        let body = self.build_request(id, method, params, declare_tasks);
        let headers = Self::standard_headers(method, mcp_name(&body).as_deref());
        self.exchange(id, &headers, body.to_string()).await
    }

    /// Sends `body` with `headers` and reads the response like [`Self::request`].
    pub async fn exchange(&self, id: u64, headers: &[(String, String)], body: String) -> Exchange {
        let read = async {
            let response = self.post(headers, body).await;
            read_exchange(id, response).await
        };
        match tokio::time::timeout(self.timeout, read).await {
            Ok(exchange) => exchange,
            Err(_) => panic!(
                "request {id} to {} timed out after {:?}",
                self.url, self.timeout
            ),
        }
    }

    async fn post(&self, headers: &[(String, String)], body: String) -> reqwest::Response {
        let mut request = self.http.post(&self.url).body(body);
        if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request.send().await.expect("POST to the MCP endpoint")
    }

    /// `server/discover`; returns the JSON-RPC response object.
    pub async fn discover(&self) -> Value {
        self.request("server/discover", json!({}), false)
            .await
            .into_response()
    }

    /// `tools/call`; returns the whole JSON-RPC response object (`result` or `error`).
    pub async fn call_tool(&self, name: &str, arguments: Value, declare_tasks: bool) -> Value {
        self.call_tool_with(name, arguments, json!({}), declare_tasks)
            .await
            .into_response()
    }

    /// `tools/call` with extra params merged in (e.g. `inputResponses`,
    /// `requestState`, `{"_meta": {"progressToken": "p1"}}`); returns the exchange.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        extra: Value,
        declare_tasks: bool,
    ) -> Exchange {
        self.request(
            "tools/call",
            tool_params(name, arguments, extra),
            declare_tasks,
        )
        .await
    }

    /// Starts a `tools/call` and returns once the response head arrived.
    ///
    /// rmcp sends the head of a 2026-07-28 response only with the handler's
    /// first message, so pass a `progress_token` to get it before the result.
    pub async fn open_call(
        &self,
        name: &str,
        arguments: Value,
        progress_token: Option<&str>,
        declare_tasks: bool,
    ) -> OpenCall {
        let extra = match progress_token {
            Some(token) => json!({"_meta": {"progressToken": token}}),
            None => json!({}),
        };
        let id = self.next_id();
        let body = self.build_request(
            id,
            "tools/call",
            tool_params(name, arguments, extra),
            declare_tasks,
        );
        let headers = Self::standard_headers("tools/call", Some(name));
        self.open_post(id, &headers, body.to_string()).await
    }

    /// POSTs `body` with `headers` and returns once the response head arrived;
    /// `id` is the JSON-RPC id [`OpenCall::finish`] waits for.
    pub async fn open_post(&self, id: u64, headers: &[(String, String)], body: String) -> OpenCall {
        let response = self.post(headers, body).await;
        let status = response.status();
        let headers = response.headers().clone();
        if content_type(&headers).starts_with("text/event-stream") {
            OpenCall {
                id,
                status,
                headers,
                events: Some(Box::pin(sse_events(response, None))),
                json: None,
            }
        } else {
            let text = response.text().await.unwrap_or_default();
            OpenCall {
                id,
                status,
                headers,
                events: None,
                json: serde_json::from_str(&text).ok(),
            }
        }
    }

    /// A declaring `tools/call` that must become a task; its task id.
    pub async fn start_task(&self, name: &str, arguments: Value) -> String {
        let created = self.call_tool(name, arguments, true).await;
        match created["result"]["taskId"].as_str() {
            Some(task) if created["result"]["resultType"] == "task" => task.to_owned(),
            _ => panic!("{name} did not become a task: {created}"),
        }
    }

    /// `tasks/get` (declaring the tasks extension); the JSON-RPC response object.
    pub async fn tasks_get(&self, task_id: &str) -> Value {
        self.request("tasks/get", json!({"taskId": task_id}), true)
            .await
            .into_response()
    }

    /// `tasks/update` with `input_responses` (declaring the extension).
    pub async fn tasks_update(&self, task_id: &str, input_responses: Value) -> Value {
        self.request(
            "tasks/update",
            json!({"taskId": task_id, "inputResponses": input_responses}),
            true,
        )
        .await
        .into_response()
    }

    /// `tasks/cancel` (declaring the extension); the JSON-RPC response object.
    pub async fn tasks_cancel(&self, task_id: &str) -> Value {
        self.request("tasks/cancel", json!({"taskId": task_id}), true)
            .await
            .into_response()
    }

    /// Polls `tasks/get` every 100 ms until `result.status` is one of
    /// `statuses`; returns that response, panics after `timeout`.
    pub async fn wait_task_status(
        &self,
        task_id: &str,
        statuses: &[&str],
        timeout: Duration,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let response = self.tasks_get(task_id).await;
            let status = response["result"]["status"].as_str().unwrap_or_default();
            if statuses.contains(&status) {
                return response;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("task {task_id} not in {statuses:?} after {timeout:?}: {response}");
            }
            // The poll interval of a bounded wait for a status.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Legacy handshake (`initialize` + `notifications/initialized`) against a
    /// server in rmcp session mode; returns the `Mcp-Session-Id`.
    pub async fn legacy_initialize(&self, protocol_version: &str, capabilities: Value) -> String {
        let id = self.next_id();
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol_version,
                "capabilities": capabilities,
                "clientInfo": self.client_info,
            },
        });
        let headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        let exchange = self.exchange(id, &headers, body.to_string()).await;
        let session = exchange
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_else(|| panic!("initialize gave no Mcp-Session-Id: {}", exchange.body))
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let headers = Self::legacy_headers(&session, protocol_version);
        let (status, _, text) = self.post_text(&headers, initialized.to_string()).await;
        assert_eq!(
            status,
            StatusCode::ACCEPTED,
            "notifications/initialized: {text}"
        );
        session
    }

    /// Headers of a legacy request inside session `session`.
    pub fn legacy_headers(session: &str, protocol_version: &str) -> Vec<(String, String)> {
        vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("Mcp-Session-Id".to_owned(), session.to_owned()),
            (
                "MCP-Protocol-Version".to_owned(),
                protocol_version.to_owned(),
            ),
        ]
    }

    /// One legacy request inside `session` (no `_meta`, no `Mcp-Method`).
    pub async fn legacy_request(
        &self,
        session: &str,
        protocol_version: &str,
        method: &str,
        params: Value,
    ) -> Exchange {
        let id = self.next_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers = Self::legacy_headers(session, protocol_version);
        self.exchange(id, &headers, body.to_string()).await
    }

    async fn post_text(
        &self,
        headers: &[(String, String)],
        body: String,
    ) -> (StatusCode, HeaderMap, String) {
        let response = self.post(headers, body).await;
        let status = response.status();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap_or_default())
    }

    /// POSTs `body` with exactly `headers` (reqwest still adds `Host`,
    /// `Content-Length` and, when no `Accept` is given, `Accept: */*`).
    /// Returns status, headers and the whole body text.
    pub async fn raw_post(
        &self,
        headers: &[(&str, &str)],
        body: impl Into<String>,
    ) -> (StatusCode, HeaderMap, String) {
        let mut request = self.http.post(&self.url).body(body.into());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let read = async {
            let response = request.send().await.expect("POST to the MCP endpoint");
            let status = response.status();
            let headers = response.headers().clone();
            let text = response.text().await.unwrap_or_default();
            (status, headers, text)
        };
        tokio::time::timeout(self.timeout, read)
            .await
            .expect("raw POST timed out")
    }
}

fn tool_params(name: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            params[key] = value;
        }
    }
    params
}

/// The `Mcp-Name` value a request needs, if any.
fn mcp_name(request: &Value) -> Option<String> {
    let params = &request["params"];
    let field = match request["method"].as_str()? {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params[field].as_str().map(str::to_owned)
}
