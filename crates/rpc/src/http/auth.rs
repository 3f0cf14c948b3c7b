//! Who may use the endpoint: bearer tokens (authentication) and allowed `Origin`s (DNS
//! rebinding protection).

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn origins() {
        let p = OriginPolicy::new(["https://app.example.com"]);
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8080",
            "http://127.1.2.3",
            "http://[::1]:3000",
            "https://app.example.com",
            "https://APP.example.com/",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost:99999",
            "file://localhost",
            "https://app.example.com:444",
            "http://[::2]",
        ] {
            assert!(!p.allows(bad), "{bad}");
        }
        assert!(
            !OriginPolicy::new([""; 0])
                .with_loopback(false)
                .allows("http://localhost")
        );
    }
}
