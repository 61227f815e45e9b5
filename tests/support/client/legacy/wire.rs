//! [`LegacyWire`]: what the legacy client saw, recorded by [`TapHttp`], its
//! implementation of rmcp's `StreamableHttpClient` over reqwest 0.12.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use futures_util::{StreamExt, stream::BoxStream};
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp_legacy::{
    model::ServerJsonRpcMessage,
    transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    },
};
use serde_json::{Value, json};
use sse_stream::{Sse, SseStream};

/// What the client saw on the wire. Cheap to clone; outlives the client.
#[derive(Clone, Default)]
pub struct LegacyWire {
    inner: Arc<WireInner>,
}

#[derive(Default)]
struct WireInner {
    log: Mutex<WireLog>,
    arrived: tokio::sync::Notify,
}

#[derive(Default)]
struct WireLog {
    /// Responses and errors keyed by their id (as JSON text).
    responses: HashMap<String, Value>,
    /// Every incoming message: `{"http": <exchange index>, "message": ...}`.
    incoming: Vec<Value>,
    /// Incoming requests (server→client), raw.
    server_requests: Vec<Value>,
    /// Incoming notifications, raw.
    notifications: Vec<Value>,
    /// HTTP exchanges: `{"index", "method", "headers", "body", "status",
    /// "responseHeaders"}` (header names lowercase).
    http: Vec<Value>,
}

impl LegacyWire {
    fn log(&self) -> std::sync::MutexGuard<'_, WireLog> {
        self.inner.log.lock().expect("legacy wire lock")
    }

    /// Every server→client request received, as sent (`{"jsonrpc", "id",
    /// "method", "params"}`, `params._meta` included), in arrival order.
    pub fn received(&self) -> Vec<Value> {
        self.log().server_requests.clone()
    }

    /// Every notification received, as sent.
    pub fn notifications(&self) -> Vec<Value> {
        self.log().notifications.clone()
    }

    /// Every incoming message in arrival order, each as
    /// `{"http": <index of the HTTP exchange it came on>, "message": ...}`.
    pub fn incoming(&self) -> Vec<Value> {
        self.log().incoming.clone()
    }

    /// Every HTTP exchange, in the order the responses arrived.
    pub fn http(&self) -> Vec<Value> {
        self.log().http.clone()
    }

    /// The HTTP exchange in which the client POSTed its answer to the
    /// server→client request `request`, if it did.
    pub fn answer_to(&self, request: &Value) -> Option<Value> {
        self.http().into_iter().find(|exchange| {
            exchange["body"]["id"] == request["id"] && exchange["body"].get("method").is_none()
        })
    }

    /// The response (or error) message with this JSON-RPC id, if it arrived.
    pub fn response(&self, id: &Value) -> Option<Value> {
        self.log().responses.get(&id.to_string()).cloned()
    }

    pub(super) async fn wait_response(&self, id: &Value) -> Value {
        loop {
            let arrived = self.inner.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(message) = self.response(id) {
                return message;
            }
            arrived.await;
        }
    }

    fn record_http(&self, mut entry: Value) -> usize {
        let mut log = self.log();
        let index = log.http.len();
        entry["index"] = json!(index);
        log.http.push(entry);
        index
    }

    fn record_incoming(&self, http: usize, text: &str) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            self.log()
                .incoming
                .push(json!({"http": http, "unparsable": text}));
            return;
        };
        let messages = match message {
            Value::Array(batch) => batch,
            single => vec![single],
        };
        let mut log = self.log();
        for message in messages {
            log.incoming
                .push(json!({"http": http, "message": message.clone()}));
            let has_method = message.get("method").is_some();
            let id = message.get("id").filter(|id| !id.is_null());
            match (has_method, id) {
                (true, Some(_)) => log.server_requests.push(message),
                (true, None) => log.notifications.push(message),
                (false, Some(id)) => {
                    log.responses.insert(id.to_string(), message.clone());
                }
                (false, None) => {}
            }
        }
        drop(log);
        self.inner.arrived.notify_waiters();
    }

    /// Taps an SSE stream: every message event is recorded before rmcp sees it.
    fn tap(
        &self,
        http: usize,
        events: impl futures_util::Stream<Item = Result<Sse, SseError>> + Send + 'static,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let wire = self.clone();
        events
            .inspect(move |event| {
                if let Ok(Sse {
                    event: kind,
                    data: Some(data),
                    ..
                }) = event
                    && matches!(kind.as_deref(), None | Some("") | Some("message"))
                    && !data.trim().is_empty()
                {
                    wire.record_incoming(http, data);
                }
            })
            .boxed()
    }
}

fn headers_json(headers: &HeaderMap) -> Value {
    let mut map = serde_json::Map::new();
    for (name, value) in headers {
        map.insert(
            name.as_str().to_owned(),
            Value::String(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        );
    }
    Value::Object(map)
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn sse_body(
    response: reqwest::Response,
) -> impl futures_util::Stream<Item = Result<Sse, SseError>> {
    let chunks = futures_util::stream::unfold(response, |mut response| async move {
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok::<Bytes, reqwest::Error>(chunk), response)),
            Ok(None) => None,
            Err(error) => Some((Err(error), response)),
        }
    });
    SseStream::from_bytes_stream(chunks)
}

/// rmcp's `StreamableHttpClient` over reqwest 0.12, recording into a [`LegacyWire`].
#[derive(Clone)]
pub(super) struct TapHttp {
    pub(super) http: reqwest::Client,
    pub(super) wire: LegacyWire,
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl TapHttp {
    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        session_id: Option<&str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .request(method, uri)
            .header(http::header::ACCEPT, "application/json, text/event-stream");
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session_id) = session_id {
            request = request.header("mcp-session-id", session_id);
        }
        request
    }

    /// Sends `request` and records the exchange (without the response body).
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        body: Value,
    ) -> HttpResult<(reqwest::Response, usize)> {
        let request = request.build().map_err(StreamableHttpError::Client)?;
        let method = request.method().to_string();
        let headers = headers_json(request.headers());
        let response = self
            .http
            .execute(request)
            .await
            .map_err(StreamableHttpError::Client)?;
        let index = self.wire.record_http(json!({
            "method": method,
            "headers": headers,
            "body": body,
            "status": response.status().as_u16(),
            "responseHeaders": headers_json(response.headers()),
        }));
        Ok((response, index))
    }
}

impl StreamableHttpClient for TapHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: rmcp_legacy::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = serde_json::to_value(&message)?;
        let request = self
            .request(
                reqwest::Method::POST,
                &uri,
                session_id.as_deref(),
                auth_token,
                custom_headers,
            )
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let (response, index) = self.send(request, body).await?;
        let status = response.status();
        if matches!(
            status,
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let content_type = content_type(response.headers());
        if status.is_success() && content_type.starts_with("text/event-stream") {
            let events = self.wire.tap(index, sse_body(response));
            return Ok(StreamableHttpPostResponse::Sse(events, new_session));
        }
        let text = response.text().await.map_err(StreamableHttpError::Client)?;
        let is_json = content_type.starts_with("application/json");
        if is_json && !text.trim().is_empty() {
            self.wire.record_incoming(index, &text);
        }
        if !status.is_success() {
            // Like rmcp: a JSON-RPC error body is delivered, anything else fails.
            if is_json
                && let Ok(message @ ServerJsonRpcMessage::Error(_)) = serde_json::from_str(&text)
            {
                return Ok(StreamableHttpPostResponse::Json(message, new_session));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}: {text}").into(),
            ));
        }
        if text.trim().is_empty() {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !is_json {
            return Err(StreamableHttpError::UnexpectedContentType(Some(
                content_type,
            )));
        }
        match serde_json::from_str::<ServerJsonRpcMessage>(&text) {
            Ok(message) => Ok(StreamableHttpPostResponse::Json(message, new_session)),
            // rmcp treats an unparsable JSON body as accepted; the raw
            // message is on the wire log either way.
            Err(_) => Ok(StreamableHttpPostResponse::Accepted),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let request = self.request(
            reqwest::Method::DELETE,
            &uri,
            Some(&session_id),
            auth_token,
            custom_headers,
        );
        let (response, _) = self.send(request, Value::Null).await?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut request = self.request(
            reqwest::Method::GET,
            &uri,
            Some(&session_id),
            auth_token,
            custom_headers,
        );
        if let Some(last_event_id) = last_event_id {
            request = request.header("last-event-id", last_event_id);
        }
        let (response, index) = self.send(request, Value::Null).await?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        let content_type = content_type(response.headers());
        if !content_type.starts_with("text/event-stream")
            && !content_type.starts_with("application/json")
        {
            return Err(StreamableHttpError::UnexpectedContentType(Some(
                content_type,
            )));
        }
        Ok(self.wire.tap(index, sse_body(response)))
    }
}
