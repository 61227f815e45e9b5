//! The HTTP benchmark's server (issue #11): the rmcp fixture bare and behind
//! `TasksLayer`, in one process, over loopback HTTP, for a load generator.
//!
//! Run it through `scripts/http-bench.sh`, which starts it, drives it with
//! `wrk` and prints the ratios. By hand:
//!
//! ```text
//! cargo bench --bench http_server -- [ADDR] [--workers 1] [--park 10000] [--requests DIR] [--paired]
//! ```
//!
//! | Path             | Serves                                                      |
//! |------------------|-------------------------------------------------------------|
//! | `/bare/json`     | the fixture alone, answering `application/json`             |
//! | `/bare/sse`      | the fixture alone, answering `text/event-stream`            |
//! | `/layered/json`  | the JSON fixture behind the layer                           |
//! | `/layered/sse`   | the SSE fixture behind the layer                            |
//! | `/adapted/json`, `/adapted/sse` | the fixture with the layer's body types but no layer (`support/adapted.rs`): what the `twin` cases measure against the bare routes |
//! | `/layered/park`  | the JSON fixture behind the layer with `greet` and `slow_compute` under `ToolPolicy::Always`; it parks the tasks at startup |
//!
//! The fixture runs stateless (2026-07-28 only). All layered routes share
//! one `MemoryTaskStore` and unscoped layers of one configuration (the JSON
//! and SSE routes one layer: the same server in two answer modes; the park
//! route one of its own, for its policies), with the live-task caps lifted,
//! so a task parked on `/layered/park` is read on `/layered/json`. Before listening, the server parks `--park` tasks
//! (`support/http_park.rs`), then prints `tasks/get target: ID` and
//! `listening on http://ADDR`. ADDR defaults to `127.0.0.1:0` (a free port).
//!
//! Serving runs on one tokio runtime with `--workers` worker threads
//! (default 1, as in the issue's measurement), bare and layered routes
//! alike, its threads named `serve-a`. The tasks are parked on a runtime of
//! their own (one thread, `park`), which also runs the one that stays
//! working, so that their memory is not in a serving thread's malloc arena.
//! The main thread only waits. Serving is `examples/support/http.rs`
//! (HTTP/1.1 with header and body read timeouts). SIGTERM or Ctrl-C stops it.
//!
//! With `--paired` a second runtime, as large and with threads named
//! `serve-b`, serves the same routes (the same layers and store) on a
//! second port, announced as `paired listener on http://ADDR` after the
//! first. The script's side-by-side mode loads one variant on each runtime
//! at the same time, so that both are measured under the same machine speed
//! (see `scripts/http-bench.sh`), and reads each runtime's CPU time from its
//! threads.
//!
//! With `--requests DIR` it writes the load generator's requests into DIR,
//! each as `NAME.body` and `NAME.headers` (`support/http_requests.rs`):
//! `call` (a fast `greet`), `list` (`tools/list`) and `tasks-get` (of the
//! parked target).

#[path = "support/adapted.rs"]
mod adapted;
#[path = "../tests/support/client/mod.rs"]
mod client;
#[path = "../tests/support/fixture/mod.rs"]
mod fixture;
#[path = "support/http_park.rs"]
mod http_park;
#[path = "support/http_requests.rs"]
mod http_requests;
#[path = "../examples/support/http.rs"]
mod serving;

use std::net::SocketAddr;
use std::path::PathBuf;

use mcp_tasks::{MemoryTaskStore, TasksLayer, ToolPolicy};
use tokio::runtime::Handle;
use tower::Layer;

use fixture::{FixtureMode, FixtureOptions, FixtureService, Probe};
use http_requests::{FAST_TOOL, Requests, SLOW_TOOL};

/// The route whose layer parks the benchmark's tasks.
const PARK_PATH: &str = "/layered/park";
/// The route `tasks/get` is measured on.
const READ_PATH: &str = "/layered/json";
const USAGE: &str =
    "usage: http_server [ADDR] [--workers N] [--park N] [--requests DIR] [--paired]";

struct Settings {
    addr: SocketAddr,
    workers: usize,
    park: usize,
    requests: Option<PathBuf>,
    /// A second runtime serving the same routes on a port of its own.
    paired: bool,
}

fn main() {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("http_server: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let runtime = named_runtime(settings.workers, "serve-a");
    let paired = settings
        .paired
        .then(|| named_runtime(settings.workers, "serve-b"));
    // The parked tasks are made, and the one still working runs, on a
    // runtime of their own: their memory then stays out of the serving
    // threads' malloc arenas (10,000 tasks made on `serve-a` slowed every
    // call it served by about a fifth against a clean `serve-b`).
    let parking = named_runtime(1, "park");
    let runtimes = Runtimes {
        paired: paired.as_ref().map(|runtime| runtime.handle().clone()),
        parking: parking.handle().clone(),
    };
    // Spawned, so that the server runs on the workers, not on this thread.
    let outcome = runtime.block_on(async move { tokio::spawn(run(settings, runtimes)).await });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(message)) => {
            eprintln!("http_server: {message}");
            std::process::exit(1);
        }
        Err(panic) => {
            eprintln!("http_server: {panic}");
            std::process::exit(1);
        }
    }
}

/// The runtimes besides the one `run` serves on.
struct Runtimes {
    /// With `--paired`: serves the same router on a port of its own.
    paired: Option<Handle>,
    /// Parks the tasks (and runs the one still working).
    parking: Handle,
}

/// A multi-thread runtime of `workers` threads named `name`.
fn named_runtime(workers: usize, name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let mut settings = Settings {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        workers: 1,
        park: 10_000,
        requests: None,
        paired: false,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let number = |name: &str, text: String| {
            text.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(format!("{name}: not a positive number: {text}"))
        };
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--workers" => settings.workers = number(&arg, value(&arg)?)?,
            "--park" => settings.park = number(&arg, value(&arg)?)?,
            "--requests" => settings.requests = Some(PathBuf::from(value(&arg)?)),
            "--paired" => settings.paired = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            addr => {
                settings.addr = addr
                    .parse()
                    .map_err(|_| format!("not an address: {addr}"))?
            }
        }
    }
    Ok(settings)
}

/// Parks the tasks, then serves until stopped (see [`Runtimes`]).
async fn run(settings: Settings, runtimes: Runtimes) -> Result<(), String> {
    let router = router(settings.park);
    let parking = router.clone();
    let count = settings.park;
    let target = runtimes
        .parking
        .spawn(async move { http_park::park(&parking, PARK_PATH, READ_PATH, count).await })
        .await
        .map_err(|error| format!("parking: {error}"))??;
    println!("parked {} tasks", settings.park);
    println!("tasks/get target: {target}");
    if let Some(dir) = &settings.requests {
        write_requests(dir, &target)
            .map_err(|error| format!("writing requests to {}: {error}", dir.display()))?;
    }
    let listener = tokio::net::TcpListener::bind(settings.addr)
        .await
        .map_err(|error| format!("bind {}: {error}", settings.addr))?;
    let addr = listener.local_addr().map_err(|error| error.to_string())?;
    let Some(second) = runtimes.paired else {
        println!("listening on http://{addr}");
        return serve(listener, router).await;
    };
    let paired = paired_listener(settings.addr)?;
    let paired_addr = paired.local_addr().map_err(|error| error.to_string())?;
    // One write (stdout is line-buffered): a script that has read the first
    // address can read the second.
    print!("listening on http://{addr}\npaired listener on http://{paired_addr}\n");
    let paired_router = router.clone();
    // Registered with the second runtime's reactor, where it is served.
    second.spawn(async move {
        match tokio::net::TcpListener::from_std(paired) {
            Ok(listener) => {
                let _ = serving::serve(listener, paired_router, std::future::pending()).await;
            }
            Err(error) => eprintln!("http_server: paired listener: {error}"),
        }
    });
    serve(listener, router).await
}

/// Serves `router` on `listener` until SIGTERM or Ctrl-C.
async fn serve(listener: tokio::net::TcpListener, router: axum::Router) -> Result<(), String> {
    serving::serve(listener, router, serving::stop_signal())
        .await
        .map_err(|error| error.to_string())
}

/// A listener on `addr`'s address and a free port, not yet registered with
/// any runtime.
fn paired_listener(addr: SocketAddr) -> Result<std::net::TcpListener, String> {
    let free = SocketAddr::new(addr.ip(), 0);
    let listener =
        std::net::TcpListener::bind(free).map_err(|error| format!("bind {free}: {error}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|error| error.to_string())?;
    Ok(listener)
}

/// The routes of the table in the module docs.
fn router(park: usize) -> axum::Router {
    // One store, so that a task parked on `PARK_PATH` is read on
    // `/layered/json`; two layers of one configuration, the park route's
    // with its policies.
    let store = MemoryTaskStore::new();
    let parking = layer(store.clone(), park)
        .tool_policy(FAST_TOOL, ToolPolicy::Always)
        .tool_policy(SLOW_TOOL, ToolPolicy::Always);
    let layer = layer(store, park);
    axum::Router::new()
        .route_service("/bare/json", fixture_service(true))
        .route_service("/bare/sse", fixture_service(false))
        .route_service("/layered/json", layer.layer(fixture_service(true)))
        .route_service("/layered/sse", layer.layer(fixture_service(false)))
        .route_service(PARK_PATH, parking.layer(fixture_service(true)))
        .route_service("/adapted/json", adapted::adapted(fixture_service(true)))
        .route_service("/adapted/sse", adapted::adapted(fixture_service(false)))
}

/// The layer with the default threshold (500 ms), room for `park` live
/// tasks, and no run-time limit (the parked target runs for an hour).
fn layer(store: MemoryTaskStore, park: usize) -> TasksLayer {
    TasksLayer::new(store)
        .max_tasks(None)
        .max_tasks_per_principal(None)
        .max_running(park.max(1_000))
        .max_runtime(None)
}

/// The stateless fixture with its own probe; `json` picks JSON answers.
fn fixture_service(json: bool) -> FixtureService {
    let options = FixtureOptions::new(FixtureMode::Stateless).json_response(json);
    fixture::service_with(options, Probe::new())
}

fn write_requests(dir: &std::path::Path, target: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let requests = Requests::new();
    requests.fast_call(1).write(dir, "call")?;
    requests.tools_list(1).write(dir, "list")?;
    requests.tasks_get(1, target).write(dir, "tasks-get")
}
