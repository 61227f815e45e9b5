//! The webhook deliverer: one background worker per layer that sends each
//! subscription the wanted changes of its owner's log, signed, in order,
//! and moves the subscription's cursor past each one it sent.
//!
//! | Moment | What happens |
//! |--------|--------------|
//! | the layer is built (events with a transport) | the worker starts, reads every live subscription and catches each up: what a process that died left undelivered goes out now |
//! | a change in the store's feed, a new subscription, or every second | each subscription not already being served is caught up, on a task of its own |
//! | the receiver answers 2xx | the cursor moves past the event |
//! | 410 or 413 | the event is dropped (the extension says: never retried), the cursor moves past it |
//! | anything else, or no answer | tried again after 1 s, doubling up to `max_retry`, `attempts` tries in all; then the event is dropped |
//! | changes dropped from the log before they were sent | a signed `gap` envelope with the fresh cursor |
//! | the layer drains | the worker stops between tries; the cursor stays at the first event not sent, for the next process |
//! | another instance moved the cursor first | this one stops serving that subscription this round |
//! | another instance holds the subscription's claim ([`TaskStore::claim_hook`], 10 s, renewed each round) | this one leaves it; it takes over once the claim lapses |
//!
//! [`TaskStore::claim_hook`]: crate::TaskStore::claim_hook
//!
//! Each try is signed again with its own timestamp; `webhook-id` is the
//! event's id on every try and every instance, so a receiver drops the
//! duplicates a crash between a send and the cursor's move makes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderValue;
use serde_json::json;

use super::args::Filter;
use super::occurrence::{Occurrence, wanted};
use super::{Events, next_change};
use crate::backoff::Backoff;
use crate::config::events::EventsConfig;
use crate::observe::metrics as names;
use crate::runtime::Runtime;
use crate::store::{Hook, Listening, StatusEvent};
use crate::task::Timestamp;
use crate::webhook::{Delivery, Secret, sign};

/// How often subscriptions are read again without a change.
const SWEEP: Duration = Duration::from_secs(1);

/// How long one instance's claim on a subscription's deliveries lasts
/// (renewed with each round): when it dies, another takes over after this.
const CLAIM: Duration = Duration::from_secs(10);

/// The events read from a log at a time.
const PAGE: usize = 100;

/// 32 random hex digits (a challenge, a control message's id).
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    // Without the OS's random source the value is still unique enough for
    // an id; a challenge then fails verification rather than being guessed.
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One signed POST of `body` to `url` for subscription `hook`, as
/// message `message` (the `webhook-id`).
pub(crate) fn signed(
    config: &EventsConfig,
    url: http::Uri,
    hook: &str,
    secret: &Secret,
    message: &str,
    body: Bytes,
) -> Delivery {
    let now = Timestamp::now().as_millis() / 1000;
    let signature = sign(secret, message, now, &body);
    let mut headers = http::HeaderMap::new();
    let text = |value: &str| HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static(""));
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert("webhook-id", text(message));
    headers.insert("webhook-timestamp", HeaderValue::from(now));
    headers.insert("webhook-signature", text(&signature));
    headers.insert("x-mcp-subscription-id", text(hook));
    Delivery {
        url,
        headers,
        body,
        policy: config.policy.clone(),
        timeout: config.delivery_timeout,
        max_answer: config.max_answer,
    }
}

/// Starts the deliverer of a layer whose events have a transport.
pub(crate) fn start(runtime: Arc<Runtime>, events: Arc<Events>) {
    if !events.config.has_webhooks() {
        return;
    }
    let background = runtime.background.clone();
    background.spawn_in(tracing::Span::none(), run(runtime, events));
}

async fn run(runtime: Arc<Runtime>, events: Arc<Events>) {
    let store = runtime.store.clone();
    let mut changes = store.changes();
    let closing = runtime.background.closing_signal();
    let serving: Arc<Mutex<HashSet<String>>> = Arc::default();
    // The owners whose changes this instance must hear (a Redis store
    // carries only those asked for).
    let mut listening: HashMap<Option<String>, Option<Listening>> = HashMap::new();
    loop {
        match store.hooks().await {
            Ok(hooks) => {
                metrics::gauge!(names::EVENT_WEBHOOKS).set(hooks.len() as f64);
                listening.retain(|owner, _| hooks.iter().any(|hook| hook.owner == *owner));
                for hook in hooks {
                    listening
                        .entry(hook.owner.clone())
                        .or_insert_with(|| store.listen(hook.owner.as_deref()));
                    let fresh = serving
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(hook.id.clone());
                    if fresh {
                        let serve = serve(runtime.clone(), events.clone(), hook, serving.clone());
                        runtime.background.spawn_in(tracing::Span::none(), serve);
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "webhook subscriptions could not be read"),
        }
        tokio::select! {
            _ = closing.cancelled() => return,
            _ = events.hooked.notified() => {}
            open = next_change(&mut changes) => {
                if !open {
                    // The feed ended: the sweep every second remains.
                    changes = None;
                }
            }
            _ = tokio::time::sleep(SWEEP) => {}
        }
    }
}

/// Catches `hook` up with its owner's log, then lets it be served again.
async fn serve(
    runtime: Arc<Runtime>,
    events: Arc<Events>,
    hook: Hook,
    serving: Arc<Mutex<HashSet<String>>>,
) {
    let id = hook.id.clone();
    if let Err(why) = catch_up(&runtime, &events, hook).await {
        tracing::debug!(subscription = %id, why, "webhook delivery paused");
    }
    serving
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id);
}

async fn catch_up(runtime: &Runtime, events: &Events, hook: Hook) -> Result<(), &'static str> {
    let config = &events.config;
    match runtime.store.claim_hook(&hook.id, CLAIM).await {
        Ok(true) => {}
        Ok(false) => return Err("another instance delivers it"),
        Err(_) => return Err("the claim could not be made"),
    }
    let url: http::Uri = hook.url.parse().map_err(|_| "stored URL unreadable")?;
    let secret = Secret::parse(&hook.secret).map_err(|_| "stored secret unreadable")?;
    let arguments = serde_json::from_str(&hook.arguments).map_err(|_| "stored arguments")?;
    let filter = Filter::read(Some(&arguments)).map_err(|_| "stored arguments")?;
    let mut cursor = hook.cursor.clone();
    loop {
        let page = runtime
            .store
            .status_events(hook.owner.as_deref(), Some(&cursor), PAGE)
            .await
            .map_err(|_| "the log could not be read")?;
        let (kept, _) = wanted(&page.events, &filter, None);
        for event in kept {
            let sent = send(runtime, config, &url, &hook, &secret, event).await;
            if !sent {
                return Err("the layer drains, or the claim was lost");
            }
            advance(runtime, &hook, &mut cursor, &event.cursor).await?;
        }
        if page.truncated {
            let gap = json!({"type": "gap", "cursor": &page.cursor}).to_string();
            let message = format!("msg_gap_{}", super::deliver::random_hex());
            let post = signed(config, url.clone(), &hook.id, &secret, &message, gap.into());
            let _ = try_send(config, post).await;
        }
        advance(runtime, &hook, &mut cursor, &page.cursor).await?;
        if !page.more {
            return Ok(());
        }
    }
}

/// Moves the subscription's cursor to `to`; `Err` when another instance
/// moved it first.
async fn advance(
    runtime: &Runtime,
    hook: &Hook,
    cursor: &mut String,
    to: &str,
) -> Result<(), &'static str> {
    if cursor == to {
        return Ok(());
    }
    match runtime.store.advance_hook(&hook.id, cursor, to).await {
        Ok(true) => {
            *cursor = to.to_owned();
            Ok(())
        }
        Ok(false) => Err("another instance moved the cursor"),
        Err(_) => Err("the cursor could not be moved"),
    }
}

/// Sends `event` until the receiver takes it or the tries run out; `false`
/// when the layer drains first, or another instance took the claim (the
/// event stays to send).
async fn send(
    runtime: &Runtime,
    config: &EventsConfig,
    url: &http::Uri,
    hook: &Hook,
    secret: &Secret,
    event: &StatusEvent,
) -> bool {
    let body = Bytes::from(
        serde_json::to_vec(&Occurrence::delivered(&config.name, event)).unwrap_or_default(),
    );
    let closing = runtime.background.closing_signal();
    let mut backoff = Backoff::new(config.first_retry, config.max_retry);
    for attempt in 1..=config.attempts {
        // The claim is renewed before each try: a receiver that takes
        // minutes of retries keeps this instance its only deliverer.
        if !matches!(runtime.store.claim_hook(&hook.id, CLAIM).await, Ok(true)) {
            return false;
        }
        let post = signed(
            config,
            url.clone(),
            &hook.id,
            secret,
            &event.id,
            body.clone(),
        );
        match try_send(config, post).await {
            Outcome::Taken => {
                metrics::counter!(names::EVENT_DELIVERIES, "outcome" => "sent").increment(1);
                return true;
            }
            Outcome::Refused => {
                metrics::counter!(names::EVENT_DELIVERIES, "outcome" => "refused").increment(1);
                return true;
            }
            Outcome::Again if attempt == config.attempts => break,
            Outcome::Again => {
                metrics::counter!(names::EVENT_DELIVERIES, "outcome" => "retried").increment(1);
                tokio::select! {
                    _ = closing.cancelled() => return false,
                    _ = backoff.sleep() => {}
                }
            }
        }
    }
    metrics::counter!(names::EVENT_DELIVERIES, "outcome" => "failed").increment(1);
    tracing::warn!(
        subscription = %hook.id,
        event = %event.id,
        attempts = config.attempts,
        "a webhook delivery was given up"
    );
    true
}

/// What one try came to.
enum Outcome {
    /// 2xx.
    Taken,
    /// 410 or 413: never to be tried again.
    Refused,
    /// Anything else: try again.
    Again,
}

async fn try_send(config: &EventsConfig, post: Delivery) -> Outcome {
    let Some(deliver) = config.deliver.as_ref() else {
        return Outcome::Refused;
    };
    let started = Instant::now();
    let answer = deliver.deliver(post).await;
    metrics::histogram!(names::EVENT_DELIVERY_SECONDS).record(started.elapsed().as_secs_f64());
    match answer {
        Ok(answer) if answer.status.is_success() => Outcome::Taken,
        Ok(answer) if matches!(answer.status.as_u16(), 410 | 413) => Outcome::Refused,
        Ok(_) | Err(_) => Outcome::Again,
    }
}
