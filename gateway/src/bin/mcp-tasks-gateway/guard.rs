//! DNS-rebinding protection: the `Host` and `Origin` headers a request may
//! carry.
//!
//! A web page on another site can make a browser send requests to a
//! gateway on the user's own machine once its DNS name resolves to a
//! loopback address; `Host` then names the attacker's site, and `Origin`
//! too. So a gateway listening on loopback accepts only loopback host names
//! and origins unless told otherwise. Requests without `Origin` (from
//! programs, not browsers) are not refused for lacking one.
//!
//! Before that, the framing of the target (RFC 9112, 3.2): a request with
//! several `Host` lines, or whose absolute-form target names another host
//! than its `Host` header, gets `400`; an absolute-form target is itself
//! the host the guard checks.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

/// The accepted `Host` and `Origin` values.
#[derive(Debug)]
pub struct Guard {
    /// Host names (without port) accepted; `None` accepts any.
    hosts: Option<Vec<String>>,
    /// Origins accepted, or origin host names when `by_host`; `None`
    /// accepts any.
    origins: Option<Vec<String>>,
    /// Whether `origins` holds host names (the loopback default) rather
    /// than whole origins.
    by_host: bool,
}

/// The host names of a machine's own loopback interface.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    /// The guard for a gateway listening on `listen`, with the hosts and
    /// origins configured (empty: the defaults; `*`: any).
    pub fn new(listen: SocketAddr, hosts: &[String], origins: &[String]) -> Self {
        let loopback = listen.ip().is_loopback();
        let any = |list: &[String]| list.iter().any(|item| item == "*");
        let hosts = if any(hosts) {
            None
        } else if !hosts.is_empty() {
            // Names, compared without the port: `localhost:8080` means `localhost`.
            Some(
                hosts
                    .iter()
                    .map(|host| host_name(host.trim()).to_ascii_lowercase())
                    .collect(),
            )
        } else if loopback {
            Some(LOOPBACK_HOSTS.map(str::to_owned).to_vec())
        } else {
            None
        };
        let (origins, by_host) = if any(origins) {
            (None, false)
        } else if !origins.is_empty() {
            let origins = origins
                .iter()
                .map(|origin| origin.trim().trim_end_matches('/').to_ascii_lowercase())
                .collect();
            (Some(origins), false)
        } else if loopback {
            (Some(LOOPBACK_HOSTS.map(str::to_owned).to_vec()), true)
        } else {
            (Some(Vec::new()), false)
        };
        Self {
            hosts,
            origins,
            by_host,
        }
    }

    /// Why a request with these headers is refused, if it is.
    fn refusal(
        &self,
        host: Option<&HeaderValue>,
        origin: Option<&HeaderValue>,
    ) -> Option<&'static str> {
        if let Some(hosts) = &self.hosts {
            let name = host
                .and_then(|value| value.to_str().ok())
                .map(|value| host_name(value).to_ascii_lowercase());
            if !name.is_some_and(|name| hosts.contains(&name)) {
                return Some("Host header not allowed");
            }
        }
        if let (Some(origins), Some(origin)) = (&self.origins, origin) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            let key = if self.by_host {
                origin
                    .split_once("://")
                    .map(|(_, rest)| host_name(rest).to_owned())
                    .unwrap_or_default()
            } else {
                origin
            };
            if !origins.contains(&key) {
                return Some("Origin not allowed");
            }
        }
        None
    }
}

/// `host[:port]` or `[v6][:port]` without the port.
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// The host a request names, or why its framing is refused (`400`): one
/// `Host` line at most, and an absolute-form target that names the same
/// host as `Host` (the target then is the host).
fn named_host<B>(request: &http::Request<B>) -> Result<Option<HeaderValue>, &'static str> {
    let mut lines = request.headers().get_all(header::HOST).iter();
    let host = lines.next();
    if lines.next().is_some() {
        return Err("Bad Request: several Host headers");
    }
    let Some(target) = request.uri().authority() else {
        return Ok(host.cloned());
    };
    let target = target.as_str();
    if host.is_some_and(|host| !host.as_bytes().eq_ignore_ascii_case(target.as_bytes())) {
        return Err("Bad Request: the request target names another host than Host");
    }
    Ok(HeaderValue::from_str(target).ok())
}

/// The axum middleware: `400` for a request whose target is framed
/// ambiguously, `403` for a refused one, each with a JSON-RPC error.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let refused = match named_host(&request) {
        Err(reason) => Some((StatusCode::BAD_REQUEST, reason)),
        Ok(host) => guard
            .refusal(host.as_ref(), headers.get(header::ORIGIN))
            .map(|reason| (StatusCode::FORBIDDEN, reason)),
    };
    let Some((status, reason)) = refused else {
        return next.run(request).await;
    };
    tracing::warn!(
        host = ?headers.get_all(header::HOST).iter().collect::<Vec<_>>(),
        target = %request.uri(),
        origin = ?headers.get(header::ORIGIN),
        "{reason}"
    );
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": reason},
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(target: &str, hosts: &[&str]) -> http::Request<()> {
        let mut request = http::Request::builder().uri(target);
        for host in hosts {
            request = request.header(header::HOST, *host);
        }
        request.body(()).unwrap()
    }

    #[test]
    fn one_host_and_a_target_that_agrees_with_it_name_the_host() {
        let named = |target, hosts: &[&str]| named_host(&request(target, hosts));
        assert_eq!(
            named("/mcp", &["localhost:8080"]),
            Ok(Some(value("localhost:8080")))
        );
        assert_eq!(named("/mcp", &[]), Ok(None));
        let agreed = named("http://LOCALHOST:8080/mcp", &["localhost:8080"]);
        assert_eq!(agreed, Ok(Some(value("LOCALHOST:8080"))));
        assert_eq!(
            named("http://evil.example/mcp", &[]),
            Ok(Some(value("evil.example")))
        );
        assert!(named("/mcp", &["localhost", "evil.example"]).is_err());
        assert!(named("http://evil.example/mcp", &["localhost:8080"]).is_err());
    }

    fn value(text: &str) -> HeaderValue {
        HeaderValue::from_str(text).unwrap()
    }

    fn loopback() -> Guard {
        Guard::new("127.0.0.1:8080".parse().unwrap(), &[], &[])
    }

    #[test]
    fn loopback_accepts_its_own_names_with_any_port() {
        let guard = loopback();
        for host in ["localhost:8080", "127.0.0.1:9", "[::1]:8080", "LOCALHOST"] {
            assert_eq!(guard.refusal(Some(&value(host)), None), None, "{host}");
        }
        let origin = value("http://localhost:3000");
        assert_eq!(
            guard.refusal(Some(&value("localhost")), Some(&origin)),
            None
        );
    }

    #[test]
    fn loopback_refuses_a_rebound_name_or_a_foreign_origin() {
        let guard = loopback();
        assert!(
            guard
                .refusal(Some(&value("evil.example:8080")), None)
                .is_some()
        );
        assert!(guard.refusal(None, None).is_some());
        let origin = value("https://evil.example");
        assert!(
            guard
                .refusal(Some(&value("localhost")), Some(&origin))
                .is_some()
        );
    }

    #[test]
    fn configured_lists_replace_the_defaults() {
        // A port on a host name and a slash after an origin are ignored.
        let hosts = ["mcp.example.com:443".to_owned()];
        let origins = ["https://app.example.com/".to_owned()];
        let guard = Guard::new("0.0.0.0:80".parse().unwrap(), &hosts, &origins);
        let host = value("mcp.example.com");
        assert_eq!(guard.refusal(Some(&host), None), None);
        assert_eq!(
            guard.refusal(Some(&host), Some(&value("https://app.example.com"))),
            None
        );
        assert!(
            guard
                .refusal(Some(&host), Some(&value("https://other.example")))
                .is_some()
        );
        assert!(guard.refusal(Some(&value("localhost")), None).is_some());
    }

    #[test]
    fn public_listen_checks_no_host_but_refuses_browser_origins_by_default() {
        let guard = Guard::new("0.0.0.0:80".parse().unwrap(), &[], &[]);
        assert_eq!(guard.refusal(Some(&value("anything")), None), None);
        assert!(
            guard
                .refusal(None, Some(&value("https://app.example")))
                .is_some()
        );
        let open = Guard::new("0.0.0.0:80".parse().unwrap(), &[], &["*".to_owned()]);
        assert_eq!(
            open.refusal(None, Some(&value("https://app.example"))),
            None
        );
    }
}
