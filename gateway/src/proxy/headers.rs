//! Which headers cross the proxy: hop-by-hop ones stop here, forwarding
//! ones are added.

use std::net::SocketAddr;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1),
/// plus the pre-standard `Proxy-Connection`.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

/// Removes the hop-by-hop headers: those the `Connection` header names
/// first, then the fixed list and `Upgrade`.
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers.remove(header::UPGRADE);
}

/// Makes the client's headers fit for the upstream: hop-by-hop headers
/// dropped, `Host` left to the HTTP client (it becomes the upstream's), the
/// original host and the client's address in `Forwarded` and
/// `X-Forwarded-*`, `Authorization` removed unless it is forwarded.
pub(super) fn prepare_request(
    headers: &mut HeaderMap,
    client: Option<SocketAddr>,
    forward_authorization: bool,
) {
    strip_hop_by_hop(headers);
    let host = headers.remove(header::HOST);
    if !forward_authorization {
        headers.remove(header::AUTHORIZATION);
    }
    let Some(client) = client else { return };
    let mut forwarded = format!("for=\"{client}\";proto=http");
    if let Some(host) = host.as_ref().and_then(quotable) {
        forwarded.push_str(&format!(";host=\"{host}\""));
    }
    append(headers, header::FORWARDED, &forwarded);
    append(
        headers,
        HeaderName::from_static("x-forwarded-for"),
        &client.ip().to_string(),
    );
    if let Some(host) = host.as_ref().and_then(|host| host.to_str().ok()) {
        append(headers, HeaderName::from_static("x-forwarded-host"), host);
    }
    append(
        headers,
        HeaderName::from_static("x-forwarded-proto"),
        "http",
    );
}

/// A header value that can go between double quotes as it is.
fn quotable(value: &HeaderValue) -> Option<&str> {
    value
        .to_str()
        .ok()
        .filter(|text| !text.contains(['"', '\\']))
}

/// Adds `value` to a list-valued header: `, value` after what a proxy before
/// this one wrote, so the chain stays in order.
fn append(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    let joined = match headers.get(&name).and_then(|old| old.to_str().ok()) {
        Some(old) => format!("{old}, {value}"),
        None => value.to_owned(),
    };
    if let Ok(joined) = HeaderValue::from_str(&joined) {
        headers.insert(name, joined);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    HeaderValue::from_str(value).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_dropped() {
        let mut headers = map(&[
            ("connection", "keep-alive, x-trace"),
            ("keep-alive", "timeout=5"),
            ("x-trace", "1"),
            ("te", "trailers"),
            ("upgrade", "h2c"),
            ("mcp-session-id", "abc"),
            ("mcp-protocol-version", "2025-11-25"),
            ("last-event-id", "7"),
        ]);
        strip_hop_by_hop(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
        left.sort_unstable();
        assert_eq!(
            left,
            ["last-event-id", "mcp-protocol-version", "mcp-session-id"]
        );
    }

    #[test]
    fn forwarding_headers_append_to_an_earlier_proxy() {
        let mut headers = map(&[
            ("host", "gateway.example:8080"),
            ("x-forwarded-for", "203.0.113.9"),
            ("x-forwarded-proto", "https"),
            ("authorization", "Bearer t"),
        ]);
        let client: SocketAddr = "[::1]:5000".parse().unwrap();
        prepare_request(&mut headers, Some(client), true);
        assert_eq!(headers["x-forwarded-for"], "203.0.113.9, ::1");
        assert_eq!(headers["x-forwarded-host"], "gateway.example:8080");
        assert_eq!(headers["x-forwarded-proto"], "https, http");
        assert_eq!(
            headers["forwarded"],
            "for=\"[::1]:5000\";proto=http;host=\"gateway.example:8080\""
        );
        assert!(headers.get("host").is_none());
        assert_eq!(headers["authorization"], "Bearer t");
    }

    #[test]
    fn authorization_can_stay_at_the_gateway() {
        let mut headers = map(&[("authorization", "Bearer t")]);
        prepare_request(&mut headers, None, false);
        assert!(headers.get("authorization").is_none());
    }
}
