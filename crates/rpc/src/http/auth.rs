//! Who may use the endpoint: bearer tokens (authentication), allowed `Origin`s and
//! allowed `Host`s (DNS rebinding protection).

use sha2::{Digest, Sha256};

/// Bearer tokens and the principal each authenticates.
///
/// Tokens are kept only as SHA-256 digests, and a presented token is compared with every
/// digest without an early exit, so the time taken says nothing about how much of a
/// token matched.
#[derive(Clone, Default)]
pub struct BearerTokens {
    entries: Vec<([u8; 32], String)>,
}

impl std::fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a token (nor its digest).
        f.debug_struct("BearerTokens")
            .field("count", &self.entries.len())
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equality of two digests in time independent of where they differ (`subtle`).
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    bool::from(subtle::ConstantTimeEq::ct_eq(&a[..], &b[..]))
}

impl BearerTokens {
    /// No tokens: authentication is off.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accept `token` as `principal`. A token given twice keeps its last principal.
    pub fn insert(&mut self, token: &str, principal: &str) {
        let d = digest(token);
        self.entries.retain(|(e, _)| !ct_eq(e, &d));
        self.entries.push((d, principal.to_owned()));
    }

    /// Whether no token is configured (authentication is off).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The principal `presented` authenticates, if any. Scans every entry.
    pub fn authenticate(&self, presented: &str) -> Option<&str> {
        let d = digest(presented);
        let mut found = None;
        for (e, principal) in &self.entries {
            if ct_eq(e, &d) {
                found = Some(principal.as_str());
            }
        }
        found
    }
}

/// The static bearer token last accepted on one connection, and its principal: a client
/// sends the same token with every request of its connection, which is then recognised by
/// comparing it with this one (in constant time, as [`BearerTokens::authenticate`]
/// compares digests) instead of digesting it again. The tokens of a server do not change
/// while it runs, so a token accepted once stays accepted.
#[derive(Default)]
pub(crate) struct LastToken(parking_lot::Mutex<Option<(Box<[u8]>, String)>>);

impl LastToken {
    /// The principal of `presented` when it is the token last accepted here.
    pub(crate) fn principal_of(&self, presented: &str) -> Option<String> {
        let last = self.0.lock();
        let (token, principal) = last.as_ref()?;
        bool::from(subtle::ConstantTimeEq::ct_eq(
            &token[..],
            presented.as_bytes(),
        ))
        .then(|| principal.clone())
    }

    /// `presented` was accepted as `principal`.
    pub(crate) fn remember(&self, presented: &str, principal: &str) {
        *self.0.lock() = Some((presented.as_bytes().into(), principal.to_owned()));
    }
}

/// Which `Origin` header values are accepted.
///
/// Spec (transports, security warning): "Servers MUST validate the `Origin` header on all
/// incoming connections to prevent DNS rebinding attacks. If the `Origin` header is
/// present and invalid, servers MUST respond with HTTP 403 Forbidden." A request without
/// an `Origin` header comes from a non-browser client and is accepted.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    allowed: Vec<String>,
    loopback: bool,
}

impl Default for OriginPolicy {
    fn default() -> Self {
        Self {
            allowed: Vec::new(),
            loopback: true,
        }
    }
}

fn normalize(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

impl OriginPolicy {
    /// Loopback origins (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`, and
    /// their https forms) plus exactly `allowed` (`scheme://host[:port]`).
    pub fn new(allowed: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        Self {
            allowed: allowed.into_iter().map(|s| normalize(s.as_ref())).collect(),
            loopback: true,
        }
    }

    /// Whether loopback origins are accepted without being listed (default: yes).
    #[must_use]
    pub fn with_loopback(mut self, on: bool) -> Self {
        self.loopback = on;
        self
    }

    /// Whether `origin` (an `Origin` header value) is accepted.
    pub fn allows(&self, origin: &str) -> bool {
        let o = normalize(origin);
        if self.allowed.iter().any(|a| *a == o || a == "*") {
            return true;
        }
        self.loopback && is_loopback_origin(&o)
    }
}

/// `http(s)://localhost[:port]`, `http(s)://127.x.y.z[:port]`, `http(s)://[::1][:port]`.
fn is_loopback_origin(o: &str) -> bool {
    let Some(rest) = o
        .strip_prefix("http://")
        .or_else(|| o.strip_prefix("https://"))
    else {
        return false;
    };
    if rest.contains('/') || rest.contains('@') {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, tail)) if tail.is_empty() || valid_port(tail) => return h == "::1",
            _ => return false,
        }
    } else {
        match rest.split_once(':') {
            Some((h, port)) if valid_port(&format!(":{port}")) => h,
            Some(_) => return false,
            None => rest,
        }
    };
    host == "localhost"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn valid_port(tail: &str) -> bool {
    tail.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.parse::<u16>().is_ok())
}

/// Accepted `Host` header values: the other half of the DNS rebinding protection. A page
/// of a hostile name that re-resolves to this server's address is same-origin for the
/// browser (which then sends no `Origin` on a GET), but its requests carry the hostile name
/// in `Host`.
///
/// Accepted: an IP literal (a browser names the address it reached), `localhost`, and every
/// listed name (`--allowed-host`, `*` for any). Any other name is refused when the server
/// listens on a loopback address, or when names are listed; a server on another address
/// without a list cannot know the names it is reached by, and accepts them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPolicy {
    allowed: Vec<String>,
}

impl HostPolicy {
    /// Loopback names and IP literals, plus exactly the names in `allowed` (`host` or
    /// `host:port`, whose port is ignored; `*` accepts every name).
    pub fn new(allowed: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        Self {
            allowed: allowed
                .into_iter()
                .filter_map(|s| {
                    let s = s.as_ref().trim();
                    if s == "*" {
                        Some("*".to_owned())
                    } else {
                        host_name(s)
                    }
                })
                .collect(),
        }
    }

    /// Whether a request with `Host: host` may be served by a server listening on
    /// `listen` (`None`: unknown, as for a router served by its embedder).
    pub fn allows(&self, host: &str, listen: Option<std::net::SocketAddr>) -> bool {
        // An IPv4 literal, with or without a port (what a client that reached the server
        // by its address sends on every request), is accepted below whatever the list:
        // answered here without the copies `host_name` makes.
        if host.parse::<std::net::SocketAddrV4>().is_ok()
            || host.parse::<std::net::Ipv4Addr>().is_ok()
        {
            return true;
        }
        self.allows_by_name(host, listen)
    }

    /// [`Self::allows`] from the host's name.
    fn allows_by_name(&self, host: &str, listen: Option<std::net::SocketAddr>) -> bool {
        let Some(name) = host_name(host) else {
            return false;
        };
        if self.allowed.iter().any(|a| *a == name || a == "*")
            || name == "localhost"
            || name.parse::<std::net::IpAddr>().is_ok()
        {
            return true;
        }
        self.allowed.is_empty() && listen.is_none_or(|a| !a.ip().is_loopback())
    }
}

/// The name of a `Host` value, lowercased, without its port or an IPv6 literal's brackets;
/// `None` when it is not `host[:port]`.
fn host_name(host: &str) -> Option<String> {
    let h = host.trim().to_ascii_lowercase();
    let name = if let Some(v6) = h.strip_prefix('[') {
        let (addr, tail) = v6.split_once(']')?;
        if !(tail.is_empty() || valid_port(tail)) {
            return None;
        }
        addr.to_owned()
    } else {
        match h.split_once(':') {
            Some((n, port)) if valid_port(&format!(":{port}")) => n.to_owned(),
            Some(_) => return None,
            None => h.clone(),
        }
    };
    let name = name.strip_suffix('.').unwrap_or(&name).to_owned();
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':')))
    .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `allows` says yes to every value of `ok` and no to every value of `bad`.
    fn sorts(allows: impl Fn(&str) -> bool, ok: &[&str], bad: &[&str]) {
        for v in ok {
            assert!(allows(v), "{v}");
        }
        for v in bad {
            assert!(!allows(v), "{v}");
        }
    }

    /// The shortcut for IPv4 literals answers what the names' rule answers.
    #[test]
    fn ipv4_literals_are_answered_as_by_their_name() {
        let listen = Some("127.0.0.1:8080".parse().unwrap());
        for policy in [HostPolicy::default(), HostPolicy::new(["mcp.example.com"])] {
            for host in [
                "127.0.0.1",
                "127.0.0.1:8080",
                "10.1.2.3:0",
                "192.168.0.1:65535",
                "192.168.0.1:65536",
                "1.2.3.4.",
                "1.2.3.4:",
                "01.2.3.4",
                "1.2.3",
                "[::1]:80",
                "evil.example",
                "localhost:1",
            ] {
                assert_eq!(
                    policy.allows(host, listen),
                    policy.allows_by_name(host, listen),
                    "{host}"
                );
            }
        }
    }

    #[test]
    fn tokens_authenticate_their_principal_only() {
        let mut t = BearerTokens::new();
        assert!(t.is_empty());
        t.insert("secret-a", "alice");
        t.insert("secret-b", "bob");
        assert_eq!(t.authenticate("secret-a"), Some("alice"));
        assert_eq!(t.authenticate("secret-b"), Some("bob"));
        assert_eq!(t.authenticate("secret-"), None);
        assert_eq!(t.authenticate(""), None);
        t.insert("secret-a", "carol");
        assert_eq!(t.authenticate("secret-a"), Some("carol"));
        assert_eq!(t.len(), 2);
        assert!(!format!("{t:?}").contains("secret"));
    }

    #[test]
    fn the_last_token_of_a_connection_names_its_principal_only() {
        let last = LastToken::default();
        assert_eq!(last.principal_of("secret-a"), None);
        last.remember("secret-a", "alice");
        assert_eq!(last.principal_of("secret-a").as_deref(), Some("alice"));
        for other in ["secret-b", "secret-", "secret-aa", ""] {
            assert_eq!(last.principal_of(other), None, "{other}");
        }
        last.remember("secret-b", "bob");
        assert_eq!(last.principal_of("secret-a"), None);
        assert_eq!(last.principal_of("secret-b").as_deref(), Some("bob"));
    }

    #[test]
    fn hosts_on_loopback_are_loopback_names_ip_literals_and_the_list() {
        let lo: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let p = HostPolicy::new(["mcp.example.com"]);
        sorts(
            |h| p.allows(h, Some(lo)),
            &[
                "localhost",
                "localhost:8080",
                "LOCALHOST.",
                "127.0.0.1:8080",
                "[::1]:8080",
                "10.1.2.3",
                "mcp.example.com",
                "MCP.example.com:443",
            ],
            &[
                "evil.example",
                "evil.example:8080",
                "localhost.evil.example",
                "127.0.0.1.evil.example",
                "localhost:99999",
                "",
                "a b",
                "[::1]x",
            ],
        );
        let none = HostPolicy::default();
        assert!(!none.allows("evil.example", Some(lo)));
        assert!(none.allows("localhost:1", Some(lo)));
        // Off loopback without a list the names cannot be known; with one they are checked.
        let public: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(none.allows("mcp.example.com", Some(public)));
        assert!(!p.allows("evil.example", Some(public)));
        assert!(HostPolicy::new(["*"]).allows("anything.example", Some(lo)));
    }

    #[test]
    fn origins() {
        let p = OriginPolicy::new(["https://app.example.com"]);
        sorts(
            |o| p.allows(o),
            &[
                "http://localhost",
                "http://localhost:6274",
                "https://127.0.0.1:8080",
                "http://127.1.2.3",
                "http://[::1]:3000",
                "https://app.example.com",
                "https://APP.example.com/",
            ],
            &[
                "null",
                "http://evil.example",
                "http://localhost.evil.example",
                "http://127.0.0.1.evil.example",
                "http://localhost:99999",
                "file://localhost",
                "https://app.example.com:444",
                "http://[::2]",
            ],
        );
        assert!(
            !OriginPolicy::new([""; 0])
                .with_loopback(false)
                .allows("http://localhost")
        );
    }
}
