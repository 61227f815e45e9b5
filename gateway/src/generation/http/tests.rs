//! The bridge against a fake upstream: a lost session opened again.

use std::sync::Mutex;

use http_body_util::Full;

use super::*;

/// An older upstream that forgets its sessions when `restarted`.
#[derive(Default)]
struct Fake {
    opened: usize,
    restarted: bool,
    ids: Vec<String>,
}

fn upstream(
    fake: Arc<Mutex<Fake>>,
) -> impl Service<
    Request<BoxBody>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ Sync
+ 'static {
    tower::service_fn(move |request: Request<BoxBody>| {
        let fake = fake.clone();
        async move {
            let session = request.headers().get("mcp-session-id").cloned();
            let length = request.headers().get(CONTENT_LENGTH).cloned();
            let body = request.into_body().collect().await.unwrap().to_bytes();
            if let Some(length) = length {
                assert_eq!(length.to_str().unwrap(), body.len().to_string());
            }
            let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let mut fake = fake.lock().unwrap();
            let mut response = Response::new(Full::new(Bytes::new()));
            match message["method"].as_str() {
                Some("initialize") => {
                    fake.opened += 1;
                    fake.restarted = false;
                    let result = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}"#;
                    *response.body_mut() = Full::new(Bytes::from_static(result.as_bytes()));
                    let id = HeaderValue::from_str(&format!("s-{}", fake.opened)).unwrap();
                    response.headers_mut().insert("mcp-session-id", id);
                }
                Some("notifications/initialized") => *response.status_mut() = StatusCode::ACCEPTED,
                _ if fake.restarted || session.is_none() => {
                    *response.status_mut() = StatusCode::NOT_FOUND
                }
                _ => {
                    fake.ids.push(message["id"].to_string());
                    let answer = json_answer(&message["id"], r#"{"tools":[]}"#);
                    *response.body_mut() = Full::new(answer);
                }
            }
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Ok::<_, Infallible>(response)
        }
    })
}

fn json_answer(id: &serde_json::Value, result: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    ))
}

fn list(id: &str) -> Request<Full<Bytes>> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    Request::builder()
        .method(Method::POST)
        .header("mcp-protocol-version", MODERN_VERSION)
        .header("mcp-method", "tools/list")
        .header(CONTENT_LENGTH, body.len())
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

async fn answer(bridge: &mut GenerationBridge, request: Request<Full<Bytes>>) -> serde_json::Value {
    let Ok(response) = bridge.call(request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn a_session_the_upstream_lost_is_opened_again_and_the_request_sent_once_more() {
    let fake = Arc::new(Mutex::new(Fake::default()));
    let mut bridge = GenerationBridge::new(upstream(fake.clone()), UpstreamGeneration::Legacy);
    let first = answer(&mut bridge, list(r#""a""#)).await;
    assert_eq!(first["id"], "a", "{first}");
    assert_eq!(first["result"]["cacheScope"], "private", "{first}");
    fake.lock().unwrap().restarted = true;
    let second = answer(&mut bridge, list(r#""a""#)).await;
    assert_eq!(second["id"], "a", "the client's id again: {second}");
    assert_eq!(second["result"]["resultType"], "complete", "{second}");
    let fake = fake.lock().unwrap();
    assert_eq!(fake.opened, 2, "one session, then a second after the loss");
    assert_eq!(
        fake.ids,
        ["1", "2"],
        "the upstream saw the bridge's own ids"
    );
}

#[test]
fn an_operator_names_a_generation_by_its_version() {
    assert_eq!("auto".parse(), Ok(UpstreamGeneration::Auto));
    assert_eq!(MODERN_VERSION.parse(), Ok(UpstreamGeneration::Modern));
    assert_eq!("2025-06-18".parse(), Ok(UpstreamGeneration::Legacy));
    assert!("2027-01-01".parse::<UpstreamGeneration>().is_err());
}
