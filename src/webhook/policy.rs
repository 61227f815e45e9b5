//! Which callback URLs a subscriber may give, and which addresses a
//! delivery may connect to.
//!
//! | Check | Refused by default | Allowed when |
//! |-------|--------------------|--------------|
//! | [`check_url`](CallbackPolicy::check_url): the scheme | anything but `https` | `http` too with [`allow_http`](CallbackPolicy::allow_http) |
//! | the URL's parts | user info, a fragment, no host, more than 2,048 bytes | never |
//! | the host | none | with [`allow_hosts`](CallbackPolicy::allow_hosts), only the hosts listed (`*.example.com` for a domain's names) |
//! | [`check_ip`](CallbackPolicy::check_ip): each resolved address | loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 with the cloud metadata address, fe80::/10), shared (100.64/10), unspecified, multicast, broadcast, documentation and benchmark ranges, and IPv6 forms of these (mapped, NAT64) | with [`allow_private`](CallbackPolicy::allow_private) |

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The longest callback URL accepted.
const MAX_URL: usize = 2048;

/// Which callbacks may be called. The default is the strict one: `https`
/// only, any public host, no address that is not globally routable.
#[derive(Debug, Clone, Default)]
pub struct CallbackPolicy {
    allow_http: bool,
    allow_private: bool,
    hosts: Vec<String>,
}

/// Why a callback URL or address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The URL does not parse, or has a part that is not allowed.
    #[error("the callback URL is not acceptable: {0}")]
    Url(&'static str),
    /// The scheme is not `https` (or `http` where allowed).
    #[error("the callback URL must use https")]
    Scheme,
    /// The host is not among the allowed hosts.
    #[error("the callback host is not allowed")]
    Host,
    /// The host resolves to an address that is not globally routable.
    #[error("the callback host resolves to a non-public address")]
    Address,
}

impl CallbackPolicy {
    /// The strict policy (the default).
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `http` callbacks as well as `https` (a receiver on the
    /// operator's own network, a test).
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Lets deliveries connect to addresses that are not globally routable
    /// (loopback, private, link-local): only for a receiver the operator
    /// runs on its own network.
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Accepts only callbacks to these hosts: an exact name, or
    /// `*.example.com` for every name under `example.com`. Empty (the
    /// default): any host.
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.hosts = hosts
            .into_iter()
            .map(|host| host.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Checks a callback URL as a subscriber gave it; returns it parsed.
    pub fn check_url(&self, url: &str) -> Result<http::Uri, Refused> {
        if url.len() > MAX_URL {
            return Err(Refused::Url("longer than 2048 bytes"));
        }
        if url.contains('#') {
            return Err(Refused::Url("a fragment"));
        }
        let uri: http::Uri = url.parse().map_err(|_| Refused::Url("not a URL"))?;
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if self.allow_http => {}
            _ => return Err(Refused::Scheme),
        }
        let authority = uri.authority().ok_or(Refused::Url("no host"))?;
        if authority.as_str().contains('@') {
            return Err(Refused::Url("user info"));
        }
        let host = authority.host();
        if host.is_empty() {
            return Err(Refused::Url("no host"));
        }
        if !self.host_allowed(host) {
            return Err(Refused::Host);
        }
        Ok(uri)
    }

    /// Checks one address the callback's host resolved to.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refused> {
        if self.allow_private || is_global(ip) {
            Ok(())
        } else {
            Err(Refused::Address)
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        if self.hosts.is_empty() {
            return true;
        }
        let host = host.to_ascii_lowercase();
        self.hosts
            .iter()
            .any(|allowed| match allowed.strip_prefix("*.") {
                Some(domain) => host
                    .strip_suffix(domain)
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
                None => *allowed == host,
            })
    }
}

/// Whether `ip` is globally routable (not in an IANA special-purpose
/// range that must not be reached from a callback).
fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => is_global_v6(v6),
    }
}

fn is_global_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && (c == 0 || c == 2))
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224)
}

fn is_global_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_global_v4(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let [_, _, _, _, _, _, hi, lo] = s;
        let v4 = Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
        return is_global_v4(v4);
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || s[0] & 0xfe00 == 0xfc00
        || s[0] & 0xffc0 == 0xfe80
        || s[0] & 0xff00 == 0xff00
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
        || s[..5] == [0, 0, 0, 0, 0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(ip: &str) -> bool {
        CallbackPolicy::new().check_ip(ip.parse().unwrap()).is_err()
    }

    #[test]
    fn non_public_addresses_are_refused_and_public_ones_pass() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.20.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "::127.0.0.1",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(!refused(ip), "{ip} must pass");
        }
        let open = CallbackPolicy::new().allow_private(true);
        assert!(open.check_ip("127.0.0.1".parse().unwrap()).is_ok());
    }

    #[test]
    fn urls_need_https_a_host_and_no_user_info_or_fragment() {
        let strict = CallbackPolicy::new();
        assert!(strict.check_url("https://hooks.example.com/x?y=1").is_ok());
        assert_eq!(
            strict.check_url("http://hooks.example.com/"),
            Err(Refused::Scheme)
        );
        assert!(strict.check_url("file:///etc/passwd").is_err());
        assert_eq!(strict.check_url("ftp://example.com/"), Err(Refused::Scheme));
        assert!(strict.check_url("https://user:pw@example.com/").is_err());
        assert!(strict.check_url("https://example.com/#frag").is_err());
        assert!(strict.check_url("/relative").is_err());
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        assert!(strict.check_url(&long).is_err());
        assert!(
            CallbackPolicy::new()
                .allow_http(true)
                .check_url("http://localhost:8080/")
                .is_ok()
        );
    }

    #[test]
    fn an_allow_list_names_hosts_or_domains() {
        let listed = CallbackPolicy::new().allow_hosts(["hooks.example.com", "*.corp.example"]);
        assert!(listed.check_url("https://hooks.example.com/").is_ok());
        assert!(listed.check_url("https://a.corp.example/").is_ok());
        assert_eq!(
            listed.check_url("https://corp.example/"),
            Err(Refused::Host)
        );
        assert_eq!(
            listed.check_url("https://evilcorp.example/"),
            Err(Refused::Host)
        );
        assert_eq!(listed.check_url("https://other.com/"), Err(Refused::Host));
    }
}
