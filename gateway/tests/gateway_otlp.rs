//! `mcp-tasks-gateway --otlp URL` (feature `otlp`): the spans of a parked
//! call, resumed once and completed, reach an OTLP/HTTP collector as one
//! trace. The collector here is a loopback HTTP server that decodes what it
//! receives (`ExportTraceServiceRequest`, protobuf).

#[path = "support/gateway.rs"]
mod gateway;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_fixture};

/// The string value of a span attribute.
fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes
        .iter()
        .find(|pair| pair.key == key)
        .and_then(|pair| pair.value.as_ref())
        .and_then(|value| match &value.value {
            Some(AnyValue::StringValue(text)) => Some(text.as_str()),
            _ => None,
        })
}

#[tokio::test]
async fn a_parked_and_resumed_call_reaches_the_collector_as_one_trace() {
    let received: Arc<Mutex<Vec<Span>>> = Arc::default();
    let store = received.clone();
    let collector = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
            let spans = request
                .resource_spans
                .into_iter()
                .flat_map(|resource| resource.scope_spans)
                .flat_map(|scope| scope.spans);
            store.lock().unwrap().extend(spans);
            std::future::ready("")
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}/v1/traces", listener.local_addr().expect("addr"));
    let server = tokio::spawn(async move { axum::serve(listener, collector).await });

    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let mut gateway = gateway::start(
        &upstream.url,
        &["--otlp", &endpoint, "--policy", "confirm_delete=always"],
    )
    .await;
    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task("confirm_delete", json!({"filename": "otlp.txt"}))
        .await;
    client
        .wait_task_status(&task, &["input_required"], Duration::from_secs(5))
        .await;
    let answer = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});
    client.tasks_update(&task, answer).await;
    client
        .wait_task_status(&task, &["completed"], Duration::from_secs(5))
        .await;
    // SIGTERM flushes the exporter's batch.
    gateway.terminate();
    let status = gateway.wait_exit(Duration::from_secs(20)).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        gateway.log()
    );

    let spans = received.lock().unwrap().clone();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let call = named("tools/call")
        .into_iter()
        .find(|s| {
            attribute(s, "mcp.method.name") == Some("tools/call")
                && attribute(s, "mcp.task.id") == Some(task.as_str())
        })
        .unwrap_or_else(|| {
            let seen: Vec<_> = spans
                .iter()
                .map(|s| {
                    (
                        &s.name,
                        s.attributes
                            .iter()
                            .map(|a| a.key.as_str())
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
            panic!("no tools/call request span among {seen:?}")
        });
    let task_span = named("mcp.task")
        .into_iter()
        .find(|s| attribute(s, "mcp.task.id") == Some(task.as_str()))
        .expect("the task span");
    assert_eq!(task_span.trace_id, call.trace_id, "one trace");
    assert_eq!(
        task_span.parent_span_id, call.span_id,
        "the task span is the call's child"
    );
    let inner = spans
        .iter()
        .find(|s| attribute(s, "mcp.task.id") == Some(task.as_str()) && s.kind == 3)
        .expect("the re-issued inner call (kind client)");
    assert_eq!(inner.trace_id, call.trace_id);
    assert_eq!(inner.parent_span_id, task_span.span_id);
    let update = named("tasks/update")
        .into_iter()
        .next()
        .expect("the tasks/update span");
    assert!(
        task_span
            .links
            .iter()
            .any(|link| link.span_id == update.span_id),
        "the task span links the tasks/update that resumed it"
    );
    server.abort();
}
