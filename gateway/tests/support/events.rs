//! The task-events tests' common parts (`gateway_events.rs`,
//! `gateway_events_ai_sdk.rs`): a webhook receiver's files from a private CA
//! made at test time, and the gateway with `--events webhooks`, loopback
//! receivers allowed, that CA trusted and OAuth (HS256) required.
//! Include it with `#[path = "support/events.rs"] mod events;` beside the
//! `gateway`, `tls` and `tokens` modules.
#![allow(dead_code)]

use crate::gateway;
use crate::support::process::Process;
use crate::tls;
use crate::tokens::{TempFile, hs256_options};

/// The receiver's files: its CA (for the gateway), its certificate and key.
pub struct Receiving {
    pub ca: TempFile,
    pub cert: TempFile,
    pub key: TempFile,
}

/// A fresh CA and a certificate for `localhost` from it.
pub fn receiving() -> Receiving {
    let pki = tls::ca_and_leaf(&["localhost"]);
    Receiving {
        ca: TempFile::new("ca.pem", pki.ca_pem.as_bytes()),
        cert: TempFile::new("cert.pem", pki.leaf_pem.as_bytes()),
        key: TempFile::new("key.pem", pki.key_pem.as_bytes()),
    }
}

/// The gateway in front of `upstream` with events delivered by webhook to
/// receivers that `files`' CA signed, OAuth tokens signed with the HS256
/// `secret`, and `extra` options.
pub async fn gateway_with(
    upstream: &str,
    files: &Receiving,
    secret: &TempFile,
    extra: &[&str],
) -> Process {
    let mut options = vec![
        "--events",
        "webhooks",
        "--webhook-private",
        "true",
        "--webhook-ca-file",
        files.ca.path(),
    ];
    options.extend_from_slice(&hs256_options(secret));
    options.extend_from_slice(extra);
    gateway::start(upstream, &options).await
}
