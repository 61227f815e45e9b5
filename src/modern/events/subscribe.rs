//! `events/subscribe` and `events/unsubscribe` of the layer's event type:
//! webhook subscriptions.
//!
//! | Asked | Answered |
//! |-------|----------|
//! | no transport configured, or a mode other than `webhook` | `Unsupported` |
//! | no authenticated principal | `Forbidden` |
//! | a URL the callback policy refuses (its scheme, its host, an address in it that is not public), a secret that is not `whsec_` and 24 to 64 bytes, no `delivery` | `-32602` |
//! | a host name that resolves to an address that is not public | `CallbackEndpointError` (`connection_refused`): the transport refuses to connect |
//! | a callback that does not echo the verification challenge | `CallbackEndpointError` with the reason |
//! | over `max_hooks` | `ResourceExhausted` |
//! | the same (principal, URL, name, arguments) again | the same subscription refreshed: new secret and expiry, its delivery position kept |
//! | otherwise | `{id, refreshBefore, cursor, truncated}`: delivery starts at the cursor given, or now |
//! | `events/unsubscribe` of a key never subscribed (or lapsed) | `NotFound` |
//!
//! The TTL granted is `ttlMs` within [10 s, `max_hook_ttl`], the default
//! when absent; no subscription is granted without expiry (`ttlMs: null`
//! gets the longest). Verification posts `{"type":"verification",
//! "challenge"}`, signed like an event; the receiver must answer 2xx with
//! `{"challenge"}` the same.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::args::Asked;
use super::deliver::{random_hex, signed};
use super::{Events, log_failed, refuse};
use crate::runtime::{Owner, Runtime, store_failed};
use crate::store::{Hook, StoreError};
use crate::task::Timestamp;
use crate::webhook::Secret;
use crate::wire::jsonrpc::Reply;

/// The shortest subscription granted.
const MIN_TTL: Duration = Duration::from_secs(10);

#[derive(Serialize)]
struct Subscribed<'a> {
    #[serde(rename = "resultType")]
    result_type: &'static str,
    id: &'a str,
    #[serde(rename = "refreshBefore")]
    refresh_before: Option<String>,
    cursor: &'a str,
    truncated: bool,
}

/// A subscription's id: `sub_` and 32 hex digits of the SHA-256 of its key.
fn hook_id(owner: Option<&str>, url: &str, name: &str, arguments: &str) -> String {
    let key = json!([owner, url, name, arguments]).to_string();
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("sub_{hex}")
}

pub(super) async fn subscribe(
    runtime: &Runtime,
    events: &Events,
    owner: &Owner,
    id: &RawValue,
    asked: Asked,
) -> Reply {
    let config = &events.config;
    let Some(deliver) = config.deliver.clone() else {
        return refuse::unsupported_mode(id, "webhook");
    };
    let Some(delivery) = asked.delivery.as_ref() else {
        return Reply::bad_params(Some(id), "delivery is required");
    };
    match delivery.mode.as_deref() {
        Some("webhook") => {}
        Some(other) => return refuse::unsupported_mode(id, other),
        None => return Reply::bad_params(Some(id), "delivery.mode must be webhook"),
    }
    if owner.principal.is_none() {
        return refuse::forbidden(id);
    }
    let url = match config.policy.check_url(&delivery.url) {
        Ok(url) => url,
        Err(refused) => return Reply::bad_params(Some(id), refused.to_string()),
    };
    // An address written in the URL is checked now; a name is checked at
    // each delivery, against what it resolves to then.
    let literal = url
        .host()
        .map(|host| host.trim_start_matches('[').trim_end_matches(']'));
    if let Some(Ok(ip)) = literal.map(str::parse::<std::net::IpAddr>)
        && let Err(refused) = config.policy.check_ip(ip)
    {
        return Reply::bad_params(Some(id), refused.to_string());
    }
    let secret = match delivery.secret.as_deref().map(Secret::parse) {
        Some(Ok(secret)) => secret,
        Some(Err(error)) => {
            return Reply::bad_params(Some(id), format!("delivery.secret: {error}"));
        }
        None => return Reply::bad_params(Some(id), "delivery.secret is required"),
    };
    let ttl = match asked.ttl {
        None => config.hook_ttl,
        Some(None) => config.max_hook_ttl,
        Some(Some(asked)) => asked.clamp(MIN_TTL, config.max_hook_ttl.max(MIN_TTL)),
    };
    // Where delivery starts: the cursor given (checked), or now.
    let start = match runtime
        .store
        .status_events(owner.key(), asked.cursor.as_deref(), 1)
        .await
    {
        Ok(page) => page,
        Err(error) => return log_failed(id, &error),
    };
    let (cursor, truncated) = match asked.cursor {
        Some(cursor) => (cursor, start.truncated),
        None => (start.cursor, false),
    };
    let hook_id = hook_id(owner.key(), &delivery.url, &config.name, &asked.arguments);
    // The receiver confirms it wants these deliveries.
    let challenge = random_hex();
    let body = Bytes::from(json!({"type": "verification", "challenge": &challenge}).to_string());
    let message = format!("msg_verification_{}", random_hex());
    let post = signed(config, url, &hook_id, &secret, &message, body);
    let confirmed = match deliver.deliver(post).await {
        Ok(answer) if answer.status.is_success() => echoes(&answer.body, &challenge),
        Ok(answer) if answer.status.is_server_error() => Err("http_5xx"),
        Ok(_) => Err("http_4xx"),
        Err(error) => Err(error.category()),
    };
    if let Err(reason) = confirmed {
        return refuse::callback(id, reason);
    }
    let hook = Hook {
        id: hook_id,
        owner: owner.key.clone(),
        url: delivery.url.clone(),
        name: config.name.to_string(),
        arguments: asked.arguments,
        secret: secret.to_text(),
        expires_at: Some(Timestamp::now().saturating_add(ttl)),
        cursor,
    };
    let (per_owner, total) = config.max_hooks;
    let stored = match runtime.store.put_hook(hook, per_owner, total).await {
        Ok(stored) => stored,
        Err(StoreError::QuotaExceeded(scope)) => {
            let max = match scope {
                crate::store::QuotaScope::Owner => per_owner,
                crate::store::QuotaScope::Total => total,
            };
            return refuse::exhausted(id, "subscriptions", max);
        }
        Err(error) => return store_failed(Some(id), &error),
    };
    events.hooked.notify_one();
    Reply::result(
        id,
        Subscribed {
            result_type: "complete",
            id: &stored.id,
            refresh_before: stored.expires_at.map(|at| at.to_string()),
            cursor: &stored.cursor,
            truncated,
        },
    )
}

/// Whether the receiver's answer echoes `challenge` (compared in constant
/// time): `Err("challenge_failed")` when it does not.
fn echoes(body: &[u8], challenge: &str) -> Result<(), &'static str> {
    #[derive(serde::Deserialize)]
    struct Echo {
        challenge: String,
    }
    let echoed = serde_json::from_slice::<Echo>(body).map_err(|_| "challenge_failed")?;
    let (a, b) = (echoed.challenge.as_bytes(), challenge.as_bytes());
    let same = a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0;
    if same {
        Ok(())
    } else {
        Err("challenge_failed")
    }
}

pub(super) async fn unsubscribe(
    runtime: &Runtime,
    events: &Events,
    owner: &Owner,
    id: &RawValue,
    asked: Asked,
) -> Reply {
    let Some(delivery) = asked.delivery.as_ref() else {
        return Reply::bad_params(Some(id), "delivery.url is required");
    };
    let hook_id = hook_id(
        owner.key(),
        &delivery.url,
        &events.config.name,
        &asked.arguments,
    );
    match runtime.store.remove_hook(owner.key(), &hook_id).await {
        Ok(true) => Reply::result(id, json!({"resultType": "complete"})),
        Ok(false) => refuse::no_subscription(id),
        Err(error) => store_failed(Some(id), &error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_follows_the_key_and_only_the_key() {
        let a = hook_id(Some("alice"), "https://h/x", "n", "{}");
        assert_eq!(a, hook_id(Some("alice"), "https://h/x", "n", "{}"));
        assert!(a.starts_with("sub_") && a.len() == 36);
        assert_ne!(a, hook_id(Some("bob"), "https://h/x", "n", "{}"));
        assert_ne!(a, hook_id(Some("alice"), "https://h/y", "n", "{}"));
        assert_ne!(
            a,
            hook_id(
                Some("alice"),
                "https://h/x",
                "n",
                r#"{"statuses":["failed"]}"#
            )
        );
    }

    #[test]
    fn only_the_same_challenge_confirms() {
        assert!(echoes(br#"{"challenge":"abc"}"#, "abc").is_ok());
        assert!(echoes(br#"{"challenge":"abd"}"#, "abc").is_err());
        assert!(echoes(br#"{"challenge":"ab"}"#, "abc").is_err());
        assert!(echoes(b"abc", "abc").is_err());
    }
}
