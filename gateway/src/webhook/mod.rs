//! The gateway's webhook transport: [`HttpsDeliver`] sends the library's
//! webhook deliveries ([`mcp_tasks::webhook::Deliver`]) over hyper and
//! rustls, under the rules of [`mcp_tasks::webhook`].
//!
//! | Room | Holds |
//! |------|-------|
//! | `mod.rs` | [`HttpsDeliver`] and its [`HttpsDeliverBuilder`]: one delivery from URL to answer |
//! | `trust.rs` | the certificates a receiver's chain may end in: the platform's roots and extra CAs ([`TrustError`]) |
//! | `connect.rs` | the host resolved, every address checked, a TCP stream to a checked one, TLS for `https` |
//! | `exchange.rs` | the POST on that one connection and the answer read up to its bound |
//!
//! What a delivery does, and what it ends with:
//!
//! | Step | On failure |
//! |------|------------|
//! | the URL checked again by [`CallbackPolicy::check_url`](mcp_tasks::webhook::CallbackPolicy::check_url) (scheme, host list) | [`DeliveryError::Refused`] |
//! | the host resolved (an IP literal is not), each address checked by [`CallbackPolicy::check_ip`](mcp_tasks::webhook::CallbackPolicy::check_ip); only the allowed ones are kept | [`DeliveryError::Refused`]`(`[`Refused::Address`]`)` when none is; [`DeliveryError::Connect`] when the name does not resolve |
//! | a TCP connection to a kept address, tried in the resolver's order; the name is never resolved again | [`DeliveryError::Connect`] |
//! | for `https`, TLS with SNI and the certificate verified for the URL's host (not the address) | [`DeliveryError::Tls`] |
//! | one HTTP/1.1 `POST` with exactly [`Delivery::headers`] and [`Delivery::body`], plus `Host` (and the `Content-Length` of the body) | [`DeliveryError::Connect`] |
//! | the answer: its status, any status (a 3xx is returned, never followed), and its body up to [`Delivery::max_answer`] bytes | [`DeliveryError::AnswerTooLarge`], reading stops at once |
//! | all of it within [`Delivery::timeout`] | [`DeliveryError::Timeout`] |
//!
//! Each delivery opens its own connection and closes it when it ends: no
//! pool. A pooled connection would have to be keyed by the checked address
//! as well as the host, and deliveries to one receiver are seldom close
//! enough together for a handshake saved to matter; a fresh connection
//! also means that a delivery dropped halfway (its timeout, a shutdown)
//! leaves nothing open behind it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use mcp_tasks_gateway::webhook::HttpsDeliver;
//! use mcp_tasks::webhook::Deliver;
//!
//! # fn build() -> Result<(), mcp_tasks_gateway::webhook::TrustError> {
//! let transport: Arc<dyn Deliver> = Arc::new(
//!     HttpsDeliver::builder()
//!         .ca_file("/etc/mcp/receivers-ca.pem")
//!         .build()?,
//! );
//! # let _ = transport;
//! # Ok(())
//! # }
//! ```

mod connect;
mod exchange;
mod trust;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_tasks::webhook::{Deliver, DeliverFuture, Delivered, Delivery, DeliveryError, Refused};

pub use trust::TrustError;

/// A [`Deliver`] over HTTP/1.1 and rustls (aws-lc-rs): resolves the
/// callback's host itself, connects only to an address the delivery's
/// [`CallbackPolicy`](mcp_tasks::webhook::CallbackPolicy) allows, follows no
/// redirect and bounds the time and the answer (see the [module
/// documentation](self)).
#[derive(Clone)]
pub struct HttpsDeliver {
    tls: tokio_rustls::TlsConnector,
    roots: usize,
}

impl HttpsDeliver {
    /// A transport that trusts the platform's roots only (see
    /// [`HttpsDeliverBuilder::build`] for its errors).
    pub fn new() -> Result<Self, TrustError> {
        Self::builder().build()
    }

    /// A builder, to add CA certificates or leave out the platform's roots.
    pub fn builder() -> HttpsDeliverBuilder {
        HttpsDeliverBuilder {
            platform_roots: true,
            ca_files: Vec::new(),
            extra_pems: Vec::new(),
        }
    }

    /// How many trust anchors a receiver's chain may end in.
    pub fn roots(&self) -> usize {
        self.roots
    }
}

impl fmt::Debug for HttpsDeliver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpsDeliver")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl Deliver for HttpsDeliver {
    fn deliver(&self, delivery: Delivery) -> DeliverFuture {
        let tls = self.tls.clone();
        Box::pin(async move {
            let timeout = delivery.timeout;
            match tokio::time::timeout(timeout, deliver(tls, delivery)).await {
                Ok(answer) => answer,
                Err(_) => Err(DeliveryError::Timeout),
            }
        })
    }
}

/// One delivery, unbounded in time (the caller bounds it).
async fn deliver(
    tls: tokio_rustls::TlsConnector,
    delivery: Delivery,
) -> Result<Delivered, DeliveryError> {
    let url = delivery
        .policy
        .check_url(&delivery.url.to_string())
        .map_err(DeliveryError::Refused)?;
    let target = connect::Target::of(&url)?;
    let stream = connect::open(&target, &delivery.policy, &tls).await?;
    exchange::post(stream, &target, delivery).await
}

/// Builds an [`HttpsDeliver`]: which certificates it trusts.
#[derive(Debug, Clone)]
pub struct HttpsDeliverBuilder {
    platform_roots: bool,
    ca_files: Vec<PathBuf>,
    extra_pems: Vec<Vec<u8>>,
}

impl HttpsDeliverBuilder {
    /// Whether to trust the platform's root certificates (default: yes),
    /// as `rustls-native-certs` finds them (`SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` are honoured). Without them, only the CAs added with
    /// [`ca_file`](Self::ca_file) or [`extra_roots`](Self::extra_roots)
    /// are.
    pub fn platform_roots(mut self, trust: bool) -> Self {
        self.platform_roots = trust;
        self
    }

    /// Trusts every CA certificate in this PEM file as well (the
    /// operator's private CA for receivers on its own network). Read by
    /// [`build`](Self::build).
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_files.push(path.into());
        self
    }

    /// Trusts every CA certificate in these PEM bytes as well.
    pub fn extra_roots(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.extra_pems.push(pem.into());
        self
    }

    /// The transport. Fails when a CA file cannot be read, holds no
    /// certificate or one that is not valid, or when nothing at all is
    /// trusted (no platform roots were found and none was added): a
    /// transport that trusts nothing could deliver to no `https` receiver.
    /// A platform root that does not parse is skipped, as browsers do.
    pub fn build(self) -> Result<HttpsDeliver, TrustError> {
        let roots = trust::roots(self.platform_roots, &self.ca_files, &self.extra_pems)?;
        let count = roots.len();
        let config = trust::client_config(roots)?;
        Ok(HttpsDeliver {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            roots: count,
        })
    }
}

/// The refusal for a URL this transport cannot address (no host, a host
/// that is not a DNS name or an address).
fn unusable(reason: &'static str) -> DeliveryError {
    DeliveryError::Refused(Refused::Url(reason))
}
