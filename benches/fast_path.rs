//! The layer's cost on its fast path, in process, over the real rmcp
//! fixture (issue #11): the HTTP benchmark's routes and requests
//! (`benches/http_server.rs`) called through the router's `oneshot`, without
//! sockets, so that what the layer adds to a realistic inner server shows
//! without the loopback's noise.
//!
//! Run: `cargo bench --bench fast_path`. Each group measures the same
//! request bare and behind the layer, in the same run, on a current-thread
//! runtime (the inner server's tasks run on the measuring thread, so a
//! figure is the CPU time of one call):
//!
//! | Group       | Request (declaring client)       | Routes                        |
//! |-------------|----------------------------------|-------------------------------|
//! | `call_json` | fast `tools/call` (`greet`)      | `/bare/json`, `/layered/json` |
//! | `call_sse`  | the same, SSE answer             | `/bare/sse`, `/layered/sse`   |
//! | `list`      | `tools/list` (passes through)    | `/bare/json`, `/layered/json` |
//!
//! Every answer is read to its end and checked to be a JSON-RPC result.
//!
//! Criterion measures one variant after the other, and this machine's speed
//! drifts by more than the layer's cost between them. `cargo bench --bench
//! fast_path -- --paired [ROUNDS] [CALLS] [--multi]` (30 rounds of 1,000
//! calls by default) alternates instead: each round times CALLS calls bare
//! and CALLS layered, in an order that flips every round, and the report
//! gives the median of the rounds' own ratios. `--multi` runs the calls on a
//! one-worker multi-thread runtime, as the HTTP benchmark's server does.
//!
//! `--count CASE VARIANT CALLS` only makes CALLS calls, untimed: the fixed
//! workload that `scripts/instructions.sh` runs under valgrind to count the
//! instructions of one call, bare and layered.
//!
//! Results: `BENCHMARKS.md`, "HTTP over loopback (issue #11)".

#[path = "../tests/support/client/mod.rs"]
mod client;
#[path = "../tests/support/fixture/mod.rs"]
mod fixture;
#[path = "support/http_requests.rs"]
mod http_requests;
#[path = "support/routes.rs"]
mod routes;

use criterion::{Criterion, criterion_group};
use http_body_util::BodyExt;
use tower::ServiceExt;

use http_requests::{Prepared, Requests};
use routes::router;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// One call of `request` on `path`, its answer read whole and checked.
async fn roundtrip(router: axum::Router, request: &Prepared, path: &str) {
    let response = router
        .oneshot(request.to_request(path))
        .await
        .expect("infallible");
    assert_eq!(response.status(), http::StatusCode::OK, "{path}");
    let body = response.into_body().collect().await.expect("body");
    let body = body.to_bytes();
    assert!(
        body.windows(9).any(|w| w == br#""result":"#),
        "{path}: {}",
        String::from_utf8_lossy(&body)
    );
}

/// The measured cases: name, request, and the answer mode of the routes.
fn cases() -> [(&'static str, Prepared, &'static str); 3] {
    let requests = Requests::new();
    [
        ("call_json", requests.fast_call(1), "json"),
        ("call_sse", requests.fast_call(1), "sse"),
        ("list", requests.tools_list(1), "json"),
    ]
}

fn fast_path(c: &mut Criterion) {
    let rt = runtime();
    let router = router();
    let cases = cases();
    for (name, request, answers) in &cases {
        let mut group = c.benchmark_group(*name);
        for variant in ["bare", "layered"] {
            let path = format!("/{variant}/{answers}");
            group.bench_function(variant, |b| {
                b.to_async(&rt)
                    .iter(|| roundtrip(router.clone(), request, &path))
            });
        }
        group.finish();
    }
}

/// `--paired [ROUNDS] [CALLS]`: rounds of CALLS calls bare then layered
/// (the order flips every round), so that both variants of a round see the
/// same machine; prints each case's median time per call and the median of
/// the rounds' own throughput ratios (layered / bare). With `--multi`, the
/// calls run as a task of a one-worker multi-thread runtime, the flavour of
/// the HTTP benchmark's server.
fn paired(rounds: usize, calls: usize, multi: bool) {
    let rt = if multi {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime")
    } else {
        runtime()
    };
    let router = router();
    let cases = cases();
    let flavour = if multi {
        "one-worker multi-thread"
    } else {
        "current-thread"
    };
    println!(
        "paired: {rounds} rounds of {calls} calls per variant, order flipped every round, {flavour} runtime"
    );
    println!(
        "| Case | Bare µs/call | Layered µs/call | Added µs | Ratio (median of rounds) | Rounds' ratios p25–p75 |"
    );
    println!(
        "|------|-------------:|----------------:|---------:|-------------------------:|------------------------|"
    );
    for (name, request, answers) in &cases {
        let bare_path = format!("/bare/{answers}");
        let layered_path = format!("/layered/{answers}");
        let batch = |path: &str| {
            let (router, request, path) = (router.clone(), request.clone(), path.to_owned());
            let started = std::time::Instant::now();
            let work = async move {
                for _ in 0..calls {
                    roundtrip(router.clone(), &request, &path).await;
                }
            };
            if multi {
                rt.block_on(rt.spawn(work)).expect("the calls panicked");
            } else {
                rt.block_on(work);
            }
            started.elapsed().as_secs_f64() * 1e6 / calls as f64
        };
        batch(&bare_path);
        batch(&layered_path);
        let (mut bare, mut layered, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (b, l) = if round % 2 == 0 {
                let b = batch(&bare_path);
                (b, batch(&layered_path))
            } else {
                let l = batch(&layered_path);
                (batch(&bare_path), l)
            };
            bare.push(b);
            layered.push(l);
            ratios.push(b / l);
        }
        let (b, l) = (quantile(&mut bare, 0.5), quantile(&mut layered, 0.5));
        println!(
            "| {name} | {b:.2} | {l:.2} | {:+.2} | {:.3}× | {:.3}–{:.3} |",
            l - b,
            quantile(&mut ratios, 0.5),
            quantile(&mut ratios, 0.25),
            quantile(&mut ratios, 0.75),
        );
    }
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// `--count CASE VARIANT CALLS`: only CALLS calls of one case on one
/// variant, nothing timed: a fixed workload for an instruction counter
/// (`scripts/instructions.sh` runs it under valgrind).
fn count(case: &str, variant: &str, calls: usize) {
    let rt = runtime();
    let router = router();
    let (_, request, answers) = cases()
        .into_iter()
        .find(|(name, _, _)| *name == case)
        .unwrap_or_else(|| panic!("no case {case}"));
    let path = format!("/{variant}/{answers}");
    rt.block_on(async {
        for _ in 0..calls {
            roundtrip(router.clone(), &request, &path).await;
        }
    });
}

criterion_group!(benches, fast_path);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let multi = args.iter().any(|arg| arg == "--multi");
    let args: Vec<String> = args.into_iter().filter(|arg| arg != "--multi").collect();
    if let Some(at) = args.iter().position(|arg| arg == "--paired") {
        let number = |index: usize, default: usize| {
            args.get(index)
                .and_then(|n| n.parse().ok())
                .unwrap_or(default)
        };
        paired(number(at + 1, 30), number(at + 2, 1000), multi);
        return;
    }
    if let Some(at) = args.iter().position(|arg| arg == "--count") {
        let arg = |index: usize| args.get(at + index).map(String::as_str).unwrap_or_default();
        count(arg(1), arg(2), arg(3).parse().unwrap_or(1000));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
