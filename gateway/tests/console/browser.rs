//! The console in a real headless browser: Debian's chromium driven by
//! Playwright's library (`tests/clients/console-browser/drive.mjs`, run by
//! `scripts/console-browser.sh`, which installs `playwright-core` into the
//! cache; `.ci/run` installs chromium). The driver prints a line per step
//! and reads the ids of the tasks the test makes from its stdin.

use std::process::Stdio;
use std::time::Duration;

use axum::Router;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::gateway;
use crate::harness::{Console, TOKEN};
use crate::hostile_upstream;
use crate::support::client::McpClient;
use crate::support::fixture::{FixtureMode, serve, serve_fixture};

/// How long the first run may take to install playwright-core.
const INSTALL: Duration = Duration::from_secs(600);

/// The driver, running.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    said: Vec<String>,
}

impl Driver {
    async fn start(mode: &str, console: &Console, shot: &str, evil: Option<&str>) -> Self {
        let repo = gateway::repo();
        let mut command = Command::new("bash");
        command
            .arg(repo.join("scripts/console-browser.sh"))
            .arg(repo.join("tests/clients/console-browser/drive.mjs"))
            .arg(mode)
            .env("CONSOLE_URL", &console.url)
            .env("CONSOLE_TOKEN", TOKEN)
            .env("SHOT", shot)
            .env("EVIL_URL", evil.unwrap_or(""))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("scripts/console-browser.sh");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self {
            child,
            stdin,
            lines,
            said: Vec::new(),
        }
    }

    /// The driver's next line, which must start with `step`.
    async fn expect(&mut self, step: &str, within: Duration) -> String {
        let line = tokio::time::timeout(within, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no {step} within {within:?}; said {:?}", self.said))
            .expect("driver output")
            .unwrap_or_else(|| panic!("the driver ended before {step}; said {:?}", self.said));
        self.said.push(line.clone());
        assert!(
            line.starts_with(step),
            "expected {step}, the driver said {:?}",
            self.said
        );
        line
    }

    async fn tell(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("driver stdin");
    }

    async fn finish(mut self) {
        self.expect("DONE", Duration::from_secs(30)).await;
        let status = self.child.wait().await.expect("driver exit");
        assert!(status.success(), "{status}; said {:?}", self.said);
    }
}

/// Where a screenshot goes: `target/console-<name>.png`.
fn shot(name: &str) -> String {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| gateway::repo().join("target"));
    target
        .join(format!("console-{name}.png"))
        .display()
        .to_string()
}

#[tokio::test]
async fn an_operator_watches_a_task_finish_and_cancels_another_from_the_page() {
    let (upstream, probe) = serve_fixture(FixtureMode::Stateless).await;
    let console = Console::start(&upstream.url, &[]).await;
    let client = McpClient::new(&console.gateway.url);
    let shot = shot("live");
    let mut driver = Driver::start("live", &console, &shot, None).await;
    driver.expect("REFUSED", INSTALL).await;
    driver.expect("READY", Duration::from_secs(30)).await;

    // Made once the page is live: it must come through the feed.
    let a = client
        .start_task("slow_compute", json!({"seconds": 4, "bare": true}))
        .await;
    driver.tell(&format!("A {a}")).await;
    driver.expect("APPEARED", Duration::from_secs(30)).await;
    driver.expect("MOVED", Duration::from_secs(30)).await;
    driver.expect("COMPLETED", Duration::from_secs(30)).await;

    let b = client
        .start_task(
            "slow_compute",
            json!({"seconds": 120, "label": "to cancel"}),
        )
        .await;
    driver.tell(&format!("B {b}")).await;
    driver.expect("CANCELLED", Duration::from_secs(30)).await;
    // The tool itself stopped, not only the task's record.
    assert!(
        probe
            .wait_cancelled("slow_compute", Duration::from_secs(10))
            .await
    );
    let got = client.tasks_get(&b).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    driver.expect("TOOLS", Duration::from_secs(30)).await;
    driver.expect("SHOT", Duration::from_secs(30)).await;
    driver.finish().await;
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "{shot}");
    eprintln!("screenshot: {shot}");
}

/// What the page shows of `text`: control characters as their symbols.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| match c as u32 {
            0x7f => '\u{2421}',
            code @ 0..=0x1f => char::from_u32(0x2400 + code).expect("a symbol"),
            _ => c,
        })
        .collect()
}

/// A page of another origin that posts a form to `target` as it loads.
async fn evil_site() -> crate::support::fixture::Served {
    let page = axum::routing::get(|query: axum::extract::RawQuery| async move {
        let target = query.0.unwrap_or_default();
        let target = target.trim_start_matches("target=");
        let target = percent_decode(target);
        axum::response::Html(format!(
            "<!doctype html><form id=f method=post action=\"{target}\"></form>\
             <script>document.getElementById('f').submit()</script>"
        ))
    });
    serve(Router::new().route("/mcp", page)).await
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn hostile_values_are_shown_as_text_and_a_cross_site_form_is_refused() {
    let upstream = hostile_upstream::serve().await;
    // A plain router that speaks 2026-07-28 and answers nothing else.
    let console = Console::start(&upstream.url, &["--upstream-generation", "2026-07-28"]).await;
    let client = McpClient::new(&console.gateway.url);
    // A 2026-07-28 client names the tool in the `Mcp-Name` header too, so a
    // tool name holds no control character but a tab, and its length is
    // bounded by the header's; a status message holds anything.
    let hostile = [
        (
            "<script>window.__pwned='tool'</script>",
            "\"><img src=x onerror=\"window.__pwned='message'\">",
        ),
        (
            "\"><img src=x onerror=\"window.__pwned='tool2'\">",
            "<script>window.__pwned='message2'</script>",
        ),
        (
            "tab\tin a name",
            "line\nfeed\rreturn\u{1b}[31mred\u{0}nul\u{7}bell\u{7f}del",
        ),
    ];
    let mut ids = Vec::new();
    for (tool, message) in hostile {
        let id = client
            .start_task(tool, json!({"seconds": 120, "message": message}))
            .await;
        ids.push(id);
    }
    let huge = client
        .start_task(
            &"T".repeat(4096),
            json!({"seconds": 120, "message": "M".repeat(1 << 20)}),
        )
        .await;
    ids.push(huge);
    // What the page must show: the rows as the API gives them (cut where
    // they are long), every character as text.
    let mut expected = Vec::new();
    for id in &ids {
        let row = console
            .row(id, "")
            .await
            .unwrap_or_else(|| panic!("{id} listed"));
        let message = row["message"].as_str().unwrap_or_default();
        expected.push(json!({
            "id": id,
            "tool": visible(row["tool"].as_str().expect("a tool")),
            "message": visible(message),
        }));
    }
    assert!(
        expected[3]["tool"].as_str().unwrap().len() < 2048,
        "the tool name is cut"
    );

    let evil = evil_site().await;
    let shot = shot("hostile");
    let mut driver = Driver::start("hostile", &console, &shot, Some(&evil.url)).await;
    driver.expect("READY", INSTALL).await;
    driver
        .tell(&format!("ROWS {}", Value::Array(expected)))
        .await;
    driver.expect("TEXT", Duration::from_secs(30)).await;
    driver.expect("SHOT", Duration::from_secs(30)).await;
    let target = format!("{}/api/tasks/{}/cancel", console.url, ids[0]);
    driver.tell(&format!("TARGET {target}")).await;
    let evil_line = driver.expect("EVIL", Duration::from_secs(30)).await;
    assert!(
        evil_line.contains("operator credential") || evil_line.contains("cross-site"),
        "the console refused the form: {evil_line}"
    );
    driver.finish().await;
    let got = client.tasks_get(&ids[0]).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
}
