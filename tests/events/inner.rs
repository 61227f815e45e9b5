//! An inner server with events of its own keeps them through the layer:
//! its `events/list` merged with the layer's type, its polls and streams
//! untouched. The inner server (`support::events_upstream`) is written
//! from the extension's text.

use mcp_tasks::{EventsConfig, TasksLayer};
use serde_json::json;
use tower::ServiceBuilder;

use super::NAME;
use super::support::client::McpClient;
use super::support::events_upstream;
use super::support::fixture::serve;
use super::support::listen::next;
use super::support::wait::BOUND;

#[tokio::test]
async fn an_inner_servers_own_events_pass_through_beside_the_layers() {
    let inner = events_upstream::service::<mcp_tasks::RequestBody<axum::body::Body>>();
    let layer = TasksLayer::new(mcp_tasks::MemoryTaskStore::new()).events(EventsConfig::new());
    let served = serve(ServiceBuilder::new().layer(layer).service(inner)).await;
    let client = McpClient::new(&served.url).with_timeout(BOUND);

    let listed = client
        .request("events/list", json!({}), false)
        .await
        .into_response();
    let names: Vec<&str> = listed["result"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["build.finished", NAME], "{listed}");

    let discovered = client.discover().await;
    let extension =
        &discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/events"];
    assert_eq!(
        *extension,
        json!({"listChanged": true}),
        "the inner server's own settings stay"
    );

    let polled = client
        .request(
            "events/poll",
            json!({"name": "build.finished", "arguments": {}, "cursor": null}),
            false,
        )
        .await
        .into_response();
    assert_eq!(polled["result"]["cursor"], "builds-8", "{polled}");
    assert_eq!(
        polled["result"]["events"][0]["data"],
        json!({"build": 7, "ok": true})
    );

    let id = client.next_id();
    let body = client.build_request(
        id,
        "events/stream",
        json!({"name": "build.finished", "arguments": {}, "cursor": null}),
        false,
    );
    let headers = McpClient::standard_headers("events/stream", Some("build.finished"));
    let mut stream = client.open_post(id, &headers, body.to_string()).await;
    assert_eq!(
        next(&mut stream).await["method"],
        "notifications/events/active"
    );
    let event = next(&mut stream).await;
    assert_eq!(event["params"]["eventId"], "build-7", "{event}");
    assert_eq!(next(&mut stream).await["id"], id);
}
