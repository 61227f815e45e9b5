//! `TasksLayer::make_span`: the layer asks the hook for the span of each
//! request it handles, with the request's head, and never for a request
//! that passes through untouched.
//!
//! | Request | The hook is asked |
//! |---------|-------------------|
//! | a declaring `tools/call` | once, `tools/call`, with its headers |
//! | `tasks/get` | once, `tasks/get` |
//! | a client without tasks' `tools/list` (passed through) | never |

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::json;
use support::layered::{Layered, send};

#[tokio::test]
async fn the_hook_makes_the_span_of_each_request_the_layer_handles() {
    let asked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let seen = asked.clone();
    let hook = move |method: &'static str, parts: &http::request::Parts| {
        let request = parts
            .headers
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        seen.lock().unwrap().push((method.to_owned(), request));
        tracing::info_span!("my.request", method)
    };
    let layered = Layered::start(|layer| layer.make_span(hook)).await;
    let client = layered.client();

    let params = json!({"name": "slow_compute", "arguments": {"seconds": 1.0}});
    let id = client.next_id();
    let created = send(
        &client,
        id,
        "tools/call",
        params,
        true,
        &[("x-request-id", "r-1")],
    )
    .await
    .into_response();
    let task = support::layered::task_id(&created);
    let id = client.next_id();
    let got = send(
        &client,
        id,
        "tasks/get",
        json!({"taskId": task}),
        true,
        &[("x-request-id", "r-2")],
    )
    .await;
    assert!(
        got.response().is_some_and(|r| r.get("result").is_some()),
        "{}",
        got.body
    );
    let listed = client.request("tools/list", json!({}), false).await;
    assert!(listed.response().is_some(), "{}", listed.body);

    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            ("tools/call".to_owned(), "r-1".to_owned()),
            ("tasks/get".to_owned(), "r-2".to_owned()),
        ]
    );
}
