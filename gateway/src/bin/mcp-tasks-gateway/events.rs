//! `--events` and the webhook options: the library's `EventsConfig`, with
//! the gateway's HTTPS transport for webhooks.
//!
//! | `--events` | Offered | Needs |
//! |------------|---------|-------|
//! | `off` (default) | nothing: `events/*` go to the upstream | |
//! | `poll-push` | `events/poll`, `events/stream` of the `mcp-tasks/status` event type | |
//! | `webhooks` | the same, and `events/subscribe` (signed webhooks) | a principal (`--oauth-*`) on each subscription; a store that outlives the process (`--sqlite`, `--redis`) keeps pending deliveries across a restart |
//!
//! `--webhook-hosts`, `--webhook-private` and `--webhook-ca-file` without
//! `--events webhooks` are an error at start: they would do nothing.

use mcp_tasks::EventsConfig;
use mcp_tasks::webhook::CallbackPolicy;
use mcp_tasks_gateway::webhook::HttpsDeliver;

use crate::settings::Args;

/// The events settings `args` ask for; `None` when off.
pub(crate) fn events(args: &Args) -> Result<Option<EventsConfig>, String> {
    let mode = args.events.as_deref().unwrap_or("off");
    let webhook_options = !args.webhook_hosts.is_empty()
        || args.webhook_private.is_some()
        || args.webhook_ca_file.is_some();
    if webhook_options && mode != "webhooks" {
        return Err(
            "--webhook-hosts, --webhook-private and --webhook-ca-file need --events webhooks"
                .to_owned(),
        );
    }
    match mode {
        "off" => Ok(None),
        "poll-push" => Ok(Some(EventsConfig::new())),
        "webhooks" => {
            let mut transport = HttpsDeliver::builder();
            if let Some(path) = &args.webhook_ca_file {
                transport = transport.ca_file(path);
            }
            let transport = transport
                .build()
                .map_err(|error| format!("webhooks: {error}"))?;
            let policy = CallbackPolicy::new()
                .allow_hosts(args.webhook_hosts.iter().cloned())
                .allow_private(args.webhook_private.unwrap_or(false));
            Ok(Some(EventsConfig::new().webhooks(transport, policy)))
        }
        other => Err(format!("--events {other}: give off, poll-push or webhooks")),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn events_of(argv: &[&str]) -> Result<Option<EventsConfig>, String> {
        let mut all = vec!["gw"];
        all.extend_from_slice(argv);
        events(&Args::parse_from(all))
    }

    #[test]
    fn events_are_off_unless_asked_and_webhook_options_need_webhooks() {
        assert!(events_of(&[]).unwrap().is_none());
        let poll = events_of(&["--events", "poll-push"]).unwrap().unwrap();
        assert!(!poll.has_webhooks());
        let refused = events_of(&["--events", "poll-push", "--webhook-private", "true"]);
        assert!(refused.unwrap_err().contains("need --events webhooks"));
        assert!(
            events_of(&["--events", "sometimes"])
                .unwrap_err()
                .contains("sometimes")
        );
        let missing = events_of(&[
            "--events",
            "webhooks",
            "--webhook-ca-file",
            "/nonexistent.pem",
        ]);
        assert!(missing.unwrap_err().contains("/nonexistent.pem"));
    }
}
