//! `mcp-tasks-gateway` as a process, in front of the rmcp fixture over
//! loopback: what crosses the proxy, what the gateway answers when the
//! upstream does not, and what a client may hold of it.

use crate::{gateway, support};

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::client::{LegacyClient, McpClient};
use support::fixture::{FixtureMode, serve_fixture};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

/// The text of a `tools/call` result.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// POSTs a JSON-RPC body as it is, with `extra` headers; status and body.
async fn post(url: &str, body: &str, extra: &[(&str, &str)]) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .timeout(Duration::from_secs(20))
        .body(body.to_owned());
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;

#[tokio::test]
async fn fast_calls_answer_and_slow_calls_become_tasks_through_the_gateway() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = McpClient::new(&gateway.url);

    let greet = client.call_tool("greet", json!({"name": "gw"}), true).await;
    assert_eq!(text(&greet["result"]), "Hello, gw!", "{greet}");

    let created = client
        .call_tool("slow_compute", json!({"seconds": 1}), true)
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().expect("taskId");
    let done = client
        .wait_task_status(task, &["completed"], Duration::from_secs(10))
        .await;
    assert_eq!(
        text(&done["result"]["result"]),
        "slow_compute done after 1s",
        "{done}"
    );
}

#[tokio::test]
async fn metrics_are_served_in_the_prometheus_format_when_asked() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &["--metrics", "127.0.0.1:0"]).await;
    let url = gateway::metrics_url(&gateway).await;

    let client = McpClient::new(&gateway.url);
    let task = client
        .start_task("slow_compute", json!({"seconds": 0.6}))
        .await;
    client
        .wait_task_status(&task, &["completed"], Duration::from_secs(5))
        .await;

    let scraped = reqwest::get(&url).await.expect("scrape");
    assert_eq!(scraped.status(), 200);
    let text = scraped.text().await.expect("text");
    assert!(text.contains("mcp_tasks_created_total 1"), "{text}");
    assert!(
        text.contains("mcp_tasks_terminal_total{status=\"completed\"} 1"),
        "{text}"
    );
    assert!(text.contains("mcp_tasks_store_seconds"), "{text}");
    // The scrape counted the store's live tasks: the completed one.
    assert!(
        text.contains("mcp_tasks_live{status=\"completed\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("mcp_tasks_live{status=\"working\"} 0"),
        "{text}"
    );
}

#[tokio::test]
async fn mcp_headers_cross_hop_by_hop_ones_stop_and_forwarding_ones_are_added() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = McpClient::new(&gateway.url);
    let id = client.next_id();
    let body = client.build_request(
        id,
        "tools/call",
        json!({"name": "echo_headers", "arguments": {}}),
        false,
    );
    let mut headers = McpClient::standard_headers("tools/call", Some("echo_headers"));
    headers.push(("connection".into(), "keep-alive, x-hop".into()));
    headers.push(("x-hop".into(), "must not cross".into()));
    headers.push(("x-end-to-end".into(), "crosses".into()));
    let answer = client.exchange(id, &headers, body.to_string()).await;
    let answer = answer.into_response();
    let seen: Value = serde_json::from_str(text(&answer["result"])).expect("headers as JSON");

    assert_eq!(seen["mcp-method"], "tools/call", "{seen}");
    assert_eq!(seen["mcp-name"], "echo_headers");
    assert_eq!(seen["mcp-protocol-version"], "2026-07-28");
    assert_eq!(seen["x-end-to-end"], "crosses");
    assert!(seen.get("x-hop").is_none(), "{seen}");
    assert_eq!(seen["x-forwarded-for"], "127.0.0.1");
    assert_eq!(seen["x-forwarded-proto"], "http");
    let gateway_host = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    assert_eq!(seen["x-forwarded-host"], gateway_host);
    let forwarded = seen["forwarded"].as_str().unwrap_or_default();
    assert!(forwarded.starts_with("for=\"127.0.0.1:"), "{forwarded}");
    // Host names the upstream, not the gateway.
    let upstream_host = upstream
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    assert_eq!(seen["host"], upstream_host);
}

#[tokio::test]
async fn a_2025_11_25_session_runs_a_task_through_the_gateway() {
    let (upstream, _) = serve_fixture(FixtureMode::Session).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = LegacyClient::connect(&gateway.url).await;
    assert_eq!(
        client.server_capabilities()["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    let result =
        gateway::legacy_task_result(&client, "slow_compute", json!({"seconds": 0.5})).await;
    assert_eq!(text(&result), "slow_compute done after 0.5s", "{result}");
    client.close().await;
}

#[tokio::test]
async fn sse_events_cross_as_they_come_not_when_the_call_ends() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &["--threshold", "10s"]).await;
    let client = McpClient::new(&gateway.url);
    // A call that answers in time (0.25 s, threshold 10 s) with progress.
    let mut call = client
        .open_call("slow_compute", json!({"seconds": 0.25}), Some("p"), true)
        .await;
    let first = call.next_message().await.expect("a first event");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(
        probe.finished("slow_compute"),
        0,
        "the first progress arrived only after the tool had finished"
    );
    let rest = call.finish().await;
    let last = rest.last().expect("the answer");
    assert_eq!(
        text(&last["result"]),
        "slow_compute done after 0.25s",
        "{last}"
    );
}

#[tokio::test]
async fn a_session_opens_its_get_stream_and_ends_with_delete_through_the_gateway() {
    let (upstream, _) = serve_fixture(FixtureMode::Session).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let client = McpClient::new(&gateway.url);
    let session = client.legacy_initialize("2025-11-25", json!({})).await;
    let http = reqwest::Client::new();
    let stream = http
        .get(&gateway.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("GET");
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/event-stream")
    );
    drop(stream);
    let closed = http
        .delete(&gateway.url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("DELETE");
    assert!(closed.status().is_success(), "{}", closed.status());
    // The session is gone upstream.
    let after = http
        .get(&gateway.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("GET after DELETE");
    assert_eq!(after.status(), 404);
}

#[tokio::test]
async fn an_unreachable_upstream_answers_502_with_a_json_rpc_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let gateway = gateway::start(&format!("http://127.0.0.1:{port}/mcp"), &[]).await;
    let (status, body) = post(&gateway.url, TOOLS_LIST, &[]).await;
    assert_eq!(status, 502, "{body}");
    let error: Value = serde_json::from_str(&body).expect("JSON body");
    assert_eq!(error["error"]["code"], -32603, "{error}");
    assert_eq!(
        error["error"]["message"],
        "the upstream MCP server is unreachable"
    );
}

#[tokio::test]
async fn a_silent_upstream_answers_504_after_the_header_timeout() {
    // Accepts connections and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let gateway = gateway::start(&url, &["--upstream-header-timeout", "500ms"]).await;
    let started = Instant::now();
    let (status, body) = post(&gateway.url, TOOLS_LIST, &[]).await;
    assert_eq!(status, 504, "{body}");
    assert!(body.contains("did not answer in time"), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A request that names a method other than tools/call has a timeout of
    // its own, shorter than a tool's run (here the header timeout's 30 min
    // default would hold it).
    let gateway = gateway::start(&url, &["--upstream-request-timeout", "500ms"]).await;
    let started = Instant::now();
    let named = [
        ("mcp-method", "tools/list"),
        ("mcp-protocol-version", "2026-07-28"),
    ];
    let (status, body) = post(&gateway.url, TOOLS_LIST, &named).await;
    assert_eq!(status, 504, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    held.abort();
}

#[tokio::test]
async fn an_sse_answer_that_then_says_nothing_ends_at_the_calls_bound() {
    // Answers every request with an SSE head, then says nothing.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((mut stream, _)) = silent.accept().await {
            let mut request = [0u8; 8192];
            let _ = stream.read(&mut request).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let _ = stream.write_all(head.as_bytes()).await;
            open.push(stream);
        }
    });
    let bound = ["--upstream-header-timeout", "1s"];
    let gateway = gateway::start(
        &url,
        &[&bound[..], &["--upstream-generation", "2026-07-28"]].concat(),
    )
    .await;
    let client = McpClient::new(&gateway.url);

    // A call that becomes a task: the task fails at the bound.
    let task = client.start_task("slow", json!({})).await;
    let ended = client
        .wait_task_status(&task, &["failed", "completed"], Duration::from_secs(15))
        .await;
    assert_eq!(ended["result"]["status"], "failed", "{ended}");

    // A call that stays with its client (which declares no tasks): its
    // stream ends at the bound, though the layer's keep-alive would keep
    // it open for ever.
    let body = client.build_request(
        client.next_id(),
        "tools/call",
        json!({"name": "slow", "arguments": {}}),
        false,
    );
    let mut request = reqwest::Client::new()
        .post(&gateway.url)
        .timeout(Duration::from_secs(20))
        .body(body.to_string());
    for (name, value) in McpClient::standard_headers("tools/call", Some("slow")) {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("the head");
    let read = response.text().await;
    assert!(
        !matches!(&read, Err(error) if error.is_timeout()),
        "the stream ended by itself: {read:?}"
    );
    assert!(
        gateway.log().contains("ran past its time limit"),
        "{}",
        gateway.log()
    );
    held.abort();
}

#[tokio::test]
async fn half_sent_headers_are_cut_off_and_over_the_connection_limit_clients_wait() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(
        &upstream.url,
        &["--header-timeout", "1s", "--max-connections", "1"],
    )
    .await;
    let addr = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();

    // One connection takes the only slot and sends half a request.
    let mut half = TcpStream::connect(&addr).await.expect("connect");
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    // Meanwhile a full request waits for the slot...
    let mut waiting = tokio::spawn({
        let url = gateway.url.clone();
        async move { post(&url, TOOLS_LIST, &[]).await }
    });
    // ...until the header timeout closes the half-sent one: the close comes
    // first (looked at first, so an answer that came with it counts after).
    let mut rest = Vec::new();
    let first = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::select! {
            biased;
            _ = half.read_to_end(&mut rest) => "the half-sent request closed",
            _ = &mut waiting => "the waiting request served",
        }
    })
    .await
    .expect("the half-sent request was held open");
    assert_eq!(
        first, "the half-sent request closed",
        "served before the slot was free"
    );
    let (status, body) = waiting.await.expect("waiting request");
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_trickled_body_is_cut_off_at_the_body_timeout() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &["--body-timeout", "1s"]).await;
    let addr = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // A request the layer reads, and one it passes on unread (routed by its
    // headers): either way the client's slow body is a 400, not the
    // upstream's fault.
    let unread = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: prompts/list\r\n";
    for extra in ["", unread] {
        let started = Instant::now();
        let answer = trickle(&addr, extra).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{extra:?}: {answer}");
        assert!(!answer.contains("upstream"), "{answer}");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{took:?}");
    }
}

/// Sends a `tools/list` whose body comes one byte every 300 ms, with the
/// `extra` header lines; the gateway's answer.
async fn trickle(addr: &str, extra: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n",
        TOOLS_LIST.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    // Never idle for a second, yet far from done when the second is up.
    let writer = tokio::spawn(async move {
        let (mut reader, mut writer) = stream.into_split();
        let feeding = async {
            for byte in TOOLS_LIST.bytes() {
                if writer.write_all(&[byte]).await.is_err() {
                    break;
                }
                // The scenario: a client that sends its body slowly on purpose.
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        };
        let mut answer = Vec::new();
        tokio::select! {
            _ = feeding => {}
            _ = reader.read_to_end(&mut answer) => {}
        }
        answer
    });
    let answer = tokio::time::timeout(Duration::from_secs(10), writer)
        .await
        .expect("the gateway held the trickled request")
        .expect("writer");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_on_loopback() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &[]).await;
    let (status, body) = post(&gateway.url, TOOLS_LIST, &[("host", "evil.example")]).await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = post(
        &gateway.url,
        TOOLS_LIST,
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = post(
        &gateway.url,
        TOOLS_LIST,
        &[("origin", "http://localhost:3000")],
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn settings_come_from_a_file_and_the_environment() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let file = std::env::temp_dir().join(format!("mcp-tasks-gateway-{}.toml", std::process::id()));
    std::fs::write(
        &file,
        format!(
            "upstream = \"{}\"\nlisten = \"127.0.0.1:0\"\npolicy = [\"greet=required\"]\n",
            upstream.url
        ),
    )
    .expect("write config");
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"));
    command
        .args(["--config", file.to_str().expect("utf-8 path")])
        .env("MCP_TASKS_THRESHOLD", "10s");
    let gateway =
        support::process::Process::start("gateway", command, Duration::from_secs(30)).await;
    let _ = std::fs::remove_file(&file);
    let client = McpClient::new(&gateway.url);

    // From the file: greet is task-required.
    let refused = client.call_tool("greet", json!({"name": "x"}), false).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    // From the environment: a 10 s threshold, so 0.6 s is answered directly.
    let direct = client
        .call_tool("slow_compute", json!({"seconds": 0.6}), true)
        .await;
    assert_eq!(
        text(&direct["result"]),
        "slow_compute done after 0.6s",
        "{direct}"
    );
}

#[tokio::test]
async fn a_bad_setting_exits_2_with_a_message() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"))
        .args([
            "--upstream",
            "https://example.com/mcp",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("only http:// upstreams"), "{stderr}");
}

#[tokio::test]
async fn sigterm_drains_and_exits_0() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let mut gateway = gateway::start(&upstream.url, &["--shutdown-grace", "1s"]).await;
    let client = McpClient::new(&gateway.url);
    let created = client
        .call_tool("slow_compute", json!({"seconds": 60}), true)
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    gateway.terminate();
    let status = gateway.wait_exit(Duration::from_secs(15)).await;
    assert!(
        status.is_some_and(|status| status.success()),
        "{status:?}\n{}",
        gateway.log()
    );
    // The last lines may still be on their way from the pipe.
    let drained = gateway.wait_log("drained", Duration::from_secs(5)).await;
    assert!(drained, "{}", gateway.log());
}
