//! A raw 2025-11-25 client session against a layered fixture: the exact
//! messages of the legacy wire, with an optional test user.
#![allow(dead_code)]

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::client::{Exchange, McpClient, OpenCall};
use super::layered::{Layered, USER_HEADER};
use super::wait::{BOUND, wait_until};

/// How long a test waits for a message on a `tasks/result` stream.
pub const STREAM_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads `stream` to the outcome (panics after [`STREAM_WAIT`]); the outcome.
pub async fn outcome(stream: OpenCall) -> Value {
    let messages = tokio::time::timeout(STREAM_WAIT, stream.finish())
        .await
        .expect("the tasks/result stream ends with the outcome");
    messages.last().expect("the outcome").clone()
}

/// The protocol version of the legacy sessions.
pub const LEGACY: &str = "2025-11-25";

/// One 2025-11-25 session, as `user` (`None`: anonymous).
pub struct Session {
    /// The raw client.
    pub client: McpClient,
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The `initialize` result.
    pub initialized: Value,
    user: Option<String>,
}

impl Session {
    /// `initialize` (2025-11-25, elicitation declared) and
    /// `notifications/initialized`.
    pub async fn open(layered: &Layered, user: Option<&str>) -> Self {
        Self::open_with(layered.client(), user, LEGACY).await
    }

    /// Like [`Self::open`] with another client and protocol version.
    pub async fn open_with(client: McpClient, user: Option<&str>, version: &str) -> Self {
        let id = client.next_id();
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "legacy-test", "version": "1"},
            },
        });
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        if let Some(user) = user {
            headers.push((USER_HEADER.to_owned(), user.to_owned()));
        }
        let exchange = client.exchange(id, &headers, body.to_string()).await;
        let session_id = exchange
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_else(|| panic!("no Mcp-Session-Id: {}", exchange.body))
            .to_owned();
        let initialized = exchange.into_response()["result"].clone();
        let session = Self {
            client,
            id: session_id,
            initialized,
            user: user.map(str::to_owned),
        };
        let (status, _) = session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        session
    }

    /// The headers of every request in the session.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = McpClient::legacy_headers(&self.id, LEGACY);
        if let Some(user) = &self.user {
            headers.push((USER_HEADER.to_owned(), user.clone()));
        }
        headers
    }

    /// A request; the whole exchange.
    pub async fn exchange(&self, method: &str, params: Value) -> Exchange {
        let id = self.client.next_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.client
            .exchange(id, &self.headers(), body.to_string())
            .await
    }

    /// A request; the JSON-RPC response.
    pub async fn request(&self, method: &str, params: Value) -> Value {
        self.exchange(method, params).await.into_response()
    }

    /// A request whose response is read message by message.
    pub async fn open_request(&self, method: &str, params: Value) -> OpenCall {
        let id = self.client.next_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.client
            .open_post(id, &self.headers(), body.to_string())
            .await
    }

    /// Opens `tasks/result` for `task` and reads the first message the layer
    /// relays on it (panics after 10 s).
    pub async fn first_relayed(&self, task: &str) -> (OpenCall, Value) {
        let mut stream = self
            .open_request("tasks/result", json!({"taskId": task}))
            .await;
        let asked = tokio::time::timeout(STREAM_WAIT, stream.next_message())
            .await
            .expect("a message within 10 s")
            .expect("the relayed request");
        (stream, asked)
    }

    /// Answers the relayed request `asked` with `result`; status and body.
    pub async fn answer(&self, asked: &Value, result: Value) -> (StatusCode, String) {
        self.post(json!({"jsonrpc": "2.0", "id": asked["id"], "result": result}))
            .await
    }

    /// POSTs any message (a notification, a response); status and body.
    pub async fn post(&self, message: Value) -> (StatusCode, String) {
        let headers = self.headers();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let (status, _, body) = self.client.raw_post(&headers, message.to_string()).await;
        (status, body)
    }

    /// A task-augmented `tools/call`; the response.
    pub async fn call_as_task(&self, name: &str, arguments: Value, task: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments, "task": task});
        self.request("tools/call", params).await
    }

    /// Starts a task; its id.
    pub async fn start_task(&self, name: &str, arguments: Value) -> String {
        let created = self.call_as_task(name, arguments, json!({})).await;
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("not a CreateTaskResult: {created}"))
            .to_owned()
    }

    /// `tasks/get` until the status is one of `statuses`.
    pub async fn wait_status(&self, task: &str, statuses: &[&str]) -> Value {
        let what = format!("{task} reaches {statuses:?}");
        wait_until(&what, BOUND, || async {
            let got = self.request("tasks/get", json!({"taskId": task})).await;
            if statuses.contains(&got["result"]["status"].as_str().unwrap_or_default()) {
                Ok(got)
            } else {
                Err(got)
            }
        })
        .await
    }
}
