//! The gateway's service: the Host/Origin guard, `TasksLayer`, and the
//! reverse proxy to the upstream, built from the settings.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, header};
use mcp_tasks::observe::ToolStats;
use mcp_tasks::{
    Admin, Drain, MemoryTaskStore, RedisTaskStore, SqliteTaskStore, TasksConfig, TasksLayer,
};
use mcp_tasks_gateway::generation::{
    DEFAULT_MAX_MESSAGE_BYTES, GenerationBridge, UpstreamGeneration,
};
use mcp_tasks_gateway::proxy::Proxy;
use mcp_tasks_gateway::stdio::StdioUpstream;
use tower::ServiceBuilder;

use crate::guard::{self, Guard};
use crate::oauth;
use crate::serving::Limits;
use crate::settings::{Args, Human};
use crate::upstream::Upstream;

/// Everything `main` needs to serve.
pub struct App {
    /// The path the MCP endpoint is served at.
    pub path: String,
    /// The routes.
    pub router: Router,
    /// Drains the layer's tasks on shutdown.
    pub drain: Drain,
    /// The operator's view of the layer's store (the live-task gauge).
    pub admin: Admin,
    /// What a client may hold of the server.
    pub limits: Limits,
    /// How long running tasks get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// The stdio server the gateway started, to stop after the drain.
    pub stdio: Option<StdioUpstream>,
}

/// A setting's value, or its default when unset; `none` is refused.
fn required(value: Option<Human>, default: Duration, name: &str) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(Human(Some(duration))) => Ok(duration),
        Some(Human(None)) => Err(format!("--{name} cannot be none")),
    }
}

/// The layer's threshold: `--threshold`, or the layer's default.
pub fn threshold(args: &Args) -> Result<Duration, String> {
    required(
        args.threshold,
        TasksConfig::default().threshold(),
        "threshold",
    )
}

/// A setting that `none` lifts, or its default when unset.
/// How much longer than `--max-runtime` the upstream may take to send the
/// head of a tool call: the layer's runtime limit ends a parked call first,
/// with its own message.
const RUNTIME_MARGIN: Duration = Duration::from_secs(10);

fn optional(value: Option<Human>, default: Option<Duration>) -> Option<Duration> {
    value.map_or(default, |Human(duration)| duration)
}

impl App {
    /// Checks the settings and builds the gateway listening on `local`;
    /// connects to Redis and fetches the OAuth keys when asked.
    /// `stats`, when given, gets the layer's calls (the console's figures).
    pub async fn build(
        args: Args,
        local: SocketAddr,
        stats: Option<ToolStats>,
    ) -> Result<Self, String> {
        let path = args.path.clone().unwrap_or_else(|| "/mcp".to_owned());
        // A JSON answer's head comes when the tool ends: by default the
        // upstream may take as long as a task may run.
        let max_runtime = optional(args.max_runtime, TasksConfig::default().max_runtime());
        let upstream = upstream(&args, max_runtime).await?;
        let mut layer = layer(&args).await?;
        if let Some(stats) = stats {
            layer = layer.observe_calls(stats);
        }
        let tasks = layer.build();
        if fallback_on(&args) {
            crate::listing::log_fallback(upstream.clone(), tasks.config().clone());
        }
        let drain = tasks.drain();
        let admin = tasks.admin();
        let guard = Arc::new(Guard::new(local, &args.allowed_host, &args.allowed_origin));
        let stdio = match &upstream {
            Upstream::Stdio(stdio) => Some(stdio.clone()),
            Upstream::Http(_) => None,
        };
        let service = ServiceBuilder::new().layer(tasks).service(upstream);
        let own_url = format!("http://{local}{path}");
        let own_url = (!local.ip().is_unspecified()).then_some(own_url.as_str());
        let router = match oauth::from_args(&args, own_url).await? {
            None => Router::new().route_service(&path, service),
            Some(oauth) => {
                // OAuthLayer outside TasksLayer: tasks belong to the token's
                // subject. It wants axum's body back from inside.
                let service = ServiceBuilder::new()
                    .layer(oauth.layer)
                    .map_response(|response: http::Response<_>| response.map(Body::new))
                    .service(service);
                let metadata = serde_json::to_vec(&oauth.metadata).map_err(|e| e.to_string())?;
                let metadata = bytes::Bytes::from(metadata);
                Router::new().route_service(&path, service).route(
                    &oauth.path,
                    axum::routing::get(move || std::future::ready(json(metadata.clone()))),
                )
            }
        };
        let router = router.layer(axum::middleware::from_fn_with_state(guard, guard::check));
        let defaults = Limits::default();
        let limits = Limits {
            header_read_timeout: required(
                args.header_timeout,
                defaults.header_read_timeout,
                "header-timeout",
            )?,
            body_read_timeout: required(
                args.body_timeout,
                defaults.body_read_timeout,
                "body-timeout",
            )?,
            max_connections: args.max_connections.unwrap_or(defaults.max_connections),
            max_connections_per_client: args
                .max_connections_per_client
                .unwrap_or(defaults.max_connections_per_client),
        };
        Ok(Self {
            path,
            router,
            drain,
            admin,
            limits,
            shutdown_grace: required(
                args.shutdown_grace,
                Duration::from_secs(10),
                "shutdown-grace",
            )?,
            stdio,
        })
    }
}

/// The refusal of `--sqlite` beside `--redis` or `--redis-cluster`.
const TWO_STORES: &str = "--redis and --sqlite both name a task store: choose one \
                          (--sqlite for a single gateway, --redis for several)";

/// What the settings must say whatever else they say, checked by
/// `--check` as at start: one upstream, a URL the proxy takes, one task
/// store, and stdio settings only for a stdio server.
pub fn check(args: &Args) -> Result<(), String> {
    if args.max_connections == Some(0) || args.max_connections_per_client == Some(0) {
        return Err("--max-connections and --max-connections-per-client must be at least 1".into());
    }
    generation(args)?;
    let never_none = [
        (args.threshold, "threshold"),
        (args.header_timeout, "header-timeout"),
        (args.body_timeout, "body-timeout"),
        (args.shutdown_grace, "shutdown-grace"),
        (args.start_timeout, "start-timeout"),
        (args.place_timeout, "place-timeout"),
        (args.upstream_idle_timeout, "upstream-idle-timeout"),
        (args.keep_alive, "keep-alive"),
    ];
    for (value, name) in never_none {
        required(value, Duration::ZERO, name)?;
    }
    let path = args.path.as_deref().unwrap_or("/mcp");
    if !path.starts_with('/') || path.contains(['{', '}', '*', '?', '#']) {
        return Err(format!(
            "--path {path:?} must start with / and hold no {{, }}, *, ? or #"
        ));
    }
    if redis_nodes(args)?.is_some() && args.sqlite.is_some() {
        return Err(TWO_STORES.into());
    }
    if let Some(url) = &args.upstream {
        Proxy::builder(url).map_err(|e| e.to_string())?;
    }
    if args.upstream_generation.is_some() && args.upstream.is_none() {
        return Err(
            "--upstream-generation is for an HTTP upstream (a stdio server is asked at start)"
                .into(),
        );
    }
    match (&args.upstream, args.command.is_empty()) {
        (Some(_), false) => Err("give --upstream URL or a command after --, not both".into()),
        (None, true) => Err(
            "an upstream is required: --upstream URL (or MCP_TASKS_UPSTREAM, or upstream in --config), or a stdio server's command after --"
                .into(),
        ),
        (Some(_), true)
            if args.instances.is_some()
                || args.max_in_flight.is_some()
                || args.place_timeout.is_some() =>
        {
            Err("--instances, --max-in-flight and --place-timeout are for a stdio server (a command after --)".into())
        }
        _ => Ok(()),
    }
}

/// `--upstream-generation`, read.
fn generation(args: &Args) -> Result<UpstreamGeneration, String> {
    match &args.upstream_generation {
        Some(text) => text
            .parse()
            .map_err(|e| format!("--upstream-generation: {e}")),
        None => Ok(UpstreamGeneration::Auto),
    }
}

/// The server to front: `--upstream URL` through the reverse proxy (and
/// the generation bridge), or the command after `--`, started (and
/// initialized) now, before the gateway listens.
async fn upstream(args: &Args, max_runtime: Option<Duration>) -> Result<Upstream, String> {
    check(args)?;
    // How long a tools/call, and any other request, may wait for the
    // upstream, on either transport.
    let call_timeout = optional(
        args.upstream_header_timeout,
        max_runtime.map(|runtime| runtime.saturating_add(RUNTIME_MARGIN)),
    );
    let request_timeout = optional(args.upstream_request_timeout, Some(Duration::from_secs(60)));
    match (&args.upstream, args.command.split_first()) {
        (Some(_), Some(_)) | (None, None) => Err("one upstream, checked above".into()),
        (None, Some((program, rest))) => {
            let mut builder = StdioUpstream::builder(program).args(rest);
            for var in &args.env {
                builder = builder.env(&var.key, &var.value);
            }
            if let Some(cwd) = &args.cwd {
                builder = builder.cwd(cwd);
            }
            let start = required(args.start_timeout, Duration::from_secs(60), "start-timeout")?;
            builder = builder
                .start_timeout(start)
                .instances(args.instances.unwrap_or(1));
            if let Some(max) = args.max_body_bytes {
                builder = builder.max_message_bytes(max);
            }
            if let Some(max) = args.max_in_flight {
                builder = builder.max_in_flight(max);
            }
            let wait = required(args.place_timeout, Duration::from_secs(30), "place-timeout")?;
            // The same bounds as an HTTP upstream's: a child that does not
            // answer holds no call, and no place, for ever.
            builder = builder
                .place_timeout(wait)
                .call_timeout(call_timeout)
                .request_timeout(request_timeout);
            let stdio = builder.start().await.map_err(|error| error.to_string())?;
            Ok(Upstream::Stdio(stdio))
        }
        (Some(url), None) => {
            let proxy = Proxy::builder(url)
                .map_err(|e| e.to_string())?
                .connect_timeout(optional(
                    args.upstream_connect_timeout,
                    Some(Duration::from_secs(5)),
                ))
                .header_timeout(call_timeout)
                .request_timeout(request_timeout)
                .pool(
                    required(
                        args.upstream_idle_timeout,
                        Duration::from_secs(4),
                        "upstream-idle-timeout",
                    )?,
                    64,
                )
                .forward_authorization(args.forward_authorization.unwrap_or(true))
                .build();
            let connect = optional(args.upstream_connect_timeout, Some(Duration::from_secs(5)));
            let required = args.require_upstream.unwrap_or(false);
            crate::upstream::probe(url, connect, required).await?;
            let max = args.max_body_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES);
            let bridge =
                GenerationBridge::new(proxy, generation(args)?).with_max_message_bytes(max);
            // Its generation asked and logged now, in the background: a
            // slow or absent upstream holds up no start.
            let detecting = bridge.clone();
            tokio::spawn(async move { detecting.detect().await });
            Ok(Upstream::Http(Box::new(bridge)))
        }
    }
}

/// Whether the fallback for clients without tasks is on for some tool.
fn fallback_on(args: &Args) -> bool {
    matches!(args.fallback_after, Some(Human(Some(_))))
        || args.fallback.iter().any(|rule| rule.after.is_some())
}

/// A `200` JSON response.
fn json(body: bytes::Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The Redis nodes named by `--redis` or `--redis-cluster` (at most one of
/// them), with the flag that named them.
fn redis_nodes(args: &Args) -> Result<Option<(&'static str, Vec<String>)>, String> {
    match (&args.redis, args.redis_cluster.is_empty()) {
        (Some(_), false) => Err("--redis and --redis-cluster both name a Redis: choose one \
                                 (--redis-cluster takes the seed nodes of a cluster)"
            .to_owned()),
        (Some(url), true) => Ok(Some(("--redis", vec![url.clone()]))),
        (None, false) => Ok(Some(("--redis-cluster", args.redis_cluster.clone()))),
        (None, true) => Ok(None),
    }
}

/// `TasksLayer` with the store and the task settings.
async fn layer(args: &Args) -> Result<TasksLayer, String> {
    let redis = redis_nodes(args)?;
    let mut layer = match (redis, &args.sqlite) {
        (Some(_), Some(_)) => return Err(TWO_STORES.to_owned()),
        (Some((flag, nodes)), None) => {
            let wait = args.redis_wait_replicas.unwrap_or(0);
            let mut builder = RedisTaskStore::builder(nodes.clone())
                .wait_for_replicas(wait, Duration::from_millis(250));
            match args.redis_lease {
                Some(Human(Some(lease))) => builder = builder.lease(lease),
                Some(Human(None)) => return Err("--redis-lease needs a duration".to_owned()),
                None => {}
            }
            let store = builder
                .connect()
                .await
                .map_err(|e| format!("{flag} {}: {e}", nodes.join(",")))?;
            TasksLayer::new(store)
        }
        (None, Some(path)) => {
            let store = SqliteTaskStore::open(path)
                .await
                .map_err(|e| format!("--sqlite {}: {e}", path.display()))?;
            TasksLayer::new(store)
        }
        (None, None) => TasksLayer::new(MemoryTaskStore::new()),
    };
    layer = layer.threshold(threshold(args)?);
    if let Some(Human(ttl)) = args.ttl {
        layer = layer.ttl(ttl);
    }
    if let Some(Human(max_ttl)) = args.max_ttl {
        layer = layer.max_ttl(max_ttl);
    }
    if let Some(Human(interval)) = args.poll_interval {
        layer = layer.poll_interval(interval);
    }
    if let Some(Human(max_runtime)) = args.max_runtime {
        layer = layer.max_runtime(max_runtime);
    }
    if let Some(max) = args.max_tasks {
        layer = layer.max_tasks(Some(max));
    }
    if let Some(max) = args.max_tasks_per_principal {
        layer = layer.max_tasks_per_principal(Some(max));
    }
    if let Some(max) = args.max_running {
        layer = layer.max_running(max);
    }
    if let Some(max) = args.max_body_bytes {
        layer = layer.max_body_bytes(max).max_result_bytes(max);
    }
    if let Some(Human(interval)) = args.keep_alive {
        let interval = interval.ok_or("--keep-alive cannot be none")?;
        layer = layer.keep_alive(interval);
    }
    for rule in &args.policy {
        layer = layer.tool_policy(rule.tool.clone(), rule.policy);
    }
    for rule in &args.retry {
        layer = layer.tool_retry(rule.tool.clone(), rule.attempts);
    }
    if let Some(on) = args.retry_hints {
        layer = layer.retry_hints(on);
    }
    // `none` leaves it off, as without the option.
    if let Some(Human(Some(after))) = args.fallback_after {
        layer = layer.fallback_after(after);
    }
    for rule in &args.fallback {
        layer = layer.tool_fallback(rule.tool.clone(), rule.after);
    }
    if let Some(names) = &args.fallback_tools {
        layer = layer.fallback_tool_names(names.result.clone(), names.cancel.clone());
    }
    if let Some(events) = crate::events::events(args)? {
        layer = layer.events(events);
    }
    Ok(layer)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[tokio::test]
    async fn naming_both_redis_and_sqlite_is_an_error_at_start() {
        // Refused before anything connects: no Redis listens on port 1.
        let args = Args::parse_from(["gw", "--redis", "redis://127.0.0.1:1/", "--sqlite", "t.db"]);
        let refused = layer(&args).await.err();
        let refused = refused.expect("two task stores are refused");
        assert!(
            refused.contains("--redis and --sqlite") && refused.contains("choose one"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn naming_both_redis_and_a_redis_cluster_is_an_error_at_start() {
        let args = Args::parse_from([
            "gw",
            "--redis",
            "redis://127.0.0.1:1/",
            "--redis-cluster",
            "redis://127.0.0.1:2,redis://127.0.0.1:3",
        ]);
        assert_eq!(args.redis_cluster.len(), 2, "comma-separated seeds");
        let refused = layer(&args).await.err();
        let refused = refused.expect("two Redis stores are refused");
        assert!(
            refused.contains("--redis and --redis-cluster") && refused.contains("choose one"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn sqlite_keeps_the_tasks_in_the_named_file() {
        let name = format!(
            "mcp-tasks-gateway-{}.db",
            mcp_tasks::TaskId::generate().unwrap()
        );
        let path = std::env::temp_dir().join(name);
        let args = Args::parse_from(["gw", "--sqlite", path.to_str().unwrap()]);
        let built = layer(&args).await;
        let (opened, created) = (built.is_ok(), path.exists());
        drop(built);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        assert!(opened && created, "--sqlite opened (created) the file");
    }
}
