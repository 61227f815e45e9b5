//! Where the settings come from: the command line and environment, with
//! the `--config` file under them; and the listener they name.

use clap::Parser;

use super::Args;

/// Two ways to run it, shown under `--help`.
pub(super) const EXAMPLES: &str = "\
Examples:
  # An HTTP server: calls still running after 500 ms become tasks, kept in memory
  mcp-tasks-gateway --upstream http://127.0.0.1:8000/mcp

  # A stdio server on port 8090 of any interface, tasks kept across restarts,
  # Prometheus metrics on port 9090
  mcp-tasks-gateway --listen 0.0.0.0:8090 --sqlite tasks.db --metrics 127.0.0.1:9090 \\
      -- npx -y @modelcontextprotocol/server-everything

Every option is also an MCP_TASKS_* environment variable and a key of the
--config file (gateway/examples/mcp-tasks-gateway.toml).";

impl Args {
    /// Binds where to listen: `HOST:PORT` (a name is looked up; its
    /// addresses are tried in turn) [default: 127.0.0.1:8080].
    pub async fn bind(&self) -> Result<tokio::net::TcpListener, String> {
        let listen = self.listen.as_deref().unwrap_or("127.0.0.1:8080");
        let addresses = tokio::net::lookup_host(listen)
            .await
            .map_err(|e| format!("--listen {listen}: {e} (give HOST:PORT)"))?;
        let mut last = None;
        for address in addresses {
            match tokio::net::TcpListener::bind(address).await {
                Ok(listener) => return Ok(listener),
                Err(error) => last = Some(format!("cannot listen on {address}: {error}")),
            }
        }
        Err(last.unwrap_or_else(|| format!("--listen {listen}: no address")))
    }

    /// The command line and environment, with the `--config` file under
    /// them.
    pub fn load() -> Result<Self, String> {
        let args = Self::parse();
        match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let file: Args =
                    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(args.over(file))
            }
            None => Ok(args),
        }
    }

    /// Every setting of `self`, and those it lacks from `file`.
    pub(super) fn over(self, file: Args) -> Args {
        macro_rules! pick {
            ($($field:ident),* ; $($list:ident),*) => {
                Args {
                    config: self.config,
                    check: self.check,
                    $($field: self.$field.or(file.$field),)*
                    $($list: if self.$list.is_empty() { file.$list } else { self.$list },)*
                }
            };
        }
        pick!(
            upstream, cwd, start_timeout, instances, max_in_flight, place_timeout, max_body_bytes, listen, path, threshold, ttl, max_ttl, poll_interval, redis, redis_wait_replicas, redis_lease, sqlite, retry_hints, fallback_after, fallback_tools,
            max_tasks, max_tasks_per_principal, max_running, max_runtime,
            header_timeout, body_timeout, keep_alive, max_connections, max_connections_per_client,
            upstream_connect_timeout, upstream_header_timeout, upstream_request_timeout,
            upstream_idle_timeout, upstream_generation,
            shutdown_grace, metrics, console_token_file, otlp, events, webhook_private, webhook_ca_file,
            forward_authorization, require_upstream, oauth_issuer, oauth_resource, oauth_jwks,
            oauth_hs256_secret_file, oauth_authorization_server, oauth_leeway;
            policy, retry, fallback, redis_cluster, allowed_host, allowed_origin, oauth_audience, oauth_scopes, webhook_hosts,
            command, env
        )
    }
}
