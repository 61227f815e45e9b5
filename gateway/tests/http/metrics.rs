//! `mcp-tasks-gateway --metrics` as Prometheus reads it: the scrape, after
//! real calls through the gateway, parsed by the reference parser (the
//! Python client's, `scripts/prometheus-parse.sh`, installed into the
//! git-ignored cache on first use). Every timing is a histogram, every
//! metric has a help text, and the upstream's answers, failures and
//! restarts are counted.

use crate::{gateway, support};

use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, serve_fixture};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The timings the layer and the proxy record.
const TIMINGS: [&str; 5] = [
    "mcp_tasks_time_to_park_seconds",
    "mcp_tasks_duration_seconds",
    "mcp_tasks_get_seconds",
    "mcp_tasks_store_seconds",
    "mcp_tasks_upstream_latency_seconds",
];

/// A metric family as the parser read it.
#[derive(Debug, Deserialize)]
struct Family {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    help: String,
    samples: Vec<Sample>,
}

/// One sample of a family.
#[derive(Debug, Deserialize)]
struct Sample {
    name: String,
    labels: serde_json::Map<String, Value>,
    value: Value,
}

/// What one scrape held.
struct Scrape {
    text: String,
    families: Vec<Family>,
}

impl Scrape {
    /// Scrapes `url` and parses it with the reference parser.
    async fn of(url: &str) -> Self {
        let scraped = reqwest::get(url).await.expect("scrape");
        assert_eq!(scraped.status(), 200);
        let text = scraped.text().await.expect("text");
        let families = parse(&text).await;
        Self { text, families }
    }

    /// The family `name` (a counter's without `_total`, as the parser
    /// names it).
    fn family(&self, name: &str) -> &Family {
        let base = name.strip_suffix("_total").unwrap_or(name);
        self.families
            .iter()
            .find(|family| family.name == base)
            .unwrap_or_else(|| panic!("no family {name} in\n{}", self.text))
    }

    /// The values of the samples named `name` whose labels include
    /// `labels`.
    fn values(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.families
            .iter()
            .flat_map(|family| &family.samples)
            .filter(|sample| sample.name == name)
            .filter(|sample| {
                labels
                    .iter()
                    .all(|(key, value)| sample.labels.get(*key) == Some(&json!(value)))
            })
            .map(|sample| sample.value.as_f64().unwrap_or(f64::NAN))
            .collect()
    }

    /// The one sample `name` with `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let values = self.values(name, labels);
        assert_eq!(values.len(), 1, "{name} {labels:?} in\n{}", self.text);
        values[0]
    }

    /// The sum of every sample `name`, whatever its labels.
    fn total(&self, name: &str) -> f64 {
        self.values(name, &[]).iter().sum()
    }
}

/// The families of `text`, as `prometheus_client`'s parser reads them.
async fn parse(text: &str) -> Vec<Family> {
    let script = gateway::repo().join("scripts/prometheus-parse.sh");
    let mut child = Command::new("bash")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("scripts/prometheus-parse.sh");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).await.expect("write");
    drop(stdin);
    // The first run installs the parser from PyPI.
    let output = tokio::time::timeout(Duration::from_secs(600), child.wait_with_output())
        .await
        .expect("the parser in time")
        .expect("the parser's output");
    assert!(
        output.status.success(),
        "the parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the parser's JSON")
}

#[tokio::test]
async fn timings_are_histograms_every_metric_has_help_and_upstream_answers_are_counted() {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let gateway = gateway::start(&upstream.url, &["--metrics", "127.0.0.1:0"]).await;
    let url = gateway::metrics_url(&gateway).await;
    let client = McpClient::new(&gateway.url);

    // A fast call, a call parked at the 300 ms threshold, a fast call.
    let greet = client.call_tool("greet", json!({"name": "m"}), true).await;
    assert!(greet.get("result").is_some(), "{greet}");
    let task = client
        .start_task("slow_compute", json!({"seconds": 0.6}))
        .await;
    client
        .wait_task_status(&task, &["completed"], Duration::from_secs(10))
        .await;
    let greet = client.call_tool("greet", json!({"name": "m"}), true).await;
    assert!(greet.get("result").is_some(), "{greet}");
    let scrape = Scrape::of(&url).await;

    for family in &scrape.families {
        assert!(!family.help.is_empty(), "no help: {family:?}");
    }
    for name in TIMINGS {
        let family = scrape.family(name);
        assert_eq!(family.kind, "histogram", "{name}:\n{}", scrape.text);
        for part in ["_bucket", "_sum", "_count"] {
            let part = format!("{name}{part}");
            assert!(
                family.samples.iter().any(|sample| sample.name == part),
                "no {part} in\n{}",
                scrape.text
            );
        }
        assert_eq!(
            scrape.total(&format!("{name}_count")),
            scrape
                .values(&format!("{name}_bucket"), &[("le", "+Inf")])
                .iter()
                .sum::<f64>(),
            "{name}: the last bucket holds every sample"
        );
    }

    // Parked once, past the threshold, within its first fine bound...
    let park = "mcp_tasks_time_to_park_seconds_bucket";
    assert_eq!(scrape.value(park, &[("le", "0.3")]), 0.0, "{}", scrape.text);
    assert_eq!(scrape.value(park, &[("le", "+Inf")]), 1.0);
    assert!(!scrape.values(park, &[("le", "0.301")]).is_empty());
    // ...and ended once, completed.
    let ended = "mcp_tasks_duration_seconds_count";
    assert_eq!(scrape.value(ended, &[("status", "completed")]), 1.0);

    // The three calls went upstream and came back 200 (with the layer's own
    // server/discover, if it asked); each answer was timed; none waits.
    let answers = "mcp_tasks_upstream_responses_total";
    let ok = scrape.value(answers, &[("status", "200")]);
    assert!(ok >= 3.0, "{}", scrape.text);
    let timed = scrape.value("mcp_tasks_upstream_latency_seconds_count", &[]);
    assert!(timed >= 3.0, "{}", scrape.text);
    assert_eq!(timed, scrape.total(answers));
    assert_eq!(scrape.value("mcp_tasks_upstream_in_flight", &[]), 0.0);

    // A call without the extension passes through, and the fixture answers
    // it with JSON: its head comes when the tool ends, 5 s later. Until
    // then it is in flight, on an open connection.
    let gateway_url = gateway.url.clone();
    let held = tokio::spawn(async move {
        let client = McpClient::new(&gateway_url);
        client
            .call_tool("slow_compute", json!({"seconds": 5}), false)
            .await
    });
    let during = async {
        loop {
            let scrape = Scrape::of(&url).await;
            if scrape.value("mcp_tasks_upstream_in_flight", &[]) > 0.0 {
                return scrape;
            }
            // The poll interval of a bounded wait for the call in flight.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let during = tokio::time::timeout(Duration::from_secs(4), during)
        .await
        .expect("the held call in flight");
    let open = during.value("mcp_tasks_upstream_connections", &[]);
    assert!(open >= 1.0, "{}", during.text);
    let done = held.await.expect("the held call");
    assert!(done.get("result").is_some(), "{done}");
    // Its 5 s to the head fell between the bounds of 2.5 and 10 s.
    let after = Scrape::of(&url).await;
    let latency = "mcp_tasks_upstream_latency_seconds_bucket";
    let slow = after.value(latency, &[("le", "10")]) - after.value(latency, &[("le", "2.5")]);
    assert_eq!(slow, 1.0, "{}", after.text);
    assert_eq!(after.value("mcp_tasks_upstream_in_flight", &[]), 0.0);
}

#[tokio::test]
async fn an_upstream_that_cannot_be_reached_is_counted_as_a_failure_not_an_answer() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = closed.local_addr().expect("port").port();
    drop(closed);
    let upstream = format!("http://127.0.0.1:{port}/mcp");
    // The generation named, so that the one call is the one request (no
    // probe of the upstream's generation first).
    let extra = [
        "--metrics",
        "127.0.0.1:0",
        "--upstream-generation",
        "2026-07-28",
    ];
    let gateway = gateway::start(&upstream, &extra).await;
    let url = gateway::metrics_url(&gateway).await;

    let client = McpClient::new(&gateway.url);
    let listed = client.request("tools/list", json!({}), false).await;
    assert_eq!(listed.status, 502, "{}", listed.body);
    let scrape = Scrape::of(&url).await;

    let failures = scrape.family("mcp_tasks_upstream_failures_total");
    assert_eq!(failures.kind, "counter");
    assert!(!failures.help.is_empty());
    let failed = "mcp_tasks_upstream_failures_total";
    assert_eq!(scrape.value(failed, &[("reason", "connect")]), 1.0);
    assert_eq!(scrape.total("mcp_tasks_upstream_responses_total"), 0.0);
    assert_eq!(scrape.value("mcp_tasks_upstream_in_flight", &[]), 0.0);
}

#[tokio::test]
async fn a_stdio_server_started_again_is_counted() {
    let server = ["python3", "tests/upstreams/stdio_misbehaving.py"];
    let gateway = gateway::start_stdio(&server, &["--metrics", "127.0.0.1:0"]).await;
    let url = gateway::metrics_url(&gateway).await;
    let client = McpClient::new(&gateway.url);

    let crashed = client.call_tool("crash", json!({}), true).await;
    assert!(crashed.get("error").is_some(), "{crashed}");
    gateway::answered_again(&client, "echo", json!({"text": "again"})).await;
    let scrape = Scrape::of(&url).await;

    let restarts = scrape.family("mcp_tasks_upstream_restarts_total");
    assert_eq!(restarts.kind, "counter");
    assert!(!restarts.help.is_empty());
    assert_eq!(scrape.value("mcp_tasks_upstream_restarts_total", &[]), 1.0);
}
