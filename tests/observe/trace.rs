//! A parked call, resumed once and completed, is one trace: the
//! `tools/call` request span, the task span as its child, the `tasks/update`
//! that resumed it linked to the task span, the re-issued inner call under
//! the task span, and every lifecycle event inside the task span.
//!
//! The subscriber is set for this thread only; the test runs on a
//! current-thread runtime, so the layer's background tasks run here too.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::ToolPolicy;
use serde_json::json;
use support::client::McpClient;
use support::layered::Layered;
use support::wait::BOUND;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as it was opened, numbered in order (registry ids are reused).
#[derive(Clone, Debug)]
struct SpanSeen {
    name: &'static str,
    parent: Option<usize>,
    fields: HashMap<String, String>,
    follows: Vec<usize>,
}

/// A lifecycle event and the span it happened in.
#[derive(Clone, Debug)]
struct EventSeen {
    message: String,
    span: Option<usize>,
}

#[derive(Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    /// Live registry id → number.
    live: HashMap<u64, usize>,
    events: Vec<EventSeen>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .and_then(|parent| seen.live.get(&parent.id().into_u64()).copied());
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        let number = seen.spans.len();
        seen.spans.push(SpanSeen {
            name: attrs.metadata().name(),
            parent,
            fields,
            follows: Vec::new(),
        });
        seen.live.insert(id.into_u64(), number);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        if let Some(&number) = seen.live.get(&id.into_u64()) {
            values.record(&mut Fields(&mut seen.spans[number].fields));
        }
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        let (Some(&span), Some(&follows)) = (
            seen.live.get(&span.into_u64()),
            seen.live.get(&follows.into_u64()),
        ) else {
            return;
        };
        seen.spans[span].follows.push(follows);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != "mcp_tasks::lifecycle" {
            return;
        }
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        let mut seen = self.0.lock().unwrap();
        let span = ctx
            .event_span(event)
            .and_then(|span| seen.live.get(&span.id().into_u64()).copied());
        seen.events.push(EventSeen {
            message: fields.remove("message").unwrap_or_default(),
            span,
        });
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.0.lock().unwrap().live.remove(&id.into_u64());
    }
}

impl Seen {
    /// The spans named `name` whose `field` is `value`.
    fn find(&self, name: &str, field: &str, value: &str) -> Vec<usize> {
        (0..self.spans.len())
            .filter(|&n| self.spans[n].name == name)
            .filter(|&n| self.spans[n].fields.get(field).map(String::as_str) == Some(value))
            .collect()
    }

    /// Whether `span` is `ancestor` or below it.
    fn under(&self, mut span: usize, ancestor: usize) -> bool {
        loop {
            if span == ancestor {
                return true;
            }
            match self.spans[span].parent {
                Some(parent) => span = parent,
                None => return false,
            }
        }
    }
}

#[tokio::test]
async fn a_parked_call_resumed_once_and_completed_is_one_trace() {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let layered =
        Layered::start(|layer| layer.tool_policy("confirm_delete", ToolPolicy::Always)).await;
    let client = McpClient::new(&layered.served.url);
    let task = client
        .start_task("confirm_delete", json!({"filename": "trace.txt"}))
        .await;
    client
        .wait_task_status(&task, &["input_required"], BOUND)
        .await;
    let answer = json!({"1.confirm": {"action": "accept", "content": {"confirm": true}}});
    let ack = client.tasks_update(&task, answer).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    client.wait_task_status(&task, &["completed"], BOUND).await;

    let seen = recorder.0.lock().unwrap();
    let calls = seen.find("mcp.request", "mcp.method.name", "tools/call");
    assert_eq!(calls.len(), 1, "{:?}", seen.spans);
    let call = calls[0];
    assert_eq!(
        seen.spans[call].fields["gen_ai.tool.name"],
        "confirm_delete"
    );
    assert_eq!(seen.spans[call].fields["mcp.task.id"], task);

    let tasks = seen.find("mcp.task", "mcp.task.id", &task);
    assert_eq!(tasks.len(), 1, "one task span across the input round");
    let task_span = tasks[0];
    assert_eq!(
        seen.spans[task_span].parent,
        Some(call),
        "the task span is the call's child"
    );

    let updates = seen.find("mcp.request", "mcp.method.name", "tasks/update");
    assert_eq!(updates.len(), 1);
    assert_eq!(
        seen.spans[task_span].follows,
        vec![updates[0]],
        "the resume is linked to the tasks/update"
    );

    let inner = seen.find("mcp.inner_call", "mcp.task.id", &task);
    assert_eq!(inner.len(), 1, "one re-issued call");
    assert!(
        seen.under(inner[0], task_span),
        "the re-issue runs under the task span"
    );

    let lifecycle: Vec<&str> = seen.events.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        lifecycle,
        [
            "task parked",
            "task input requested",
            "task resumed",
            "task completed"
        ]
    );
    for event in &seen.events {
        let span = event
            .span
            .unwrap_or_else(|| panic!("{event:?} outside any span"));
        assert!(
            seen.under(span, task_span),
            "{event:?} outside the task span"
        );
    }
}

#[tokio::test]
async fn a_request_span_carries_the_json_rpc_error_code_the_layer_answered() {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let layered = Layered::start(|layer| layer.threshold(Duration::from_millis(100))).await;
    let client = McpClient::new(&layered.served.url);
    let unknown = mcp_tasks::TaskId::generate().unwrap().to_string();
    let answer = client.tasks_get(&unknown).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let task = client
        .start_task("slow_compute", json!({"seconds": 0.3}))
        .await;
    client.wait_task_status(&task, &["completed"], BOUND).await;

    let seen = recorder.0.lock().unwrap();
    let missed = seen.find("mcp.request", "mcp.task.id", &unknown);
    assert_eq!(missed.len(), 1, "{:?}", seen.spans);
    assert_eq!(seen.spans[missed[0]].fields["error.type"], "-32602");
    let found = seen.find("mcp.request", "mcp.task.id", &task);
    assert!(!found.is_empty());
    for span in found {
        assert!(
            !seen.spans[span].fields.contains_key("error.type"),
            "{:?}",
            seen.spans[span]
        );
    }
}

/// What the inner service does when the layer calls it (a tracing layer of
/// its own opens its span there; so does a resolver's log line) belongs to
/// the `tools/call` request: the layer calls it inside the request's span.
#[tokio::test]
async fn the_inner_service_is_called_inside_the_request_span() {
    use http_body_util::{BodyExt, Full};
    use tower::{Layer as _, ServiceExt};

    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let inner = tower::service_fn(|_: http::Request<_>| {
        // Opened as a tracing layer in front of the server would open it.
        let span = tracing::info_span!("inner.call");
        async move {
            drop(span);
            let body =
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":"complete"}}"#;
            let response = http::Response::builder()
                .header("content-type", "application/json")
                .body(Full::new(bytes::Bytes::from(body)))
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let service = mcp_tasks::TasksLayer::new(mcp_tasks::MemoryTaskStore::new()).layer(inner);
    let client = McpClient::new("http://127.0.0.1:1");
    let body = client.build_request(7, "tools/call", json!({"name": "greet"}), true);
    let mut request = http::Request::post("/mcp");
    for (name, value) in McpClient::standard_headers("tools/call", Some("greet")) {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let answer = response.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&answer).contains(r#""result""#));

    let seen = recorder.0.lock().unwrap();
    let calls = seen.find("mcp.request", "mcp.method.name", "tools/call");
    assert_eq!(calls.len(), 1, "{:?}", seen.spans);
    let called = seen
        .spans
        .iter()
        .position(|span| span.name == "inner.call")
        .expect("the inner service was called");
    assert!(seen.under(called, calls[0]), "{:?}", seen.spans);
}
