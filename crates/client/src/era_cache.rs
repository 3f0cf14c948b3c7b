//! The era of HTTP servers already met, per origin, for the whole process.
//!
//! Spec (versioning, "Backward Compatibility"): "The era determination is a property of
//! the server, not of an individual request. Clients SHOULD cache the result for the
//! lifetime of the server process (stdio) or origin (HTTP), and MAY persist it across
//! restarts of the same server configuration, re-probing if the cached assumption later
//! fails."
//!
//! [`crate::Client::connect_http`] with [`crate::Protocol::Auto`] looks the endpoint up
//! here before it detects anything:
//!
//! * a **legacy** answer (kept [`LEGACY_TTL`], 5 min: a server upgraded to 2026-07-28 is
//!   noticed soon) sends `initialize` at once, without the modern request first. If
//!   `initialize` fails (a modern-only server rejects it with `400`), the entry is
//!   dropped and the era detected again, and the new answer kept;
//! * a **modern** answer (kept [`MODERN_TTL`], 1 h, the `ttlMs` our own
//!   `server/discover` advertises) keeps the server's `DiscoverResult` too, and the client
//!   starts from it without any request. If a later modern request meets the legacy
//!   `400` (a 4xx without a recognized modern error body), the entry is dropped and that
//!   request fails with the server's answer; the next connection detects again.
//!
//! The key is the endpoint's origin and path (`scheme://host:port/path`, the scheme and
//! host lowercased, the port made explicit, the query and fragment left out): two MCP
//! endpoints on one host may be of different eras. The cache holds at most
//! [`DEFAULT_CAPACITY`] (256) endpoints; past that, the one used longest ago goes.
//! `--protocol legacy|modern` ([`crate::Protocol::Legacy`], [`crate::Protocol::Modern`])
//! neither reads nor writes it.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use crate::config::Era;

/// Most endpoints the process-wide cache remembers.
pub const DEFAULT_CAPACITY: usize = 256;
/// How long a legacy answer is trusted.
pub const LEGACY_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a modern answer (and its `DiscoverResult`) is trusted.
pub const MODERN_TTL: Duration = Duration::from_secs(60 * 60);

/// What is known of one endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Known {
    /// A 2025-11-25 server: speak `initialize` at once.
    Legacy,
    /// A 2026-07-28 server, with the `DiscoverResult` it gave.
    Modern(Value),
}

impl Known {
    /// The era of this answer.
    pub fn era(&self) -> Era {
        match self {
            Self::Legacy => Era::Legacy,
            Self::Modern(_) => Era::Modern,
        }
    }
}

#[derive(Debug)]
struct Entry {
    known: Known,
    expires: Instant,
    used: u64,
}

/// A bounded LRU of endpoint eras with a TTL per era.
#[derive(Debug)]
pub struct EraCache {
    capacity: usize,
    inner: Mutex<(HashMap<String, Entry>, u64)>,
}

impl EraCache {
    /// An empty cache of at most `capacity` endpoints (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new((HashMap::new(), 0)),
        }
    }

    /// The cache every client of this process shares.
    pub fn global() -> &'static Self {
        static GLOBAL: OnceLock<EraCache> = OnceLock::new();
        GLOBAL.get_or_init(|| Self::new(DEFAULT_CAPACITY))
    }

    /// What is known of `url`'s endpoint and still fresh.
    pub fn get(&self, url: &str) -> Option<Known> {
        self.get_at(url, Instant::now())
    }

    /// [`Self::get`] as of `now`.
    pub fn get_at(&self, url: &str, now: Instant) -> Option<Known> {
        let key = origin(url)?;
        let mut g = self.inner.lock();
        let (map, clock) = &mut *g;
        *clock += 1;
        let tick = *clock;
        match map.get_mut(&key) {
            Some(e) if e.expires > now => {
                e.used = tick;
                Some(e.known.clone())
            }
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Remember `known` for `url`'s endpoint.
    pub fn put(&self, url: &str, known: Known) {
        self.put_at(url, known, Instant::now());
    }

    /// [`Self::put`] as of `now`.
    pub fn put_at(&self, url: &str, known: Known, now: Instant) {
        let Some(key) = origin(url) else {
            return;
        };
        let ttl = match known {
            Known::Legacy => LEGACY_TTL,
            Known::Modern(_) => MODERN_TTL,
        };
        let mut g = self.inner.lock();
        let (map, clock) = &mut *g;
        *clock += 1;
        if !map.contains_key(&key) && map.len() >= self.capacity {
            map.retain(|_, e| e.expires > now);
            if map.len() >= self.capacity
                && let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            key,
            Entry {
                known,
                expires: now + ttl,
                used: *clock,
            },
        );
    }

    /// Forget `url`'s endpoint (the server contradicted what was kept).
    pub fn forget(&self, url: &str) {
        if let Some(key) = origin(url) {
            self.inner.lock().0.remove(&key);
        }
    }

    /// How many endpoints are remembered (expired ones included until next touched).
    pub fn len(&self) -> usize {
        self.inner.lock().0.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The cache key of `url`: `scheme://host:port/path`, or `None` for a URL without a
/// scheme and host.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let path = match &tail[..path_end] {
        "" => "/",
        p => p,
    };
    // A port is what follows the last `:` outside an IPv6 literal's brackets.
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    if host.is_empty() {
        return None;
    }
    let port = match port.filter(|p| !p.is_empty()) {
        Some(p) => p.to_owned(),
        None => match scheme.as_str() {
            "https" => "443".to_owned(),
            _ => "80".to_owned(),
        },
    };
    Some(format!(
        "{scheme}://{}:{port}{path}",
        host.to_ascii_lowercase()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn origins_make_the_port_explicit_and_drop_the_query() {
        assert_eq!(
            origin("HTTP://Example.COM/mcp?x=1#f").as_deref(),
            Some("http://example.com:80/mcp")
        );
        assert_eq!(
            origin("https://u:p@h:8443").as_deref(),
            Some("https://h:8443/")
        );
        assert_eq!(
            origin("http://[::1]:9000/a/b").as_deref(),
            Some("http://[::1]:9000/a/b")
        );
        assert_eq!(
            origin("http://[::1]/m").as_deref(),
            Some("http://[::1]:80/m")
        );
        assert_eq!(origin("https://h/mcp"), origin("https://h:443/mcp"));
        assert_ne!(origin("http://h/a"), origin("http://h/b"));
        assert_ne!(origin("http://h:1/a"), origin("http://h:2/a"));
        assert_eq!(origin("no-scheme"), None);
        assert_eq!(origin("http:///x"), None);
    }

    #[test]
    fn legacy_answers_last_five_minutes_and_modern_ones_an_hour() {
        let c = EraCache::new(8);
        let t0 = Instant::now();
        c.put_at("http://l/mcp", Known::Legacy, t0);
        c.put_at("http://m/mcp", Known::Modern(json!({"x": 1})), t0);
        let just_before = t0 + LEGACY_TTL - Duration::from_millis(1);
        assert_eq!(c.get_at("http://l/mcp", just_before), Some(Known::Legacy));
        assert_eq!(c.get_at("http://l/mcp", t0 + LEGACY_TTL), None);
        assert_eq!(c.len(), 1, "the expired entry is dropped when read");
        assert_eq!(
            c.get_at("http://m/mcp", t0 + MODERN_TTL - Duration::from_millis(1)),
            Some(Known::Modern(json!({"x": 1})))
        );
        assert_eq!(c.get_at("http://m/mcp", t0 + MODERN_TTL), None);
        c.put_at("http://l/mcp", Known::Legacy, t0);
        c.forget("http://L:80/mcp?q");
        assert!(c.is_empty());
    }

    #[test]
    fn past_the_capacity_the_endpoint_used_longest_ago_goes() {
        let c = EraCache::new(DEFAULT_CAPACITY);
        let now = Instant::now();
        let url = |i: usize| format!("http://h:{}/mcp", 1000 + i);
        for i in 0..DEFAULT_CAPACITY {
            c.put_at(&url(i), Known::Legacy, now);
        }
        assert_eq!(c.len(), DEFAULT_CAPACITY);
        // Endpoint 0 is used again: endpoint 1 is now the least recently used.
        assert!(c.get_at(&url(0), now).is_some());
        c.put_at(&url(DEFAULT_CAPACITY), Known::Legacy, now);
        assert_eq!(c.len(), DEFAULT_CAPACITY);
        assert!(c.get_at(&url(0), now).is_some());
        assert!(c.get_at(&url(1), now).is_none());
        assert!(c.get_at(&url(DEFAULT_CAPACITY), now).is_some());
        // Pushing 100 more keeps the bound.
        for i in 0..100 {
            c.put_at(&url(DEFAULT_CAPACITY + 1 + i), Known::Legacy, now);
        }
        assert_eq!(c.len(), DEFAULT_CAPACITY);
        // Expired entries make room before a live one is evicted.
        let later = now + LEGACY_TTL;
        c.put_at("http://fresh/mcp", Known::Modern(json!({})), later);
        assert_eq!(c.len(), 1);
    }
}
