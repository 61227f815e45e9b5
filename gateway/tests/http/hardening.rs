//! What one client may do to the gateway and its other clients: items of
//! the adversarial run of issue #35, each with the answer it now gets.

use crate::{gateway, support};

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_fixture};
use support::wait::BOUND;

/// A `tools/list` from `from` (a loopback address); status, `Retry-After`
/// and body.
async fn tools_list_from(url: &str, from: Ipv4Addr) -> (u16, Option<String>, Value) {
    let client = reqwest::Client::builder()
        .local_address(IpAddr::V4(from))
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a client");
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, retry, body)
}

#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let options = [
        "--max-connections",
        "8",
        "--max-connections-per-client",
        "2",
    ];
    let gateway = gateway::start(&upstream.url, &options).await;

    // Two long synchronous calls (a client without tasks) hold two
    // connections of 127.0.0.1.
    let held: Vec<_> = (0..2)
        .map(|_| {
            let client = McpClient::new(&gateway.url);
            tokio::spawn(async move {
                client
                    .call_tool("slow_compute", json!({"seconds": 3}), false)
                    .await
            })
        })
        .collect();
    let both = probe
        .wait_until(BOUND, |probe| probe.started("slow_compute") == 2)
        .await;
    assert!(both, "both calls reached the upstream");

    // A third connection of that address is refused at once, clearly.
    let asked = Instant::now();
    let (status, retry, body) = tools_list_from(&gateway.url, Ipv4Addr::LOCALHOST).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );

    // Another client's address is served meanwhile.
    let other = Ipv4Addr::new(127, 0, 0, 2);
    let (status, _, body) = tools_list_from(&gateway.url, other).await;
    assert_eq!(status, 200, "{body}");

    // Once the held calls are answered, the first address is served again.
    for call in held {
        let answer = call.await.expect("a held call");
        assert!(answer["result"]["content"].is_array(), "{answer}");
    }
    let (status, _, body) = tools_list_from(&gateway.url, Ipv4Addr::LOCALHOST).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_parked_call_whose_upstream_never_answers_fails_with_the_runtime_limit() {
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let options = ["--max-runtime", "2s", "--upstream-request-timeout", "1s"];
    let gateway = gateway::start(&url, &options).await;
    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task("slow_compute", json!({"seconds": 60}))
        .await;
    let ended = client
        .wait_task_status(&task, &["failed"], Duration::from_secs(20))
        .await;
    let message = ended["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("runtime limit"), "{ended}");
    assert!(!message.contains("504"), "{ended}");
    held.abort();
}

#[tokio::test]
async fn the_gateways_own_error_answer_to_a_call_carries_the_calls_id() {
    // A port nobody listens on any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/mcp", closed.local_addr().expect("its address"));
    drop(closed);
    let gateway = gateway::start(&url, &["--threshold", "5s"]).await;
    let client = McpClient::new(&gateway.url);
    for declaring in [true, false] {
        let answer = client
            .call_tool("slow_compute", json!({"seconds": 1}), declaring)
            .await;
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        if declaring {
            // The layer read the call: its id goes back.
            assert!(answer["id"].is_u64(), "{answer}");
        }
    }
}

/// The status line of what the gateway at `url` answers to `head` (a
/// request head with no body), sent as raw bytes.
async fn raw_status(url: &str, head: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("an address");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("the head");
    let mut answer = vec![0; 1024];
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    answer.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_request_naming_its_host_twice_or_a_foreign_target_gets_400() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let head = |target: &str, hosts: &str| {
        format!(
            "POST {target} HTTP/1.1\r\n{hosts}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let twice = head("/mcp", "Host: 127.0.0.1\r\nHost: evil.example\r\n");
    assert!(raw_status(&gateway.url, &twice).await.contains(" 400 "));
    let foreign = head("http://evil.example/mcp", "Host: 127.0.0.1\r\n");
    assert!(raw_status(&gateway.url, &foreign).await.contains(" 400 "));
    // The same request, framed plainly, is served.
    let plain = head("/mcp", "Host: 127.0.0.1\r\n");
    assert!(raw_status(&gateway.url, &plain).await.contains(" 200 "));
}
