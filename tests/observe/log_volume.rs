//! A refusal at a limit is one INFO line, not two: a flood of refused
//! calls must not flood the log twice over (the lifecycle event names the
//! reason; the race says the same only at DEBUG).

use crate::support;

use std::sync::{Arc, Mutex};

use mcp_tasks::ToolPolicy;
use serde_json::json;
use support::layered::Layered;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// The messages of the crate's events at INFO or above.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() > Level::INFO || !meta.target().starts_with("mcp_tasks") {
            return;
        }
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        self.0.lock().unwrap().push(message);
    }
}

#[tokio::test]
async fn a_call_refused_at_the_per_principal_quota_logs_one_info_line() {
    let lines = Lines::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
    let layered = Layered::start(|layer| {
        layer
            .max_tasks_per_principal(Some(1))
            .tool_policy("slow_compute", ToolPolicy::Always)
    })
    .await;
    let client = layered.client();
    let first = client
        .call_tool("slow_compute", json!({"seconds": 0.3}), true)
        .await;
    assert_eq!(first["result"]["resultType"], "task", "{first}");
    lines.0.lock().unwrap().clear();

    let refused = client
        .call_tool("slow_compute", json!({"seconds": 0.1}), true)
        .await;
    assert_eq!(
        refused["result"]["resultType"], "complete",
        "stays synchronous: {refused}"
    );
    let said = lines.0.lock().unwrap().clone();
    let about: Vec<&String> = said
        .iter()
        .filter(|line| line.contains("limit") || line.contains("parked"))
        .collect();
    assert_eq!(about.len(), 1, "one line for one refusal: {said:?}");
}
