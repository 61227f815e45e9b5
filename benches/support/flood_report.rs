//! The flood bench's settings, per-call records and summary (Markdown tables,
//! ready to paste into `BENCHMARKS.md`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::proc_stats::Reading;

/// What the flood was asked to do.
pub struct Settings {
    pub url: String,
    pub port: u16,
    pub pid: u32,
    pub calls: usize,
    pub concurrency: usize,
    pub timeout: Duration,
    /// `slow_compute`'s `seconds` argument.
    pub seconds: u64,
    pub max_run: Duration,
    /// How long to keep watching the server after the flood.
    pub settle: Duration,
}

/// What was seen of the server.
pub struct Server {
    /// Every 100 ms from just before the flood to the end of the settle time.
    pub readings: Vec<Reading>,
    /// Read when the flood ended.
    pub at_end: Reading,
    /// Sockets in `TIME_WAIT` on the server's port after the settle time.
    pub time_wait: usize,
}

/// How one call ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// A `CreateTaskResult` (`resultType: "task"`).
    Parked,
    /// Any other JSON-RPC result.
    Synchronous,
    /// A JSON-RPC error, by code.
    RpcError(i64),
    /// No answer within the client timeout: the client hung up.
    TimedOut,
    /// Connecting, sending or reading failed.
    Transport,
    /// An answer that held no JSON-RPC response for the call (HTTP status).
    Unreadable(u16),
}

/// One call that got an outcome.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub outcome: Outcome,
    /// When it was sent, since the flood started.
    pub sent_at: Duration,
    /// From sending to its outcome.
    pub latency: Duration,
}

/// What one flood did.
pub struct Run {
    /// One entry per call, in send order; `None`: not sent, or sent and cut
    /// by the run limit.
    pub records: Vec<Option<Record>>,
    /// Calls sent.
    pub sent: usize,
    /// From the first call sent to the last outcome (or the run limit).
    pub elapsed: Duration,
}

/// Prints the summary of one flood.
pub fn print(settings: &Settings, run: &Run, server: &Server, first_transport_error: Option<&str>) {
    println!(
        "\nFlood: {} tools/call slow_compute {{seconds: {}}} to {} (server PID {})",
        group(settings.calls as u64),
        settings.seconds,
        settings.url,
        settings.pid
    );
    println!(
        "One anonymous 2026-07-28 client declaring the tasks extension; {} in flight, \
         client timeout {:?}, run limit {:?}.\n",
        settings.concurrency, settings.timeout, settings.max_run
    );
    let parked = print_outcomes(run);
    print_first_refusal(&run.records);
    print_measures(run, parked);
    print_server(server, run.elapsed, parked);
    print_series(&server.readings);
    if let Some(error) = first_transport_error {
        println!("\nFirst transport error: {error}");
    }
}

/// The outcome table; returns the number of parked calls.
fn print_outcomes(run: &Run) -> u64 {
    let records = &run.records;
    let mut counts: BTreeMap<Outcome, u64> = BTreeMap::new();
    for record in records.iter().flatten() {
        *counts.entry(record.outcome).or_default() += 1;
    }
    let count = |outcome| counts.get(&outcome).copied().unwrap_or(0);
    let sent = run.sent;
    let cut = records[..sent].iter().filter(|r| r.is_none()).count() as u64;
    println!("| Outcome | Calls |\n|---|---:|");
    println!(
        "| parked (`CreateTaskResult`) | {} |",
        group(count(Outcome::Parked))
    );
    println!(
        "| answered synchronously | {} |",
        group(count(Outcome::Synchronous))
    );
    for (outcome, n) in &counts {
        match outcome {
            Outcome::RpcError(code) => println!("| JSON-RPC error {code} | {} |", group(*n)),
            Outcome::Unreadable(status) => {
                println!("| no JSON-RPC response (HTTP {status}) | {} |", group(*n))
            }
            _ => {}
        }
    }
    println!(
        "| timed out (client hung up) | {} |",
        group(count(Outcome::TimedOut))
    );
    println!("| transport error | {} |", group(count(Outcome::Transport)));
    println!("| sent, cut by the run limit | {} |", group(cut));
    println!(
        "| not sent (run limit) | {} |",
        group((records.len() - sent) as u64)
    );
    println!("| **total** | {} |\n", group(records.len() as u64));
    count(Outcome::Parked)
}

/// How many calls were parked before the first one (in send order) that
/// was not: the point where a cap held, if one did.
fn print_first_refusal(records: &[Option<Record>]) {
    let first = records
        .iter()
        .enumerate()
        .find_map(|(seq, r)| r.filter(|r| r.outcome != Outcome::Parked).map(|r| (seq, r)));
    match first {
        None => println!("Every call that got an outcome was parked.\n"),
        Some((seq, record)) => {
            let parked_before = records[..seq].iter().flatten().count();
            println!(
                "Parked before the first call that was not: {} (call #{} sent at {:.1} s: {:?})\n",
                group(parked_before as u64),
                seq + 1,
                record.sent_at.as_secs_f64(),
                record.outcome
            );
        }
    }
}

fn print_measures(run: &Run, parked: u64) {
    let answered = run.records.iter().flatten().count() as f64;
    let secs = run.elapsed.as_secs_f64();
    let mut latencies: Vec<Duration> = run
        .records
        .iter()
        .flatten()
        .filter(|r| r.outcome == Outcome::Parked)
        .map(|r| r.latency)
        .collect();
    latencies.sort();
    let at = |q: f64| {
        let i = ((latencies.len().max(1) - 1) as f64 * q).round() as usize;
        latencies
            .get(i)
            .map_or("—".to_owned(), |l| format!("{:.2}", l.as_secs_f64()))
    };
    println!("| Measure | Value |\n|---|---:|");
    println!("| flood duration | {secs:.1} s |");
    println!("| outcomes per second | {:.0} |", answered / secs);
    println!("| parked per second | {:.0} |", parked as f64 / secs);
    println!(
        "| parked answer latency p50 / p99 / max | {} / {} / {} s |",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// The server's memory, descriptors and CPU, in the same table.
fn print_server(server: &Server, flood: Duration, parked: u64) {
    let readings = &server.readings;
    let first = readings.first().copied().unwrap_or_default();
    let last = readings.last().copied().unwrap_or_default();
    let end = server.at_end;
    let peak = readings.iter().map(|r| r.hwm_kib).max().unwrap_or(0);
    let max_fds = readings.iter().map(|r| r.fds).max().unwrap_or(0);
    let max_threads = readings.iter().map(|r| r.threads).max().unwrap_or(0);
    let per_parked = match parked {
        0 => "—".to_owned(),
        n => format!(
            "{:.1} KB",
            peak.saturating_sub(first.rss_kib) as f64 * 1.024 / n as f64
        ),
    };
    let settle = last.at.saturating_sub(end.at).as_secs_f64();
    let share = |cpu: f64, secs: f64| 100.0 * cpu / secs.max(f64::EPSILON);
    let flood_cpu = end.cpu_secs - first.cpu_secs;
    let settle_cpu = last.cpu_secs - end.cpu_secs;
    println!("| server VmRSS at start | {} |", mib(first.rss_kib));
    println!(
        "| server VmRSS at the end of the flood | {} |",
        mib(end.rss_kib)
    );
    println!(
        "| server VmRSS {settle:.0} s later | {} |",
        mib(last.rss_kib)
    );
    println!("| **server VmHWM (peak)** | **{}** |", mib(peak));
    println!("| (peak − start) / parked call | {per_parked} |");
    println!(
        "| server open fds: start / peak / end | {} / {max_fds} / {} |",
        first.fds, last.fds
    );
    println!("| server threads (peak) | {max_threads} |");
    println!(
        "| server CPU during the flood | {flood_cpu:.1} s ({:.0}% of one core) |",
        share(flood_cpu, flood.as_secs_f64())
    );
    println!(
        "| server CPU in the {settle:.0} s after (holding only) | {settle_cpu:.1} s ({:.0}% of one core) |",
        share(settle_cpu, settle)
    );
    println!(
        "| TIME_WAIT sockets on the server port at the end | {} |",
        server.time_wait
    );
}

/// The server over time, about a dozen rows.
fn print_series(server: &[Reading]) {
    let Some(end) = server.last() else { return };
    let step = (end.at / 12).max(Duration::from_secs(2));
    println!("\n| t | VmRSS | fds | CPU |\n|---:|---:|---:|---:|");
    let mut next = Duration::ZERO;
    for (i, reading) in server.iter().enumerate() {
        if reading.at >= next || i + 1 == server.len() {
            println!(
                "| {:.1} s | {} | {} | {:.1} s |",
                reading.at.as_secs_f64(),
                mib(reading.rss_kib),
                reading.fds,
                reading.cpu_secs - server[0].cpu_secs
            );
            next = reading.at + step;
        }
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// `20000` → `20,000`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
