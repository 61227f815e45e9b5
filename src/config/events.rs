//! [`EventsConfig`]: task events by the MCP Events extension (off unless
//! set with [`TasksLayer::events`](crate::TasksLayer::events)).

use std::sync::Arc;
use std::time::Duration;

use crate::webhook::{CallbackPolicy, Deliver};

/// Task events: each status change of a caller's tasks, delivered by
/// `events/poll`, `events/stream` and, with a transport, signed webhooks
/// (`events/subscribe`).
///
/// | Setting | Default | Why this default |
/// |---------|---------|------------------|
/// | `name` | `mcp-tasks/status` | the event type's name; a `/` and the crate's name keep it apart from an inner server's own event types |
/// | `deliver` | none | the library makes no HTTP request itself: without a transport ([`EventsConfig::webhooks`]) the event type offers poll and push only |
/// | `policy` | [`CallbackPolicy::new`] | `https` only, no address that is not globally routable: a webhook is otherwise a way into the operator's network |
/// | `max_streams` | 16 per principal, 1 000 in all | each `events/stream` is an open connection the layer feeds |
/// | `max_hooks` | 16 per principal, 10 000 in all | each webhook subscription is a record in the store and deliveries the server pays for |
/// | `hook_ttl` | 1 hour, at most 1 day | a subscription the client stops refreshing lapses; a client may ask for less, never for more |
/// | `attempts` | 5, from 1 s doubling to at most 5 min | a receiver that is down for a few minutes still gets the event; one that stays down costs at most five tries an event (about 15 minutes) |
/// | `delivery_timeout` | 5 s | receivers are told to answer at once and queue the work |
/// | `max_answer` | 64 KiB | a receiver's answer is read only for the verification challenge |
/// | `max_events` | 100 a poll, 1 000 at most | one store read a poll |
/// | `heartbeat` | 15 s | the extension asks for one at least every 30 s on a stream |
#[derive(Clone)]
pub struct EventsConfig {
    pub(crate) name: Arc<str>,
    pub(crate) deliver: Option<Arc<dyn Deliver>>,
    pub(crate) policy: Arc<CallbackPolicy>,
    pub(crate) max_streams: (u32, u32),
    pub(crate) max_hooks: (u32, u32),
    pub(crate) hook_ttl: Duration,
    pub(crate) max_hook_ttl: Duration,
    pub(crate) attempts: u32,
    pub(crate) first_retry: Duration,
    pub(crate) max_retry: Duration,
    pub(crate) delivery_timeout: Duration,
    pub(crate) max_answer: usize,
    pub(crate) max_events: usize,
    pub(crate) heartbeat: Duration,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            name: Arc::from("mcp-tasks/status"),
            deliver: None,
            policy: Arc::new(CallbackPolicy::new()),
            max_streams: (16, 1_000),
            max_hooks: (16, 10_000),
            hook_ttl: Duration::from_secs(3600),
            max_hook_ttl: Duration::from_secs(24 * 3600),
            attempts: 5,
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(300),
            delivery_timeout: Duration::from_secs(5),
            max_answer: 64 * 1024,
            max_events: 100,
            heartbeat: Duration::from_secs(15),
        }
    }
}

impl std::fmt::Debug for EventsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsConfig")
            .field("name", &self.name)
            .field("webhooks", &self.deliver.is_some())
            .field("policy", &self.policy)
            .field("max_streams", &self.max_streams)
            .field("max_hooks", &self.max_hooks)
            .field("hook_ttl", &self.hook_ttl)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

impl EventsConfig {
    /// Task events with the defaults above: poll and push.
    pub fn new() -> Self {
        Self::default()
    }

    /// The event type's name (default `mcp-tasks/status`).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Offers webhooks too: deliveries go through `deliver`, to callbacks
    /// `policy` allows.
    pub fn webhooks(mut self, deliver: impl Deliver, policy: CallbackPolicy) -> Self {
        self.deliver = Some(Arc::new(deliver));
        self.policy = Arc::new(policy);
        self
    }

    /// The most open `events/stream` requests per principal and in all.
    pub fn max_streams(mut self, per_principal: u32, total: u32) -> Self {
        self.max_streams = (per_principal, total);
        self
    }

    /// The most webhook subscriptions per principal and in the store.
    pub fn max_hooks(mut self, per_principal: u32, total: u32) -> Self {
        self.max_hooks = (per_principal, total);
        self
    }

    /// A webhook subscription's lifetime when the client names none, and
    /// the longest it may ask for.
    pub fn hook_ttl(mut self, default: Duration, max: Duration) -> Self {
        self.hook_ttl = default.min(max);
        self.max_hook_ttl = max;
        self
    }

    /// How many times an event is sent to a receiver that does not take
    /// it, and the wait before the second try (doubling after, up to
    /// `max_wait`).
    pub fn retries(mut self, attempts: u32, first_wait: Duration, max_wait: Duration) -> Self {
        self.attempts = attempts.max(1);
        self.first_retry = first_wait;
        self.max_retry = max_wait.max(first_wait);
        self
    }

    /// The most time one delivery may take.
    pub fn delivery_timeout(mut self, timeout: Duration) -> Self {
        self.delivery_timeout = timeout;
        self
    }

    /// How often a quiet `events/stream` gets a heartbeat (at most 30 s).
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every.min(Duration::from_secs(30));
        self
    }

    /// Whether webhooks are offered (a transport was given).
    pub fn has_webhooks(&self) -> bool {
        self.deliver.is_some()
    }

    /// The event type's name.
    pub fn event_name(&self) -> &str {
        &self.name
    }
}
