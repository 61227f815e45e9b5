//! SSE timing (issue #11): does the layer hold back the events of an SSE
//! answer that comes before the threshold?
//!
//! Against a running `http_server` bench (started by `scripts/http-bench.sh`,
//! case `sse-timing`), a client that declares the tasks extension calls
//! `slow_compute` with a `progressToken` on `/bare/sse` and on
//! `/layered/sse`. The fixture sends `notifications/progress` at once and
//! every 200 ms, then the result. By hand:
//!
//! ```text
//! cargo bench --bench sse_timing -- http://127.0.0.1:PORT \
//!     [--repeats 20] [--seconds 0.45] [--over-seconds 1.0]
//! ```
//!
//! 1. `--repeats` calls of `--seconds` (below the layer's 500 ms threshold)
//!    to each route, alternating which goes first; for the response head
//!    and each event, the median arrival time on each route and the
//!    difference. Target: every event within 5 ms of the bare server's.
//! 2. One call of `--over-seconds` (above the threshold) to each route:
//!    what arrives, and when (on the layered route, the events before the
//!    threshold, then the task handle).
//!
//! Times are from just before the request is sent (`support/sse_arrivals.rs`).

#[path = "../tests/support/client/mod.rs"]
mod client;
#[path = "support/http_requests.rs"]
mod http_requests;
#[path = "support/sse_arrivals.rs"]
mod sse_arrivals;

use std::time::Duration;

use serde_json::json;

use http_requests::{Requests, SLOW_TOOL};
use sse_arrivals::{Arrivals, timed_call};

const ROUTES: [&str; 2] = ["/bare/sse", "/layered/sse"];
/// The issue's target: each event within this of the bare server's timing.
const TARGET_MS: f64 = 5.0;
const USAGE: &str = "usage: sse_timing BASE_URL [--repeats N] [--seconds S] [--over-seconds S]";

struct Settings {
    base: String,
    repeats: usize,
    seconds: f64,
    over_seconds: f64,
}

fn main() {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("sse_timing: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(message) = runtime.block_on(run(&settings)) {
        eprintln!("sse_timing: {message}");
        std::process::exit(1);
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let mut settings = Settings {
        base: String::new(),
        repeats: 20,
        seconds: 0.45,
        over_seconds: 1.0,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<f64, String> {
            let text = args.next().ok_or(format!("{name} needs a value"))?;
            text.parse::<f64>()
                .ok()
                .filter(|value| value.is_finite() && *value > 0.0)
                .ok_or(format!("{name}: not a positive number: {text}"))
        };
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--repeats" => settings.repeats = value(&arg)? as usize,
            "--seconds" => settings.seconds = value(&arg)?,
            "--over-seconds" => settings.over_seconds = value(&arg)?,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ if settings.base.is_empty() => settings.base = arg.trim_end_matches('/').to_owned(),
            _ => return Err(format!("unexpected argument {arg}")),
        }
    }
    if settings.base.is_empty() {
        return Err("the server's base URL is missing".to_owned());
    }
    settings.repeats = settings.repeats.max(1);
    Ok(settings)
}

async fn run(settings: &Settings) -> Result<(), String> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .build()
        .map_err(|error| error.to_string())?;
    let requests = Requests::new();
    let mut next_id = 0;
    let mut call = |route: &str, seconds: f64| {
        next_id += 1;
        let request = requests.tool_call(
            next_id,
            SLOW_TOOL,
            json!({"seconds": seconds}),
            json!({"progressToken": format!("sse-timing-{next_id}")}),
        );
        let url = format!("{}{route}", settings.base);
        let http = http.clone();
        async move { timed_call(&http, &url, &request).await }
    };

    // One unmeasured call each opens the connections.
    for route in ROUTES {
        call(route, 0.01).await?;
    }
    let mut seen: [Vec<Arrivals>; 2] = [Vec::new(), Vec::new()];
    for round in 0..settings.repeats {
        for turn in 0..2 {
            let which = (round + turn) % 2;
            seen[which].push(call(ROUTES[which], settings.seconds).await?);
        }
    }
    print_below_threshold(settings, &seen);

    println!();
    println!(
        "Above the threshold: one call of slow_compute {{seconds: {}}} per route",
        settings.over_seconds
    );
    for route in ROUTES {
        let arrivals = call(route, settings.over_seconds).await?;
        println!(
            "  {route}: response head at {} ({})",
            ms(arrivals.head),
            arrivals.content_type
        );
        for (at, what) in &arrivals.events {
            println!("    {:>9}  {what}", ms(*at));
        }
    }
    Ok(())
}

/// The per-event medians of both routes and their difference.
fn print_below_threshold(settings: &Settings, seen: &[Vec<Arrivals>; 2]) {
    println!(
        "SSE timing: slow_compute {{seconds: {}}} with a progressToken, {} calls per route, \
         alternating; median arrival, ms from sending the request",
        settings.seconds, settings.repeats
    );
    println!(
        "{:<28} {:>10} {:>10} {:>16}",
        "event", "bare", "layered", "layered - bare"
    );
    let heads = seen
        .each_ref()
        .map(|calls| median(calls.iter().map(|c| c.head)));
    print_row("response head", heads);
    let events = seen
        .iter()
        .flatten()
        .map(|arrivals| arrivals.events.len())
        .min()
        .unwrap_or(0);
    let mut worst: Option<f64> = None;
    for k in 0..events {
        let times = seen
            .each_ref()
            .map(|calls| median(calls.iter().map(|c| c.events[k].0)));
        let labels = seen.each_ref().map(|calls| calls[0].events[k].1.as_str());
        let label = if labels[0] == labels[1] {
            labels[0].to_owned()
        } else {
            format!("{} / {}", labels[0], labels[1])
        };
        print_row(&format!("{}. {label}", k + 1), times);
        let late = (times[1].as_secs_f64() - times[0].as_secs_f64()) * 1e3;
        worst = Some(worst.map_or(late, |worst: f64| worst.max(late)));
    }
    if let Some(worst) = worst {
        let met = if worst <= TARGET_MS { "met" } else { "not met" };
        println!(
            "Largest layered - bare over the events: {worst:+.1} ms \
             (target: each within {TARGET_MS} ms): {met}"
        );
    }
}

fn print_row(label: &str, [bare, layered]: [Duration; 2]) {
    let difference = (layered.as_secs_f64() - bare.as_secs_f64()) * 1e3;
    println!(
        "{label:<28} {:>10} {:>10} {difference:>+13.1} ms",
        ms(bare),
        ms(layered)
    );
}

fn median(times: impl Iterator<Item = Duration>) -> Duration {
    let mut times: Vec<Duration> = times.collect();
    times.sort_unstable();
    match times.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => times[n / 2],
        n => (times[n / 2 - 1] + times[n / 2]) / 2,
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}
