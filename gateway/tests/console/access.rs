//! Who gets into the console and what a cross-site request gets.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::json;

use crate::gateway;
use crate::harness::{Console, TOKEN, http, temp_file};
use crate::support::client::McpClient;
use crate::support::fixture::{FixtureMode, serve_fixture};

#[tokio::test]
async fn without_the_credential_there_is_only_the_sign_in_form_and_401() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let client = http();

    let page = client.get(&console.url).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains("name=\"token\""), "{html}");
    assert!(
        !html.contains("console.js"),
        "the sign-in form loads no script: {html}"
    );

    for path in ["/api/tasks", "/api/feed", "/api/overview", "/api/session"] {
        let refused = client
            .get(format!("{}{path}", console.url))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 401, "{path}");
        let wrong = client
            .get(format!("{}{path}", console.url))
            .bearer_auth("operator-credential-0123456788")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status().as_u16(), 401, "{path} with a wrong token");
    }
    let (status, page) = console.get("/tasks").await;
    assert_eq!(status, 200, "{page}");

    let wrong = client
        .post(format!("{}/login", console.url))
        .form(&[("token", "operator-credential-0123456788")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    assert!(wrong.text().await.unwrap().contains("id=\"wrong\""));

    let (cookie, _) = console.sign_in().await;
    let mut headers = HeaderMap::new();
    headers.insert("cookie", cookie);
    let signed = client
        .get(&console.url)
        .headers(headers)
        .send()
        .await
        .unwrap();
    assert!(signed.text().await.unwrap().contains("/console/console.js"));
}

#[tokio::test]
async fn a_cross_site_request_changes_nothing() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let client = McpClient::new(&console.gateway.url);
    let task = client
        .start_task("slow_compute", json!({"seconds": 60}))
        .await;
    let (cookie, csrf) = console.sign_in().await;
    let host = console
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let cancel = format!("{}/api/tasks/{task}/cancel", console.url);
    let attempt =
        |origin: Option<&'static str>, site: Option<&'static str>, token: Option<&str>| {
            let mut request = http().post(&cancel).header("cookie", cookie.clone());
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            if let Some(site) = site {
                request = request.header("sec-fetch-site", site);
            }
            if let Some(token) = token {
                request = request.header("x-console-csrf", token);
            }
            async move { request.send().await.unwrap().status().as_u16() }
        };
    // Another origin, even with the session's token (which it could not read).
    assert_eq!(
        attempt(Some("http://evil.example"), None, Some(&csrf)).await,
        403
    );
    assert_eq!(attempt(Some("null"), None, Some(&csrf)).await, 403);
    assert_eq!(attempt(None, Some("cross-site"), Some(&csrf)).await, 403);
    assert_eq!(attempt(None, Some("same-site"), Some(&csrf)).await, 403);
    // The console's own origin without the session's token, or a wrong one.
    assert_eq!(attempt(None, Some("same-origin"), None).await, 403);
    assert_eq!(
        attempt(
            None,
            Some("same-origin"),
            Some("0123456789abcdef0123456789abcdef")
        )
        .await,
        403
    );
    // A cross-site sign-in is refused too (no session is planted).
    let planted = http()
        .post(format!("{}/login", console.url))
        .header("origin", "http://evil.example")
        .form(&[("token", TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(planted.status().as_u16(), 403);
    assert!(planted.headers().get("set-cookie").is_none());

    let got = client.tasks_get(&task).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    assert_eq!(probe.cancelled("slow_compute"), 0);

    // The page's own request: its origin and its token.
    let origin: &'static str = Box::leak(format!("http://{host}").into_boxed_str());
    assert_eq!(
        attempt(Some(origin), Some("same-origin"), Some(&csrf)).await,
        200
    );
    assert!(
        probe
            .wait_cancelled("slow_compute", Duration::from_secs(10))
            .await
    );
    assert!(
        console
            .gateway
            .wait_log("operator action", Duration::from_secs(5))
            .await
    );
    let log = console.gateway.log();
    let line = log
        .lines()
        .find(|line| line.contains("operator action") && line.contains(&task))
        .unwrap_or_else(|| panic!("no audit line for {task}:\n{log}"));
    assert!(
        line.contains("cancel") && line.contains("session ") && line.contains("cancelled"),
        "{line}"
    );
}

#[tokio::test]
async fn no_credential_no_console_and_the_start_says_so() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let plain = gateway::start(&upstream.url, &["--metrics", "127.0.0.1:0"]).await;
    let metrics = gateway::metrics_url(&plain).await;
    assert!(
        plain
            .wait_log("console off: no credential", Duration::from_secs(5))
            .await
    );
    let console = metrics.replace("/metrics", "/console");
    let answer = http().get(&console).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 404);

    // A credential without the operator's listener, or a short one, stops the start.
    let token = temp_file("short");
    std::fs::write(&token, "short").unwrap();
    for args in [
        vec!["--console-token-file", "/nonexistent/token"],
        vec![
            "--metrics",
            "127.0.0.1:0",
            "--console-token-file",
            token.to_str().unwrap(),
        ],
    ] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"))
            .args(["--listen", "127.0.0.1:0", "--upstream", &upstream.url])
            .args(&args)
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains("console"), "{args:?}: {said}");
    }
    let _ = std::fs::remove_file(&token);
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks-gateway"))
        .args(["--listen", "127.0.0.1:0", "--upstream", &upstream.url])
        .env("MCP_TASKS_CONSOLE_TOKEN", TOKEN)
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--metrics"));
}
