//! Flood: one anonymous 2026-07-28 client that declares the tasks extension
//! sends many `tools/call`s of the fixture's `slow_compute` to a running
//! server, and the server's memory is watched while they are parked
//! (issue #10).
//!
//! Run it through `scripts/flood.sh`, which starts `examples/conformance_server`
//! and passes its URL and PID. By hand:
//!
//! ```text
//! cargo bench --bench flood -- http://127.0.0.1:PORT/mcp PID \
//!     [--calls 20000] [--concurrency 256] [--timeout-ms 3000] \
//!     [--seconds 600] [--max-run-secs 600] [--settle-secs 10]
//! ```
//!
//! Every call asks `slow_compute` to run `--seconds`, so a parked call is
//! still running when the flood ends. At most `--concurrency` calls are in
//! flight; a call without an answer after `--timeout-ms` is dropped, which
//! closes its connection (a call the server kept synchronous is then
//! cancelled by the hang-up, as without the layer). The run stops after
//! `--calls` calls or `--max-run-secs`, whichever comes first; calls still in
//! flight then are dropped too. Only loopback URLs are accepted.
//!
//! After the flood it keeps watching the server for `--settle-secs`, to show
//! what holding the parked calls costs once the client is quiet.
//!
//! Each answer is classified (parked, synchronous, JSON-RPC error by code,
//! timed out, transport error, unreadable), and the server's `/proc/PID`
//! is sampled every 100 ms. One summary is printed at the end
//! (`support/flood_report.rs`). One call and its classification:
//! `support/flood_call.rs`.

#[path = "../tests/support/client/mod.rs"]
mod client;
#[path = "support/flood_call.rs"]
mod flood_call;
#[path = "support/flood_report.rs"]
mod flood_report;
#[path = "support/proc_stats.rs"]
mod proc_stats;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until, timeout};

use client::McpClient;
use flood_call::{FIRST_TRANSPORT_ERROR, call};
use flood_report::{Outcome, Record, Run, Server, Settings};

const TOOL: &str = "slow_compute";
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
const USAGE: &str = "usage: flood URL PID [--calls N] [--concurrency C] [--timeout-ms MS] \
                     [--seconds S] [--max-run-secs S] [--settle-secs S]";

fn main() {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("flood: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    if proc_stats::read(settings.pid, Duration::ZERO).is_none() {
        eprintln!("flood: no process {} to watch", settings.pid);
        std::process::exit(2);
    }
    // One thread for the client: the other core is left to the server.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let sampler = proc_stats::Sampler::start(settings.pid, SAMPLE_EVERY);
    let run = runtime.block_on(flood(&settings));
    let at_end = proc_stats::read(settings.pid, sampler.started().elapsed());
    // Keep watching while the server holds what the flood left behind.
    std::thread::sleep(settings.settle);
    let server = Server {
        at_end: at_end.unwrap_or_default(),
        time_wait: proc_stats::time_wait_sockets(settings.port),
        readings: sampler.stop(),
    };
    let first_error = FIRST_TRANSPORT_ERROR.get().map(String::as_str);
    flood_report::print(&settings, &run, &server, first_error);
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let mut positional = Vec::new();
    let mut settings = Settings {
        url: String::new(),
        port: 0,
        pid: 0,
        calls: 20_000,
        concurrency: 256,
        timeout: Duration::from_secs(3),
        seconds: 600,
        max_run: Duration::from_secs(600),
        settle: Duration::from_secs(10),
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let text = args.next().ok_or(format!("{name} needs a value"))?;
            text.parse()
                .map_err(|_| format!("{name}: not a number: {text}"))
        };
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--calls" => settings.calls = value(&arg)? as usize,
            "--concurrency" => settings.concurrency = value(&arg)?.max(1) as usize,
            "--timeout-ms" => settings.timeout = Duration::from_millis(value(&arg)?),
            "--seconds" => settings.seconds = value(&arg)?,
            "--max-run-secs" => settings.max_run = Duration::from_secs(value(&arg)?),
            "--settle-secs" => settings.settle = Duration::from_secs(value(&arg)?),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => positional.push(arg),
        }
    }
    let [url, pid] = <[String; 2]>::try_from(positional)
        .map_err(|_| "expected exactly two arguments, URL and PID".to_owned())?;
    settings.port = loopback_port(&url)?;
    settings.pid = pid.parse().map_err(|_| format!("not a PID: {pid}"))?;
    settings.url = url;
    Ok(settings)
}

/// The port of an `http://` URL on a loopback address; anything else is refused.
fn loopback_port(url: &str) -> Result<u16, String> {
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("bad URL {url}: {error}"))?;
    let host = parsed.host_str().unwrap_or("");
    let loopback = host == "localhost"
        || host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if parsed.scheme() != "http" || !loopback {
        return Err(format!("refusing {url}: only http:// on loopback"));
    }
    parsed
        .port_or_known_default()
        .ok_or(format!("no port in {url}"))
}

/// Sends the calls and collects their outcomes.
async fn flood(settings: &Settings) -> Run {
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(settings.concurrency)
        .tcp_nodelay(true)
        .build()
        .expect("HTTP client");
    let mcp = McpClient::new(settings.url.clone());
    let headers = Arc::new(request_headers());
    let gate = Arc::new(Semaphore::new(settings.concurrency));
    let start = Instant::now();
    let deadline = start + settings.max_run;
    let mut records = vec![None; settings.calls];
    let mut running = JoinSet::new();
    let mut sent = 0;
    for seq in 0..settings.calls {
        let permit = tokio::select! {
            permit = gate.clone().acquire_owned() => permit.expect("semaphore is never closed"),
            _ = sleep_until(deadline) => break,
        };
        let id = mcp.next_id();
        let arguments = json!({"name": TOOL, "arguments": {"seconds": settings.seconds}});
        let body = mcp
            .build_request(id, "tools/call", arguments, true)
            .to_string();
        let (http, url, headers) = (http.clone(), settings.url.clone(), headers.clone());
        let limit = settings.timeout;
        running.spawn(async move {
            let sent = Instant::now();
            let outcome = timeout(limit, call(&http, &url, &headers, body, id))
                .await
                .unwrap_or(Outcome::TimedOut);
            drop(permit);
            let record = Record {
                outcome,
                sent_at: sent - start,
                latency: sent.elapsed(),
            };
            (seq, record)
        });
        sent += 1;
        while let Some(done) = running.try_join_next() {
            keep(&mut records, done);
        }
    }
    loop {
        tokio::select! {
            done = running.join_next() => match done {
                Some(done) => keep(&mut records, done),
                None => break,
            },
            _ = sleep_until(deadline) => {
                running.abort_all();
                break;
            }
        }
    }
    Run {
        records,
        sent,
        elapsed: start.elapsed(),
    }
}

fn keep(records: &mut [Option<Record>], done: Result<(usize, Record), tokio::task::JoinError>) {
    if let Ok((seq, record)) = done {
        records[seq] = Some(record);
    }
}

/// The headers of a 2026-07-28 `tools/call` of [`TOOL`], as the tests send them.
fn request_headers() -> HeaderMap {
    McpClient::standard_headers("tools/call", Some(TOOL))
        .into_iter()
        .map(|(name, value)| {
            let name = HeaderName::try_from(name).expect("header name");
            (name, HeaderValue::try_from(value).expect("header value"))
        })
        .collect()
}
