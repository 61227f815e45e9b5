//! The gateway's settings: command line, `MCP_TASKS_*` environment
//! variables and an optional TOML file with the same keys.
//!
//! Precedence: the command line, then the environment, then the file, then
//! the defaults. The file's keys are the long option names (`max-ttl`,
//! `policy = ["slow_tool=always"]`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use serde::Deserialize;

pub use crate::rules::{EnvVar, FallbackNames, FallbackRule, Human, PolicyRule, RetryRule};

/// `mcp-tasks-gateway`: MCP Tasks for any Streamable-HTTP MCP server, by
/// putting `TasksLayer` in front of it as a reverse proxy.
///
/// Durations are written as `500ms`, `30s`, `1h`; `none` means no limit
/// where a limit may be lifted.
#[derive(Parser, Deserialize, Debug, Default)]
#[command(
    name = "mcp-tasks-gateway",
    version,
    args_override_self = true,
    after_help = load::EXAMPLES
)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct Args {
    /// A TOML file with the same keys as the long options.
    #[arg(
        help_heading = "Settings",
        long,
        env = "MCP_TASKS_CONFIG",
        value_name = "FILE"
    )]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Check the settings (command line, environment and --config file)
    /// and exit: 0 when they hold together, 2 with the reason otherwise.
    /// Nothing is started or connected.
    #[arg(help_heading = "Settings", long)]
    #[serde(skip)]
    pub check: bool,

    /// The MCP server to put tasks in front of: http://HOST:PORT/PATH
    /// (this, or a command after `--`).
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_UPSTREAM",
        value_name = "URL"
    )]
    pub upstream: Option<String>,
    /// A stdio MCP server to start and serve, instead of --upstream:
    /// everything after `--`, e.g. `-- npx -y @modelcontextprotocol/server-everything`.
    #[arg(help_heading = "Upstream", last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// An environment variable for the command, repeatable.
    #[arg(help_heading = "Upstream", long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<EnvVar>,
    /// The command's working directory [default: the gateway's].
    #[arg(help_heading = "Upstream", long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// How long the command has to start and answer `initialize` (`npx`
    /// may download the server first) [default: 60s].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_START_TIMEOUT",
        value_name = "DURATION"
    )]
    pub start_timeout: Option<Human>,
    /// How many copies of the command to run; calls go to the least busy,
    /// a 2025-11-25 session stays on one (for servers that handle one call
    /// at a time) [default: 1].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_INSTANCES",
        value_name = "N"
    )]
    pub instances: Option<usize>,
    /// Calls in flight to each copy of the command; more wait for a place
    /// [default: 64].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_MAX_IN_FLIGHT",
        value_name = "N"
    )]
    pub max_in_flight: Option<usize>,
    /// How long a call waits for such a place before it fails with 503
    /// [default: 30s].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_PLACE_TIMEOUT",
        value_name = "DURATION"
    )]
    pub place_timeout: Option<Human>,
    /// Where to listen [default: 127.0.0.1:8080]; port 0 picks a free port.
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_LISTEN",
        value_name = "ADDR"
    )]
    pub listen: Option<String>,
    /// The path clients use [default: /mcp].
    #[arg(help_heading = "Serving", long, env = "MCP_TASKS_PATH")]
    pub path: Option<String>,

    /// How long a call runs before it becomes a task [default: 500ms].
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_THRESHOLD",
        value_name = "DURATION"
    )]
    pub threshold: Option<Human>,
    /// How long a task is kept after it is created [default: 1h].
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_TTL",
        value_name = "DURATION"
    )]
    pub ttl: Option<Human>,
    /// The longest TTL a client may ask for [default: the TTL].
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_MAX_TTL",
        value_name = "DURATION"
    )]
    pub max_ttl: Option<Human>,
    /// The polling interval suggested to clients [default: 1s].
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_POLL_INTERVAL",
        value_name = "DURATION"
    )]
    pub poll_interval: Option<Human>,
    /// A tool's policy: threshold, always, never or required; repeatable.
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_POLICY",
        value_name = "TOOL=POLICY",
        value_delimiter = ','
    )]
    pub policy: Vec<PolicyRule>,
    /// A tool safe to run twice: its parked calls run again, up to ATTEMPTS
    /// runs in all [default: 3], when the gateway stops while they run
    /// (with --sqlite); repeatable.
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_RETRY",
        value_name = "TOOL[=ATTEMPTS]",
        value_delimiter = ','
    )]
    pub retry: Vec<RetryRule>,
    /// Whether a tool the upstream marks `idempotentHint: true` runs again
    /// like a --retry tool (3 runs) [default: true].
    #[arg(
        help_heading = "Tasks",
        long,
        env = "MCP_TASKS_RETRY_HINTS",
        value_name = "BOOL"
    )]
    pub retry_hints: Option<bool>,
    /// Answer clients that know no tasks (most chat clients) when a call
    /// still runs after DURATION: a tool result naming the task its work
    /// goes on as, read and cancelled with two tools added to tools/list
    /// (off unless given; it changes what tools answer).
    #[arg(
        help_heading = "Clients without tasks",
        long,
        env = "MCP_TASKS_FALLBACK_AFTER",
        value_name = "DURATION"
    )]
    pub fallback_after: Option<Human>,
    /// One tool's fallback time, or `off`; turns the fallback on for that
    /// tool alone without --fallback-after; repeatable.
    #[arg(
        help_heading = "Clients without tasks",
        long,
        env = "MCP_TASKS_FALLBACK",
        value_name = "TOOL=DURATION",
        value_delimiter = ','
    )]
    pub fallback: Vec<FallbackRule>,
    /// The names of the two added tools [default: get_task_result,cancel_task].
    #[arg(
        help_heading = "Clients without tasks",
        long,
        env = "MCP_TASKS_FALLBACK_TOOLS",
        value_name = "RESULT,CANCEL"
    )]
    pub fallback_tools: Option<FallbackNames>,
    /// Keep tasks in Redis (redis://HOST:PORT), shared by every gateway
    /// using the same server; in memory otherwise.
    #[arg(
        help_heading = "Storage",
        long,
        env = "MCP_TASKS_REDIS",
        value_name = "URL"
    )]
    pub redis: Option<String>,
    /// Keep tasks in a Redis Cluster, given seed nodes
    /// (redis://HOST:PORT, comma-separated or repeated); instead of --redis.
    #[arg(
        help_heading = "Storage",
        long,
        env = "MCP_TASKS_REDIS_CLUSTER",
        value_name = "URL",
        value_delimiter = ','
    )]
    pub redis_cluster: Vec<String>,
    /// With --redis or --redis-cluster: acknowledge a task write only once
    /// this many replicas have it, waiting at most 250 ms (Redis WAIT), so a
    /// failover keeps it [default: 0, asynchronous replication].
    #[arg(
        help_heading = "Storage",
        long,
        env = "MCP_TASKS_REDIS_WAIT_REPLICAS",
        value_name = "N"
    )]
    pub redis_wait_replicas: Option<u32>,
    /// With --redis or --redis-cluster: how long this gateway stays alive in
    /// Redis without renewing its lease. Make it longer than a failover of
    /// your Redis takes: a gateway that cannot renew for a whole lease stops
    /// the calls it runs there, and another takes their tasks [default: 10s].
    #[arg(
        help_heading = "Storage",
        long,
        env = "MCP_TASKS_REDIS_LEASE",
        value_name = "DURATION"
    )]
    pub redis_lease: Option<Human>,
    /// Keep tasks in this SQLite file, across a restart and a `kill -9` of
    /// this gateway (one instance; use --redis for several).
    #[arg(
        help_heading = "Storage",
        long,
        env = "MCP_TASKS_SQLITE",
        value_name = "PATH"
    )]
    pub sqlite: Option<PathBuf>,

    /// Live tasks, every owner together [default: 10000].
    #[arg(
        help_heading = "Limits",
        long,
        env = "MCP_TASKS_MAX_TASKS",
        value_name = "N"
    )]
    pub max_tasks: Option<u32>,
    /// Live tasks per principal [default: 100].
    #[arg(
        help_heading = "Limits",
        long,
        env = "MCP_TASKS_MAX_TASKS_PER_PRINCIPAL",
        value_name = "N"
    )]
    pub max_tasks_per_principal: Option<u32>,
    /// Calls running in the background at once [default: 1000].
    #[arg(
        help_heading = "Limits",
        long,
        env = "MCP_TASKS_MAX_RUNNING",
        value_name = "N"
    )]
    pub max_running: Option<usize>,
    /// How long a task's call may run before it is cancelled [default: 30m].
    #[arg(
        help_heading = "Limits",
        long,
        env = "MCP_TASKS_MAX_RUNTIME",
        value_name = "DURATION"
    )]
    pub max_runtime: Option<Human>,

    /// Host names accepted in the Host header (DNS-rebinding protection;
    /// any port), repeatable; `*` accepts any [default: localhost and the
    /// loopback addresses when listening on loopback, any otherwise].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_ALLOWED_HOSTS",
        value_name = "HOST",
        value_delimiter = ','
    )]
    pub allowed_host: Vec<String>,
    /// Origin header values accepted, repeatable; `*` accepts any. A
    /// request without Origin (not from a browser) is always accepted
    /// [default: loopback origins when listening on loopback, none otherwise].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_ALLOWED_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    pub allowed_origin: Vec<String>,

    /// How long a client may take to send its request headers [default: 10s].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_HEADER_TIMEOUT",
        value_name = "DURATION"
    )]
    pub header_timeout: Option<Human>,
    /// How long a request body may take to arrive, from its head [default: 10s].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_BODY_TIMEOUT",
        value_name = "DURATION"
    )]
    pub body_timeout: Option<Human>,
    /// The largest request body, and the largest result kept for a task
    /// (and, for a stdio server, the longest line it may write) [default: 4MiB,
    /// written as bytes: 4194304].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_MAX_BODY_BYTES",
        value_name = "BYTES"
    )]
    pub max_body_bytes: Option<usize>,
    /// How often a quiet SSE stream gets a comment; a call of a client
    /// without tasks whose server sent nothing this long gets an SSE head
    /// of the gateway's, so proxies that cut idle connections keep it
    /// [default: 15s].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_KEEP_ALIVE",
        value_name = "DURATION"
    )]
    pub keep_alive: Option<Human>,
    /// Client connections served at once [default: 512].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_MAX_CONNECTIONS",
        value_name = "N"
    )]
    pub max_connections: Option<usize>,
    /// Client connections of one client address served at once; one more
    /// gets 429 and is closed, so one client cannot lock the others out.
    /// Behind a reverse proxy every client shares its address: raise it
    /// to --max-connections there [default: 128].
    #[arg(
        help_heading = "Serving",
        long,
        env = "MCP_TASKS_MAX_CONNECTIONS_PER_CLIENT",
        value_name = "N"
    )]
    pub max_connections_per_client: Option<usize>,
    /// How long connecting to the upstream may take [default: 5s].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_UPSTREAM_CONNECT_TIMEOUT",
        value_name = "DURATION"
    )]
    pub upstream_connect_timeout: Option<Human>,
    /// How long the upstream may take to send the response head of a
    /// tools/call, or of a request that names no method in Mcp-Method (as
    /// 2025-11-25 clients send them); for a stdio server, how long a
    /// tools/call waits for its answer [default: --max-runtime + 10s, so a
    /// tool answering with JSON may run that long, and a parked call ends
    /// with the runtime-limit message, not this timeout].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_UPSTREAM_HEADER_TIMEOUT",
        value_name = "DURATION"
    )]
    pub upstream_header_timeout: Option<Human>,
    /// How long the upstream may take to send the response head of any
    /// other request (initialize, tools/list, resources/read, …), named in
    /// its Mcp-Method header; for a stdio server, how long any request but
    /// tools/call waits for its answer [default: 60s].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_UPSTREAM_REQUEST_TIMEOUT",
        value_name = "DURATION"
    )]
    pub upstream_request_timeout: Option<Human>,
    /// How long an idle upstream connection is kept for reuse; keep it
    /// below the upstream's own keep-alive (uvicorn and Node: 5 s)
    /// [default: 4s].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_UPSTREAM_IDLE_TIMEOUT",
        value_name = "DURATION"
    )]
    pub upstream_idle_timeout: Option<Human>,
    /// Whether the client's Authorization header goes upstream (true or
    /// false) [default: true].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_FORWARD_AUTHORIZATION",
        value_name = "BOOL"
    )]
    pub forward_authorization: Option<bool>,
    /// The protocol generation the upstream speaks: auto (asked once, by a
    /// 2026-07-28 server/discover), 2026-07-28, or 2025-11-25 (and older).
    /// Clients of 2026-07-28 in front of an older upstream are bridged
    /// [default: auto].
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_UPSTREAM_GENERATION",
        value_name = "VERSION"
    )]
    pub upstream_generation: Option<String>,
    /// Refuse to start (exit 2) when the upstream cannot be connected to
    /// at start; without it, the gateway warns and starts, and calls get
    /// 502 until the upstream is there.
    #[arg(
        help_heading = "Upstream",
        long,
        env = "MCP_TASKS_REQUIRE_UPSTREAM",
        value_name = "BOOL",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub require_upstream: Option<bool>,

    /// Require OAuth bearer tokens from this issuer (tower-mcp's
    /// OAuthLayer); each task then belongs to the token's subject (or
    /// client). The other --oauth-* options need it.
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_ISSUER",
        value_name = "URL"
    )]
    pub oauth_issuer: Option<String>,
    /// This resource's URL, which clients ask tokens for: the `resource`
    /// of the RFC 9728 metadata [default: a lone --oauth-audience that is
    /// a URL, as before this option, else this gateway's URL].
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_RESOURCE",
        value_name = "URL"
    )]
    pub oauth_resource: Option<String>,
    /// An `aud` value accepted, repeatable: a URL, or a client id for
    /// identity providers whose `aud` is one (Keycloak); a token must
    /// carry one [default: the resource].
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_AUDIENCE",
        value_name = "VALUE",
        value_delimiter = ','
    )]
    #[serde(deserialize_with = "crate::rules::one_or_many")]
    pub oauth_audience: Vec<String>,
    /// How far the issuer's clock and this one may disagree, on `exp`,
    /// `nbf` and `iat` alike: kept small, since an expired token is
    /// honoured that much longer [default: 5s].
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_LEEWAY",
        value_name = "DURATION"
    )]
    pub oauth_leeway: Option<Human>,
    /// The issuer's keys: an http(s) JWKS URL (fetched and cached) or a
    /// JWKS file.
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_JWKS",
        value_name = "URL-OR-FILE"
    )]
    pub oauth_jwks: Option<String>,
    /// A file holding an HS256 secret, instead of --oauth-jwks.
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_HS256_SECRET_FILE",
        value_name = "FILE"
    )]
    pub oauth_hs256_secret_file: Option<PathBuf>,
    /// Scopes every request's token must carry, repeatable.
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_SCOPES",
        value_name = "SCOPE",
        value_delimiter = ','
    )]
    pub oauth_scopes: Vec<String>,
    /// The authorization server named in the metadata [default: the issuer].
    #[arg(
        help_heading = "OAuth",
        long,
        env = "MCP_TASKS_OAUTH_AUTHORIZATION_SERVER",
        value_name = "URL"
    )]
    pub oauth_authorization_server: Option<String>,

    /// Export traces over OTLP/HTTP to this collector URL, e.g.
    /// http://127.0.0.1:4318/v1/traces (needs the `otlp` feature).
    #[arg(
        help_heading = "Observability",
        long,
        env = "MCP_TASKS_OTLP",
        value_name = "URL"
    )]
    pub otlp: Option<String>,

    /// Serve Prometheus metrics at http://ADDR/metrics (off unless given).
    #[arg(
        help_heading = "Observability",
        long,
        env = "MCP_TASKS_METRICS",
        value_name = "ADDR"
    )]
    pub metrics: Option<SocketAddr>,
    /// Serve the operator's console at http://METRICS-ADDR/console to whoever
    /// holds the token in this file (or in MCP_TASKS_CONSOLE_TOKEN) [default: off].
    #[arg(
        help_heading = "Observability",
        long,
        env = "MCP_TASKS_CONSOLE_TOKEN_FILE",
        value_name = "FILE"
    )]
    pub console_token_file: Option<PathBuf>,

    /// Task events (MCP Events extension): `poll-push` offers events/poll
    /// and events/stream of each status change of a caller's tasks,
    /// `webhooks` signed webhooks too [default: off].
    #[arg(
        help_heading = "Events",
        long,
        env = "MCP_TASKS_EVENTS",
        value_name = "off|poll-push|webhooks"
    )]
    pub events: Option<String>,
    /// Webhooks only to these hosts (`*.example.com` for a domain's names),
    /// repeatable [default: any host with a public address].
    #[arg(
        help_heading = "Events",
        long,
        env = "MCP_TASKS_WEBHOOK_HOSTS",
        value_name = "HOST",
        value_delimiter = ','
    )]
    #[serde(deserialize_with = "crate::rules::one_or_many")]
    pub webhook_hosts: Vec<String>,
    /// Let webhooks reach loopback, private and link-local addresses: only
    /// for receivers on this gateway's own network [default: false].
    #[arg(
        help_heading = "Events",
        long,
        env = "MCP_TASKS_WEBHOOK_PRIVATE",
        value_name = "BOOL"
    )]
    pub webhook_private: Option<bool>,
    /// Trust the CA certificates of this PEM file for webhook receivers,
    /// besides the platform's.
    #[arg(
        help_heading = "Events",
        long,
        env = "MCP_TASKS_WEBHOOK_CA_FILE",
        value_name = "FILE"
    )]
    pub webhook_ca_file: Option<PathBuf>,

    /// How long running tasks get to finish on SIGTERM or Ctrl-C [default: 10s].
    #[arg(
        help_heading = "Shutdown",
        long,
        env = "MCP_TASKS_SHUTDOWN_GRACE",
        value_name = "DURATION"
    )]
    pub shutdown_grace: Option<Human>,
}

mod load;

#[cfg(test)]
mod tests;
