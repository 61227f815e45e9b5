//! How the gateway starts, as an operator sees it: `--listen` takes a host
//! name, a missing upstream is reported as such whatever else is wrong, and
//! `listening on` comes only once every listener is bound.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

const GATEWAY: &str = env!("CARGO_BIN_EXE_mcp-tasks-gateway");

/// Runs the gateway with `args` to its end (each case here fails fast).
fn run(args: &[&str]) -> Output {
    Command::new(GATEWAY)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the gateway runs")
}

#[tokio::test]
async fn a_host_name_in_listen_is_looked_up_and_bound() {
    let mut gateway = tokio::process::Command::new(GATEWAY)
        .args([
            "--listen",
            "localhost:0",
            "--upstream",
            "http://127.0.0.1:9/mcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway starts");
    let stdout = gateway.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("it announced itself in time")
        .expect("stdout")
        .unwrap_or_default();
    assert!(first.starts_with("listening on http://"), "{first}");
    let port = first
        .rsplit(':')
        .next()
        .and_then(|tail| tail.split('/').next())
        .and_then(|port| port.parse::<u16>().ok())
        .expect("a port");
    assert_ne!(port, 0, "{first}");
    gateway.kill().await.expect("stopped");
}

#[test]
fn a_missing_upstream_is_reported_even_when_the_port_is_busy() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let listen = busy.local_addr().expect("its address").to_string();
    let out = run(&["--listen", &listen]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("an upstream is required"), "{said}");
}

#[test]
fn a_busy_metrics_port_fails_the_start_before_it_says_listening() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let metrics = busy.local_addr().expect("its address").to_string();
    let out = run(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--metrics",
        &metrics,
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--metrics: cannot listen"), "{said}");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(!printed.contains("listening on"), "{printed}");
}

#[test]
fn a_listen_address_that_is_not_host_and_port_is_refused_clearly() {
    let out = run(&[
        "--listen",
        "no-port-here",
        "--upstream",
        "http://127.0.0.1:9/mcp",
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--listen no-port-here"), "{said}");
}

#[test]
fn the_example_configuration_holds_together() {
    let out = run(&["--config", "examples/mcp-tasks-gateway.toml", "--check"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hold together"));
}

#[test]
fn check_refuses_what_the_start_refuses() {
    let refusals: [(&[&str], &str); 5] = [
        (
            &[
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--sqlite",
                "t.db",
                "--redis",
                "redis://127.0.0.1:1/",
            ],
            "--redis and --sqlite",
        ),
        (&["--upstream", "https://127.0.0.1:9/mcp"], "only http://"),
        (
            &[
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--upstream-generation",
                "2019-01-01",
            ],
            "--upstream-generation",
        ),
        (
            &[
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--keep-alive",
                "none",
            ],
            "--keep-alive",
        ),
        (
            &["--upstream", "http://127.0.0.1:9/mcp", "--path", "mcp"],
            "--path",
        ),
    ];
    for (args, reason) in refusals {
        let out = run(&[args, &["--check"][..]].concat());
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(reason), "{args:?}: {said}");
    }
}

#[test]
fn a_configuration_with_an_unknown_key_is_refused_with_its_name() {
    let dir = std::env::temp_dir().join(format!("mcp-tasks-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "upstream = \"http://127.0.0.1:9/mcp\"\nthreshhold = \"1s\"\n",
    )
    .expect("written");
    let out = run(&["--config", file.to_str().expect("a path"), "--check"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("threshhold"), "{said}");
}

/// The command lines of `--help`'s examples, continuation lines joined.
fn help_examples(help: &str) -> Vec<Vec<String>> {
    let examples = help.split("Examples:").nth(1).expect("an Examples section");
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in examples.lines().map(str::trim) {
        if line.starts_with("mcp-tasks-gateway") || !current.is_empty() {
            current.push_str(line.trim_end_matches('\\'));
            current.push(' ');
            if !line.ends_with('\\') {
                commands.push(current.split_whitespace().skip(1).map(Into::into).collect());
                current.clear();
            }
        }
    }
    commands
}

#[test]
fn the_help_is_grouped_by_topic_and_its_examples_hold_together() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let headings = [
        "Upstream:",
        "Serving:",
        "Tasks:",
        "Storage:",
        "Limits:",
        "OAuth:",
        "Shutdown:",
    ];
    for heading in headings {
        assert!(
            help.lines().any(|line| line == heading),
            "{heading}\n{help}"
        );
    }
    let examples = help_examples(&help);
    assert_eq!(examples.len(), 2, "{help}");
    for example in examples {
        let args: Vec<&str> = example.iter().map(String::as_str).collect();
        // `--check` goes before `--`: after it, everything is the command.
        let split = args
            .iter()
            .position(|arg| *arg == "--")
            .unwrap_or(args.len());
        let checked = [&args[..split], &["--check"][..], &args[split..]].concat();
        let out = run(&checked);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{checked:?}: {said}");
    }
}

#[tokio::test]
async fn an_unreachable_upstream_is_said_at_start_and_refused_when_required() {
    // A port nobody listens on any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let upstream = format!("http://{}/mcp", closed.local_addr().expect("its address"));
    drop(closed);

    let out = run(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--require-upstream",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot be reached"), "{said}");
    assert!(out.stdout.is_empty(), "it never said it listens");

    let mut gateway = tokio::process::Command::new(GATEWAY)
        .args(["--listen", "127.0.0.1:0", "--upstream", &upstream])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway starts");
    let stderr = gateway.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let warned = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("WARN") && line.contains("cannot be reached now") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(warned, "a warning about the upstream");
    gateway.kill().await.expect("stopped");
}
