//! `--console-token-file FILE` (or the token itself in
//! `MCP_TASKS_CONSOLE_TOKEN`): the operator's console
//! ([`mcp_tasks_gateway::console`]) on the metrics listener, never on the
//! clients' one. No credential, no console; the start says which.

use std::sync::Mutex;

use axum::Router;
use mcp_tasks::Admin;
use mcp_tasks::observe::ToolStats;
use mcp_tasks_gateway::console::{Console, Credential, StoreKind, UpstreamVitals};
use mcp_tasks_gateway::metrics as proxy_metrics;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::settings::Args;

/// The environment variable that may hold the token itself.
pub const TOKEN_ENV: &str = "MCP_TASKS_CONSOLE_TOKEN";

/// What the console needs from the settings, read before the layer is
/// built (the layer reports its calls to [`Setup::stats`]).
pub struct Setup {
    credential: Credential,
    /// The per-tool figures the layer records.
    pub stats: ToolStats,
    store: StoreKind,
    kind: &'static str,
    target: String,
}

/// The console's setup, `None` without a credential; an error for a
/// credential without `--metrics` or one that cannot be used.
pub fn from_args(args: &Args) -> Result<Option<Setup>, String> {
    let credential = match (&args.console_token_file, std::env::var(TOKEN_ENV)) {
        (Some(path), _) => Credential::from_file(path).map_err(|e| e.to_string())?,
        (None, Ok(token)) => Credential::new(token).map_err(|e| format!("{TOKEN_ENV}: {e}"))?,
        (None, Err(_)) => return Ok(None),
    };
    if args.metrics.is_none() {
        return Err(format!(
            "the console (--console-token-file or {TOKEN_ENV}) is served on the operator's listener: give --metrics ADDR"
        ));
    }
    let store = if !args.redis_cluster.is_empty() {
        StoreKind::RedisCluster
    } else if args.redis.is_some() {
        StoreKind::Redis
    } else if args.sqlite.is_some() {
        StoreKind::Sqlite
    } else {
        StoreKind::Memory
    };
    let (kind, target) = match &args.upstream {
        Some(url) => ("http", url.clone()),
        None => ("stdio", args.command.join(" ")),
    };
    Ok(Some(Setup {
        credential,
        stats: ToolStats::new(),
        store,
        kind,
        target,
    }))
}

impl Setup {
    /// The console's routes, reading the upstream's figures from the
    /// metrics the process records.
    pub fn router(self, admin: Admin, handle: PrometheusHandle) -> Router {
        let seen = Mutex::new(Seen::default());
        let (kind, target) = (self.kind, self.target);
        Console::new(admin, self.credential)
            .store_kind(self.store)
            .tool_stats(self.stats)
            .vitals(move || {
                let text = handle.render();
                let mut seen = seen.lock().expect("vitals lock");
                vitals(&text, kind, &target, &mut seen)
            })
            .router()
    }
}

/// The counters at the last look, to tell whether the upstream answered
/// since.
#[derive(Default)]
struct Seen {
    responses: u64,
    failures: u64,
    reachable: Option<bool>,
}

/// The upstream's figures from the Prometheus text `text`.
fn vitals(text: &str, kind: &str, target: &str, seen: &mut Seen) -> UpstreamVitals {
    let mut vitals = UpstreamVitals {
        kind: kind.to_owned(),
        target: target.to_owned(),
        ..UpstreamVitals::default()
    };
    let (mut responses, mut failures) = (0, 0);
    let mut buckets = Vec::new();
    let mut count = 0.0;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (metric, labels) = name.split_once('{').unwrap_or((name, ""));
        match metric {
            _ if metric == proxy_metrics::RESPONSES => responses += value as u64,
            _ if metric == proxy_metrics::FAILURES => failures += value as u64,
            _ if metric == proxy_metrics::IN_FLIGHT => vitals.in_flight = value as u64,
            _ if metric == proxy_metrics::CONNECTIONS => vitals.connections = value as u64,
            _ if metric == proxy_metrics::RESTARTS => vitals.restarts = value as u64,
            _ if metric.strip_suffix("_bucket") == Some(proxy_metrics::LATENCY) => {
                if let Some(bound) = label(labels, "le").and_then(|le| le.parse::<f64>().ok()) {
                    buckets.push((bound, value));
                }
            }
            _ if metric.strip_suffix("_count") == Some(proxy_metrics::LATENCY) => count = value,
            _ => {}
        }
    }
    vitals.failures = failures;
    if count > 0.0 {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        vitals.latency_p50_ms = buckets
            .iter()
            .find(|(_, cumulative)| *cumulative >= count / 2.0)
            .map(|(bound, _)| bound * 1000.0);
    }
    if responses > seen.responses {
        seen.reachable = Some(true);
    } else if failures > seen.failures {
        seen.reachable = Some(false);
    }
    seen.responses = responses;
    seen.failures = failures;
    vitals.reachable = match kind {
        // A stdio child answers over its pipes; it is there while it runs.
        "stdio" => Some(true),
        _ => seen.reachable,
    };
    vitals
}

fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels
        .trim_end_matches('}')
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstreams_figures_are_read_from_the_metrics_text() {
        let text = "\
# HELP mcp_tasks_upstream_connections x
mcp_tasks_upstream_connections 3
mcp_tasks_upstream_in_flight 1
mcp_tasks_upstream_responses_total{status=\"200\"} 9
mcp_tasks_upstream_responses_total{status=\"202\"} 1
mcp_tasks_upstream_failures_total{reason=\"connect\"} 2
mcp_tasks_upstream_latency_seconds_bucket{le=\"0.001\"} 2
mcp_tasks_upstream_latency_seconds_bucket{le=\"0.0025\"} 6
mcp_tasks_upstream_latency_seconds_bucket{le=\"+Inf\"} 10
mcp_tasks_upstream_latency_seconds_count 10
";
        let mut seen = Seen::default();
        let vitals = vitals(text, "http", "http://x/mcp", &mut seen);
        assert_eq!(vitals.connections, 3);
        assert_eq!(vitals.in_flight, 1);
        assert_eq!(vitals.failures, 2);
        assert_eq!(vitals.latency_p50_ms, Some(2.5));
        assert_eq!(vitals.reachable, Some(true));
        let failing = text.replace("reason=\"connect\"} 2", "reason=\"connect\"} 3");
        assert_eq!(vitals_of(&failing, &mut seen), Some(false));
        assert_eq!(vitals_of(&failing, &mut seen), Some(false));
        let answered = failing.replace("status=\"202\"} 1", "status=\"202\"} 2");
        assert_eq!(vitals_of(&answered, &mut seen), Some(true));
    }

    fn vitals_of(text: &str, seen: &mut Seen) -> Option<bool> {
        vitals(text, "http", "", seen).reachable
    }
}
