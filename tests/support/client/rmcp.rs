//! [`RmcpClient`]: the real rmcp 3.11 client, for interoperability tests.

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResponse, CancelTaskParams,
        ClientCapabilities, ClientConfig, ClientRequest, GetTaskParams, GetTaskResult,
        Implementation, InputResponses, JsonObject, ProtocolVersion, RequestMetaObject,
        UpdateTaskParams,
    },
    service::{PeerRequestOptions, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use super::TASKS_EXTENSION;

/// The rmcp 3.11 client over Streamable HTTP with the 2026-07-28 discover
/// lifecycle (no `initialize`, no session).
///
/// rmcp adds `_meta` (protocolVersion, clientInfo, clientCapabilities) and a
/// fresh `progressToken` to every request, sends `Mcp-Method`/`Mcp-Name`, and
/// cancels a dropped call by closing its response stream. It parses
/// `resultType: "task"` into `CallToolResponse::Task` and implements
/// `tasks/get|update|cancel` (`Peer::get_task`, `update_task`, `cancel_task`).
pub struct RmcpClient {
    service: RunningService<rmcp::RoleClient, ClientConfig>,
    capabilities: ClientCapabilities,
}

impl RmcpClient {
    /// Runs `server/discover` against `url`. With `declare_tasks` every
    /// request (discover included) declares the tasks extension.
    pub async fn connect(url: &str, declare_tasks: bool) -> Self {
        let mut builder = ClientCapabilities::builder();
        if declare_tasks {
            builder = builder.enable_tasks();
        }
        let capabilities = builder.build();
        let config = ClientConfig::new(
            capabilities.clone(),
            Implementation::new("mcp-tasks-rmcp-test-client", "0.1.0"),
        );
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
        );
        let service = config
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("rmcp client discover");
        Self {
            service,
            capabilities,
        }
    }

    /// The rmcp peer, for anything not wrapped here.
    pub fn peer(&self) -> &rmcp::Peer<rmcp::RoleClient> {
        self.service.peer()
    }

    /// One `tools/call` round, typed (`Complete`, `InputRequired` or `Task`).
    pub async fn call_tool_once(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResponse, ServiceError> {
        self.peer()
            .call_tool_once(call_params(name, arguments))
            .await
    }

    /// One `tools/call`, declaring the tasks extension on this request only
    /// when `declare_tasks`; returns `{"id", "result"}` or `{"id", "error"}`
    /// rebuilt from rmcp's typed result (re-serialized, so not byte-exact).
    pub async fn call_tool(&self, name: &str, arguments: Value, declare_tasks: bool) -> Value {
        let mut capabilities = self.capabilities.clone();
        if declare_tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION.to_owned(), JsonObject::new());
        } else if let Some(extensions) = capabilities.extensions.as_mut() {
            extensions.remove(TASKS_EXTENSION);
            if extensions.is_empty() {
                capabilities.extensions = None;
            }
        }
        let mut meta = RequestMetaObject::new();
        meta.set_client_capabilities(capabilities);
        let request =
            ClientRequest::CallToolRequest(CallToolRequest::new(call_params(name, arguments)));
        let handle = self
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options().with_meta(meta))
            .await
            .expect("send tools/call");
        let id = serde_json::to_value(&handle.id).unwrap_or(Value::Null);
        match handle.await_response().await {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(ServiceError::McpError(error)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": error})
            }
            Err(other) => panic!("tools/call {name} failed: {other}"),
        }
    }

    /// `tasks/get` through rmcp.
    pub async fn tasks_get(&self, task_id: &str) -> Result<GetTaskResult, ServiceError> {
        self.peer().get_task(GetTaskParams::new(task_id)).await
    }

    /// `tasks/update` through rmcp.
    pub async fn tasks_update(
        &self,
        task_id: &str,
        input_responses: InputResponses,
    ) -> Result<(), ServiceError> {
        self.peer()
            .update_task(UpdateTaskParams::new(task_id, input_responses))
            .await
    }

    /// `tasks/cancel` through rmcp.
    pub async fn tasks_cancel(&self, task_id: &str) -> Result<(), ServiceError> {
        self.peer()
            .cancel_task(CancelTaskParams::new(task_id))
            .await
    }

    /// Stops the client.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

fn call_params(name: &str, arguments: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_owned());
    match arguments {
        Value::Object(arguments) => params.with_arguments(arguments),
        _ => params,
    }
}
