//! [`LegacyClient`]: the rmcp 2.2 client (protocol 2025-11-25, `initialize`
//! handshake, `Mcp-Session-Id` session), with every message recorded raw.
//!
//! rmcp 2.2 is the last rmcp speaking the 2025-11-25 session protocol with the
//! SEP-1686 tasks types (`tools/call` with `params.task`, `CreateTaskResult`,
//! `tasks/get|result|list|cancel`). It is a dev-dependency renamed
//! `rmcp_legacy`.
//!
//! What rmcp 2.2 does, and what this wrapper does about it:
//!
//! * Results are parsed into the untagged `ServerResult`, which tries
//!   `InitializeResult`, ..., `CreateTaskResult`, `GetTaskResult`,
//!   `CallToolResult`, ... `CustomResult` in order and drops unknown fields.
//!   The typed result is therefore not what the server sent. This client
//!   implements rmcp's `StreamableHttpClient` itself (reqwest 0.12 plus
//!   `sse-stream`, like rmcp's own reqwest 0.13 implementation) and taps every
//!   JSON-RPC message off the wire *before* rmcp parses it; [`LegacyClient::request`]
//!   returns that raw message, not rmcp's typed one.
//! * Requests are sent as `ClientRequest::CustomRequest`, so any method and any
//!   params go out unchanged, except that rmcp adds a fresh
//!   `_meta.progressToken` to every request (keys already in `params._meta`
//!   are kept).
//! * rmcp's client has no task logic: `Peer::call_tool` only returns
//!   `CallToolResult` (a `CreateTaskResult` answer ends in
//!   `ServiceError::UnexpectedResponse`), and there are no `get_task`-style
//!   helpers; it never polls `tasks/get` or sends `tasks/result` by itself.
//! * After `initialize` rmcp sends `MCP-Protocol-Version` (the negotiated
//!   version) and `Mcp-Session-Id` on every POST, GET and DELETE, opens the
//!   standalone GET SSE stream, and hands *every* message of every SSE stream
//!   (POST responses included) to the handler: a server→client request may
//!   arrive on the response stream of any request. Each POST stream is closed
//!   50 ms after its response arrived. Answers to server requests are POSTed.
//! * Closing the client ([`LegacyClient::close`]) sends `DELETE` with the
//!   session id before `close` returns (5 s timeout).
//! * By default rmcp 2.2 silently re-initializes on a `404` to a POST that
//!   carried a session id; this client turns that off so a lost session
//!   surfaces as a transport error.
//!
//! [`LegacyWire`] holds what was recorded (HTTP exchanges with their headers,
//! incoming messages, server→client requests) and outlives the client.

use std::{sync::Arc, time::Duration};

use http::{HeaderName, HeaderValue};
use rmcp_legacy::{
    ClientHandler, ErrorData, Peer, RoleClient, ServiceExt,
    model::{
        ClientCapabilities, ClientInfo, ClientNotification, ClientRequest, CustomNotification,
        CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, ElicitationAction,
        ErrorCode, Implementation, InitializeResult, ProtocolVersion,
    },
    service::{PeerRequestOptions, RequestContext, RunningService},
    transport::streamable_http_client::{
        StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

mod wire;
pub use wire::LegacyWire;
use wire::TapHttp;

/// Protocol version the legacy client speaks.
pub const LEGACY_PROTOCOL_VERSION: &str = "2025-11-25";

/// How the client answers a server's `elicitation/create`.
#[derive(Debug, Clone)]
pub enum ElicitReply {
    /// `{"action": "accept", "content": <content>}`.
    Accept(Value),
    /// `{"action": "decline"}`.
    Decline,
    /// `{"action": "cancel"}`.
    Cancel,
    /// A JSON-RPC error with this code and message.
    Error(i32, String),
}

impl Default for ElicitReply {
    /// Accept with `{"confirm": true}`.
    fn default() -> Self {
        Self::Accept(json!({"confirm": true}))
    }
}

impl ElicitReply {
    fn result(&self) -> Result<ElicitResult, ErrorData> {
        match self {
            Self::Accept(content) => {
                Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content.clone()))
            }
            Self::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Self::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Self::Error(code, message) => {
                Err(ErrorData::new(ErrorCode(*code), message.clone(), None))
            }
        }
    }
}

/// Default capabilities: form elicitation, plus the 2025-11-25 `tasks`
/// capability for task-augmented `elicitation/create` and `tasks/list|cancel`.
pub fn default_capabilities() -> Value {
    json!({
        "elicitation": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}}},
    })
}

/// The client handler: identifies the client and answers `elicitation/create`.
struct LegacyHandler {
    info: ClientInfo,
    reply: ElicitReply,
}

impl ClientHandler for LegacyHandler {
    fn get_info(&self) -> ClientInfo {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.reply.result()
    }

    /// A request rmcp 2.2 could not type (e.g. an `elicitation/create` whose
    /// schema it rejects) arrives here; elicitations still get the reply.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "elicitation/create" {
            let result = self.reply.result()?;
            let result = serde_json::to_value(result).expect("ElicitResult serializes");
            return Ok(CustomResult::new(result));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }
}

/// The rmcp 2.2 client on a 2025-11-25 session. See the module docs.
pub struct LegacyClient {
    service: RunningService<RoleClient, LegacyHandler>,
    wire: LegacyWire,
    initialize: Value,
    timeout: Duration,
}

impl LegacyClient {
    /// Connects with [`default_capabilities`], accepting every elicitation
    /// with `{"confirm": true}`.
    pub async fn connect(url: &str) -> Self {
        Self::connect_with(url, ElicitReply::default()).await
    }

    /// Connects with [`default_capabilities`], answering elicitations with `reply`.
    pub async fn connect_with(url: &str, reply: ElicitReply) -> Self {
        Self::connect_with_capabilities(url, default_capabilities(), reply).await
    }

    /// Runs the `initialize` handshake (protocol 2025-11-25, `capabilities`
    /// as the client capabilities) and `notifications/initialized`. Panics if
    /// the handshake fails; use [`Self::try_connect`] to see the error.
    pub async fn connect_with_capabilities(
        url: &str,
        capabilities: Value,
        reply: ElicitReply,
    ) -> Self {
        match Self::try_connect(url, capabilities, reply).await {
            Ok(client) => client,
            Err((error, wire)) => panic!(
                "legacy initialize against {url} failed: {error}; HTTP: {:#}",
                json!(wire.http())
            ),
        }
    }

    /// Like [`Self::connect_with_capabilities`], returning the error and the
    /// wire log instead of panicking.
    pub async fn try_connect(
        url: &str,
        capabilities: Value,
        reply: ElicitReply,
    ) -> Result<Self, (String, LegacyWire)> {
        Self::try_connect_with_headers(url, capabilities, reply, &[]).await
    }

    /// Connects with [`default_capabilities`] and `headers` on every request
    /// (e.g. the test user header of `layered`).
    pub async fn connect_with_headers(
        url: &str,
        reply: ElicitReply,
        headers: &[(&str, &str)],
    ) -> Self {
        match Self::try_connect_with_headers(url, default_capabilities(), reply, headers).await {
            Ok(client) => client,
            Err((error, _)) => panic!("legacy initialize against {url} failed: {error}"),
        }
    }

    /// Like [`Self::try_connect`], sending `headers` on every request.
    pub async fn try_connect_with_headers(
        url: &str,
        capabilities: Value,
        reply: ElicitReply,
        headers: &[(&str, &str)],
    ) -> Result<Self, (String, LegacyWire)> {
        let wire = LegacyWire::default();
        let capabilities: ClientCapabilities =
            serde_json::from_value(capabilities).expect("valid 2025-11-25 client capabilities");
        let info = ClientInfo::new(
            capabilities,
            Implementation::new("mcp-tasks-legacy-test-client", "0.1.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        config.reinit_on_expired_session = false;
        for (name, value) in headers {
            config.custom_headers.insert(
                HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        let http = TapHttp {
            http: reqwest::Client::new(),
            wire: wire.clone(),
        };
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let handler = LegacyHandler { info, reply };
        let service = match handler.serve(transport).await {
            Ok(service) => service,
            Err(error) => return Err((error.to_string(), wire)),
        };
        let initialize = wire
            .http()
            .iter()
            .find(|exchange| exchange["body"]["method"] == "initialize")
            .and_then(|exchange| wire.response(&exchange["body"]["id"]))
            .unwrap_or(Value::Null);
        Ok(Self {
            service,
            wire,
            initialize,
            timeout: Duration::from_secs(30),
        })
    }

    /// Deadline of one [`Self::request`] (default 30 s); exceeding it panics.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The rmcp 2.2 peer, for anything not wrapped here.
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The server's `InitializeResult` as rmcp typed it.
    pub fn peer_info(&self) -> Option<Arc<InitializeResult>> {
        self.peer().peer_info()
    }

    /// The raw `initialize` response message (`{"jsonrpc", "id", "result"}`).
    pub fn initialize_response(&self) -> &Value {
        &self.initialize
    }

    /// `result.capabilities` of the raw `initialize` response.
    pub fn server_capabilities(&self) -> &Value {
        &self.initialize["result"]["capabilities"]
    }

    /// The `Mcp-Session-Id` the server assigned in its `initialize` response.
    pub fn session_id(&self) -> Option<String> {
        self.wire
            .http()
            .iter()
            .find(|exchange| exchange["body"]["method"] == "initialize")
            .and_then(|exchange| exchange["responseHeaders"]["mcp-session-id"].as_str())
            .map(str::to_owned)
    }

    /// The wire log (clone it to keep it after [`Self::close`]).
    pub fn wire(&self) -> &LegacyWire {
        &self.wire
    }

    /// Every server→client request received so far, raw (see [`LegacyWire::received`]).
    pub fn received(&self) -> Vec<Value> {
        self.wire.received()
    }

    /// Sends a raw JSON-RPC request (any method, `params` as given plus
    /// rmcp's `_meta.progressToken`; `Value::Null` sends no params) and
    /// returns the whole response message exactly as the server sent it
    /// (`{"jsonrpc", "id", "result"}` or `{..., "error"}`). `Err` carries
    /// rmcp's description of a transport failure (no response arrived).
    pub async fn send(&self, method: &str, params: Value) -> Result<Value, String> {
        let params = match params {
            Value::Null => None,
            params => Some(params),
        };
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, params));
        let handle = self
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| format!("{method}: {error}"))?;
        let id = serde_json::to_value(&handle.id).expect("request id serializes");
        let exchange = async {
            tokio::select! {
                biased;
                raw = self.wire.wait_response(&id) => Ok(raw),
                typed = handle.await_response() => match self.wire.response(&id) {
                    Some(raw) => Ok(raw),
                    None => Err(format!("{method}: no response on the wire; rmcp: {typed:?}")),
                },
            }
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => panic!(
                "legacy {method} (id {id}) timed out after {:?}",
                self.timeout
            ),
        }
    }

    /// Sends a raw JSON-RPC request (see [`Self::send`]) and returns its raw
    /// `result`, or the JSON-RPC error as `(code, message, error object)`.
    /// Panics on a transport failure.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, (i32, String, Value)> {
        let message = self
            .send(method, params)
            .await
            .unwrap_or_else(|error| panic!("legacy request failed: {error}"));
        if let Some(error) = message.get("error") {
            let code = error["code"].as_i64().unwrap_or_default() as i32;
            let text = error["message"].as_str().unwrap_or_default().to_owned();
            return Err((code, text, error.clone()));
        }
        match message.get("result") {
            Some(result) => Ok(result.clone()),
            None => panic!("legacy {method}: response without result or error: {message}"),
        }
    }

    /// Sends a raw notification (e.g. `notifications/cancelled` with
    /// `{"requestId": 3}`). Panics if the transport fails.
    pub async fn notify(&self, method: &str, params: Value) {
        let params = match params {
            Value::Null => None,
            params => Some(params),
        };
        let notification =
            ClientNotification::CustomNotification(CustomNotification::new(method, params));
        self.peer()
            .send_notification(notification)
            .await
            .unwrap_or_else(|error| panic!("legacy notification {method} failed: {error}"));
    }

    /// Stops the client; rmcp sends `DELETE` with the session id before this
    /// returns. Returns the wire log.
    pub async fn close(self) -> LegacyWire {
        let wire = self.wire.clone();
        let _ = self.service.cancel().await;
        wire
    }
}
