//! Webhook deliveries of task events (the MCP Events extension's
//! `events/subscribe` mode): what the layer hands to a transport, what it
//! gets back, which callback addresses may be called, and the signature.
//!
//! | Room | Holds |
//! |------|-------|
//! | `mod.rs` | [`Deliver`]: the transport contract; [`Delivery`], [`Delivered`], [`DeliveryError`] |
//! | `policy.rs` | [`CallbackPolicy`]: the callback URLs and the resolved addresses a delivery may go to |
//! | `sign.rs` | [`Secret`] and [`sign`]: the Standard Webhooks `v1` signature (HMAC-SHA256) |
//!
//! The library makes no HTTP request itself (it compiles no HTTP client):
//! a [`Deliver`] does. `mcp-tasks-gateway` has one over hyper and rustls;
//! an embedding server passes its own to
//! `EventsConfig::webhooks`. Without one,
//! the layer's event type offers poll and push only.
//!
//! A transport must, for every delivery:
//!
//! | Rule | Why |
//! |------|-----|
//! | resolve the host and connect only to an address [`CallbackPolicy::check_ip`] allows, the one it checked | a name that resolves to a private address (or re-resolves to one: DNS rebinding) must not make the server call into its own network |
//! | follow no redirect | a redirect is another way to a private address |
//! | stop after [`Delivery::timeout`] and read at most [`Delivery::max_answer`] bytes of the answer | a slow or endless receiver must not hold a delivery slot forever |
//! | send [`Delivery::headers`] and [`Delivery::body`] unchanged | the signature covers the body's exact bytes |

mod policy;
mod sign;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

pub use policy::{CallbackPolicy, Refused};
pub use sign::{Secret, SecretError, sign};

/// One POST to a subscriber's callback URL.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The callback URL as the subscriber gave it (checked by
    /// [`CallbackPolicy::check_url`] when it subscribed).
    pub url: http::Uri,
    /// `content-type`, `webhook-id`, `webhook-timestamp`,
    /// `webhook-signature` and `x-mcp-subscription-id`.
    pub headers: http::HeaderMap,
    /// The JSON body, signed as it is.
    pub body: Bytes,
    /// Which addresses the transport may connect to.
    pub policy: Arc<CallbackPolicy>,
    /// The most time the whole delivery (connect, send, answer) may take.
    pub timeout: Duration,
    /// The most bytes of the receiver's answer body to read.
    pub max_answer: usize,
}

/// What the receiver answered.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// Its HTTP status.
    pub status: http::StatusCode,
    /// Its body, at most [`Delivery::max_answer`] bytes of it.
    pub body: Bytes,
}

/// Why a delivery got no answer. Each maps to one of the extension's
/// `lastError` categories ([`DeliveryError::category`]); none carries the
/// receiver's own text, which a subscriber must never see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The address is one [`CallbackPolicy`] does not allow, or the URL
    /// is not one it accepts.
    #[error("callback refused: {0}")]
    Refused(Refused),
    /// No connection could be made (refused, unreachable, no address).
    #[error("connection refused")]
    Connect,
    /// [`Delivery::timeout`] passed.
    #[error("timed out")]
    Timeout,
    /// The TLS handshake failed (an untrusted certificate, a wrong name).
    #[error("TLS error")]
    Tls,
    /// The answer was longer than [`Delivery::max_answer`].
    #[error("answer too large")]
    AnswerTooLarge,
}

impl DeliveryError {
    /// The extension's `lastError` category for this failure.
    pub fn category(&self) -> &'static str {
        match self {
            DeliveryError::Refused(_) | DeliveryError::Connect => "connection_refused",
            DeliveryError::Timeout => "timeout",
            DeliveryError::Tls => "tls_error",
            DeliveryError::AnswerTooLarge => "http_5xx",
        }
    }
}

/// The future a [`Deliver`] returns.
pub type DeliverFuture = Pin<Box<dyn Future<Output = Result<Delivered, DeliveryError>> + Send>>;

/// A transport for webhook deliveries: POSTs one [`Delivery`] under the
/// rules in the module's documentation.
pub trait Deliver: Send + Sync + 'static {
    /// Sends `delivery` and reads the answer.
    fn deliver(&self, delivery: Delivery) -> DeliverFuture;
}

impl fmt::Debug for dyn Deliver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Deliver")
    }
}
