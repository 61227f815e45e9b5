//! From a callback URL to an open stream: which addresses may be
//! connected to, the connection to one of them, TLS on top for `https`.
//!
//! | Case | Outcome |
//! |------|---------|
//! | the host is an IP literal (`127.0.0.1`, `[::1]`) | no lookup: that address is checked |
//! | a name | resolved once (`tokio::net::lookup_host`); never again for this delivery |
//! | it does not resolve, or to nothing | [`DeliveryError::Connect`] |
//! | some addresses [`check_ip`](mcp_tasks::webhook::CallbackPolicy::check_ip) refuses | dropped; the others are kept |
//! | every address refused | [`Refused::Address`], before any connection |
//! | a kept address does not accept | the next kept one is tried, in the resolver's order |
//! | none accepts | [`DeliveryError::Connect`] |
//! | `https` | TLS with SNI and the chain verified for the URL's host (a name, or the IP literal), never for the address connected to |
//! | the handshake fails (untrusted chain, wrong name, no TLS) | [`DeliveryError::Tls`] |

use std::net::{IpAddr, SocketAddr};

use http::Uri;
use mcp_tasks::webhook::{CallbackPolicy, DeliveryError, Refused};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

use super::unusable;

/// The stream a delivery is sent on: plain TCP for `http`, TLS for `https`.
pub(super) type Stream = Either<TcpStream, TlsStream<TcpStream>>;

/// Where a delivery goes, taken apart from its URL.
#[derive(Debug)]
pub(super) struct Target {
    /// The host as a resolver or an address parser takes it (an IPv6
    /// literal without its brackets).
    host: String,
    /// The host when it is an IP literal.
    ip: Option<IpAddr>,
    port: u16,
    /// For `https`: the name the certificate must be valid for.
    server_name: Option<ServerName<'static>>,
    /// The URL's authority, as the `Host` header carries it.
    pub(super) authority: String,
    /// The request target: the path and the query.
    pub(super) path: String,
}

impl Target {
    /// The target of an already checked URL.
    pub(super) fn of(url: &Uri) -> Result<Self, DeliveryError> {
        let https = match url.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(DeliveryError::Refused(Refused::Scheme)),
        };
        let authority = url.authority().ok_or_else(|| unusable("no host"))?;
        let written = authority.host();
        let host = written
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(written)
            .to_owned();
        if host.is_empty() {
            return Err(unusable("no host"));
        }
        let ip = host.parse::<IpAddr>().ok();
        let server_name = if https {
            Some(match ip {
                Some(ip) => ServerName::IpAddress(ip.into()),
                None => ServerName::try_from(host.clone())
                    .map_err(|_| unusable("the host is not a DNS name"))?,
            })
        } else {
            None
        };
        Ok(Self {
            host,
            ip,
            port: url.port_u16().unwrap_or(if https { 443 } else { 80 }),
            server_name,
            authority: authority.as_str().to_owned(),
            path: url
                .path_and_query()
                .map_or("/", |path| path.as_str())
                .to_owned(),
        })
    }
}

/// A stream to a policy-checked address of `target`, with TLS done for
/// `https`.
pub(super) async fn open(
    target: &Target,
    policy: &CallbackPolicy,
    tls: &TlsConnector,
) -> Result<Stream, DeliveryError> {
    let addresses = allowed(target, policy).await?;
    let tcp = connect(&addresses).await?;
    match &target.server_name {
        None => Ok(Either::Left(tcp)),
        Some(name) => tls
            .connect(name.clone(), tcp)
            .await
            .map(Either::Right)
            .map_err(|error| {
                tracing::debug!(%error, host = %target.host, "webhook TLS handshake failed");
                DeliveryError::Tls
            }),
    }
}

/// The addresses of `target` the policy allows, in the resolver's order.
async fn allowed(
    target: &Target,
    policy: &CallbackPolicy,
) -> Result<Vec<SocketAddr>, DeliveryError> {
    let resolved: Vec<SocketAddr> = match target.ip {
        Some(ip) => vec![SocketAddr::new(ip, target.port)],
        None => tokio::net::lookup_host((target.host.as_str(), target.port))
            .await
            .map_err(|error| {
                tracing::debug!(%error, host = %target.host, "webhook host does not resolve");
                DeliveryError::Connect
            })?
            .collect(),
    };
    if resolved.is_empty() {
        return Err(DeliveryError::Connect);
    }
    let allowed: Vec<SocketAddr> = resolved
        .iter()
        .copied()
        .filter(|address| policy.check_ip(address.ip()).is_ok())
        .collect();
    if allowed.is_empty() {
        tracing::debug!(host = %target.host, addresses = ?resolved, "webhook host refused: no allowed address");
        return Err(DeliveryError::Refused(Refused::Address));
    }
    Ok(allowed)
}

/// A TCP connection to the first of `addresses` that accepts.
async fn connect(addresses: &[SocketAddr]) -> Result<TcpStream, DeliveryError> {
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => {
                // A delivery is one request and its answer: no batching.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(error) => {
                tracing::debug!(%error, %address, "webhook connection failed");
            }
        }
    }
    Err(DeliveryError::Connect)
}
