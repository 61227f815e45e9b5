//! The stdio benchmark's client side (issue #33): a stdio MCP server driven
//! directly over its stdin and stdout, the baseline that the gateway and
//! supergateway, which serve the same server over HTTP, are measured
//! against. Run it through `scripts/stdio-bench.sh`. By hand:
//!
//! ```text
//! cargo bench --bench stdio -- --requests DIR [--server everything|python]
//! cargo bench --bench stdio -- --direct [--server everything|python] [--concurrency 16] [--warmup 2] [--seconds 5] -- COMMAND [ARGS...]
//! ```
//!
//! `--server` names the server's fast tool: `everything` (default), the
//! reference server's `echo` (Node.js); `python`, the Python fixture's
//! `greet` (FastMCP, `tests/upstreams/python`).
//!
//! `--requests DIR` writes the load generator's requests into DIR, as
//! `NAME.body` and `NAME.headers` (`support/http_requests.rs`): `call`, a
//! 2026-07-28 `tools/call` of that tool, and `session-call`, the same call
//! as a 2025-11-25 session sends it (the script adds the `Mcp-Session-Id`
//! it gets from `initialize`).
//!
//! `--direct` starts COMMAND, initializes it as a client would, and keeps
//! `--concurrency` calls of the tool in flight (a closed loop: each answer
//! sends the next request) for `--warmup` seconds, then for `--seconds`
//! more, which are counted. Every answer is checked (a result whose text is
//! the echo). It prints, for the script to parse:
//!
//! ```text
//! rps 41234.5
//! p50_us 380
//! p99_us 910
//! wrong 0
//! ```
//!
//! The loop reads and writes the pipes itself, one task, no MCP client
//! library: the least a client can spend, so the baseline is what the
//! server itself can do.

#[path = "../tests/support/client/mod.rs"]
mod client;
#[path = "support/http_requests.rs"]
mod http_requests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use http_requests::Requests;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{ChildStdin, Command};

/// A server's fast tool: its name, its arguments, and the text it answers.
struct Tool {
    name: &'static str,
    arguments: Value,
    answer: &'static str,
}

/// The fast tool of the server `--server` names.
fn tool(args: &[String]) -> Tool {
    let server = args
        .iter()
        .position(|arg| arg == "--server")
        .and_then(|at| args.get(at + 1))
        .map_or("everything", String::as_str);
    match server {
        "everything" => Tool {
            name: "echo",
            arguments: json!({"message": "bench"}),
            answer: "Echo: bench",
        },
        "python" => Tool {
            name: "greet",
            arguments: json!({"name": "bench"}),
            answer: "Hello, bench!",
        },
        other => panic!("--server {other}: everything or python"),
    }
}

struct Options {
    tool: Tool,
    concurrency: usize,
    warmup: Duration,
    measured: Duration,
    command: Vec<String>,
}

fn main() {
    // `cargo bench` adds `--bench` at the end: not the command's.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.last().is_some_and(|last| last == "--bench") {
        args.pop();
    }
    if let Some(at) = args.iter().position(|arg| arg == "--requests") {
        let dir = PathBuf::from(args.get(at + 1).expect("--requests DIR"));
        write_requests(&dir, &tool(&args)).expect("the requests are written");
        return;
    }
    if !args.iter().any(|arg| arg == "--direct") {
        // `cargo bench` without arguments runs every bench: nothing to do
        // without a server to drive.
        eprintln!(
            "stdio: give --requests DIR or --direct ... -- COMMAND (see scripts/stdio-bench.sh)"
        );
        return;
    }
    let options = parse(&args);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(direct(options));
}

fn parse(args: &[String]) -> Options {
    let split = args.iter().position(|arg| arg == "--").expect("-- COMMAND");
    let (flags, command) = (&args[..split], &args[split + 1..]);
    let value = |name: &str, default: u64| {
        flags
            .iter()
            .position(|flag| flag == name)
            .and_then(|at| flags.get(at + 1))
            .map_or(default, |text| text.parse().expect("a number"))
    };
    Options {
        tool: tool(flags),
        concurrency: value("--concurrency", 16).max(1) as usize,
        warmup: Duration::from_secs(value("--warmup", 2)),
        measured: Duration::from_secs(value("--seconds", 5)),
        command: command.to_vec(),
    }
}

fn write_requests(dir: &std::path::Path, tool: &Tool) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let requests = Requests::new();
    requests
        .tool_call(1, tool.name, tool.arguments.clone(), json!({}))
        .write(dir, "call")?;
    let session_call = call(1, tool);
    std::fs::write(dir.join("session-call.body"), session_call.to_string())?;
    std::fs::write(
        dir.join("session-call.headers"),
        "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2025-11-25\n",
    )
}

async fn send(stdin: &mut BufWriter<ChildStdin>, message: &Value) {
    let mut line = message.to_string();
    line.push('\n');
    stdin
        .write_all(line.as_bytes())
        .await
        .expect("the server reads");
    stdin.flush().await.expect("the server reads");
}

fn call(id: u64, tool: &Tool) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool.name, "arguments": tool.arguments}})
}

async fn direct(options: Options) {
    let (program, rest) = options.command.split_first().expect("a command");
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut stdin = BufWriter::new(child.stdin.take().expect("stdin"));
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "stdio-bench", "version": "1"}}});
    send(&mut stdin, &initialize).await;
    loop {
        let line = lines.next_line().await.expect("a line").expect("an answer");
        let message: Value = serde_json::from_str(&line).unwrap_or_default();
        if message["id"] == 0 {
            break;
        }
    }
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;

    let mut sent: HashMap<u64, Instant> = HashMap::with_capacity(options.concurrency);
    let mut next = 1;
    for _ in 0..options.concurrency {
        sent.insert(next, Instant::now());
        send(&mut stdin, &call(next, &options.tool)).await;
        next += 1;
    }
    let start = Instant::now();
    let counted_from = start + options.warmup;
    let end = counted_from + options.measured;
    let mut latencies: Vec<u64> = Vec::new();
    let mut wrong = 0u64;
    let expected = options.tool.answer;
    while Instant::now() < end {
        let line = lines
            .next_line()
            .await
            .expect("a line")
            .expect("the server runs");
        let message: Value = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(_) => continue,
        };
        let Some(id) = message["id"].as_u64() else {
            continue; // a notification of the server's
        };
        let Some(at) = sent.remove(&id) else { continue };
        let now = Instant::now();
        if now >= counted_from {
            latencies.push(now.duration_since(at).as_micros() as u64);
            if message["result"]["content"][0]["text"] != expected {
                wrong += 1;
            }
        }
        sent.insert(next, now);
        send(&mut stdin, &call(next, &options.tool)).await;
        next += 1;
    }
    let counted = latencies.len();
    latencies.sort_unstable();
    let at = |share: f64| {
        latencies
            .get(((counted as f64 * share) as usize).min(counted.saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    println!("rps {:.1}", counted as f64 / options.measured.as_secs_f64());
    println!("p50_us {}", at(0.50));
    println!("p99_us {}", at(0.99));
    println!("wrong {wrong}");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}
