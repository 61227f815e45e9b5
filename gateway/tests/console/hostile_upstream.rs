//! A plain axum router as an MCP upstream that takes any tool name: a
//! `tools/call` answers over SSE with one progress notification whose
//! message is the call's `message` argument, then, after `seconds`, a text
//! result. Other requests get an empty result; notifications `202`. It
//! lets the tests make tasks whose tool names and status messages are
//! whatever a hostile client or tool would send.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Response, StatusCode, header};
use serde_json::{Value, json};

use crate::support::fixture::Served;

/// Serves the upstream on a free loopback port.
pub async fn serve() -> Served {
    let router = Router::new().route("/mcp", axum::routing::post(answer));
    crate::support::fixture::serve(router).await
}

async fn answer(body: String) -> Response<Body> {
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Some(id) = request.get("id").cloned() else {
        return status(StatusCode::ACCEPTED);
    };
    if request["method"] != "tools/call" {
        let result = json!({"jsonrpc": "2.0", "id": id, "result": {}});
        return Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(result.to_string()))
            .expect("response");
    }
    let params = &request["params"];
    let seconds = params["arguments"]["seconds"].as_f64().unwrap_or(30.0);
    let message = params["arguments"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let token = params["_meta"]["progressToken"].clone();
    let progress = json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1, "message": message},
    });
    let result = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"content": [{"type": "text", "text": "done"}]},
    });
    let events = async_stream(progress, result, Duration::from_secs_f64(seconds));
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(events))
        .expect("response")
}

fn status(code: StatusCode) -> Response<Body> {
    Response::builder()
        .status(code)
        .body(Body::empty())
        .expect("response")
}

/// The progress event at once, the result after `wait`.
fn async_stream(
    progress: Value,
    result: Value,
    wait: Duration,
) -> impl futures_util::Stream<Item = Result<String, std::convert::Infallible>> {
    let first = format!("event: message\ndata: {progress}\n\n");
    let last = format!("event: message\ndata: {result}\n\n");
    futures_util::stream::unfold(0, move |step| {
        let (first, last) = (first.clone(), last.clone());
        async move {
            match step {
                0 => Some((Ok(first), 1)),
                1 => {
                    // The tool's run time: how long the task stays working.
                    tokio::time::sleep(wait).await;
                    Some((Ok(last), 2))
                }
                _ => None,
            }
        }
    })
}
