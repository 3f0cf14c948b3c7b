//! The era of HTTP servers already met, per origin, for the whole process.
//!
//! Spec (versioning, "Backward Compatibility"): "The era determination is a property of
//! the server, not of an individual request. Clients SHOULD cache the result for the
//! lifetime of the server process (stdio) or origin (HTTP), and MAY persist it across
//! restarts of the same server configuration, re-probing if the cached assumption later
//! fails."
//!
//! [`crate::Client::connect_http`] with [`crate::RevisionChoice::Auto`] looks the endpoint
//! up here before it detects anything:
//!
//! * a **legacy** answer (kept [`LEGACY_TTL`], 5 min: a server upgraded to 2026-07-28 is
//!   noticed soon) sends `initialize` at once, without the modern request first. If
//!   `initialize` fails (a modern-only server rejects it with `400`), the entry is
//!   dropped and the era detected again, and the new answer kept;
//! * a **modern** answer keeps the server's `DiscoverResult` for as long as the result's
//!   own cache hint says ([`discover_ttl`]: its `ttlMs`, at most [`MODERN_TTL`], 1 h; not
//!   at all for `0`), and only for the same bearer token when its `cacheScope` is
//!   `private`; the client starts from it without any request. If a later modern request
//!   meets the legacy `400` (a 4xx without a recognized modern error body), the entry is
//!   dropped and that request fails with the server's answer; the next connection detects
//!   again.
//!
//! Schema (`CacheableResult.ttlMs`): "If 0, The response SHOULD be considered immediately
//! stale" / "If positive, the client SHOULD consider the result fresh for this many
//! milliseconds after receiving the response." (`cacheScope`) `"private"`: "Caches MUST
//! NOT be shared across authorization contexts (e.g., a different access token requires
//! a different cache)."
//!
//! The key is the endpoint's origin and path (`scheme://host:port/path`, the scheme and
//! host lowercased, the port made explicit, the query and fragment left out): two MCP
//! endpoints on one host may be of different eras. The cache holds at most
//! [`DEFAULT_CAPACITY`] (256) endpoints; past that, the one used longest ago goes.
//! A fixed revision (`--protocol legacy|modern|2025-11-25|2026-07-28`,
//! [`crate::RevisionChoice::Fixed`]) neither reads nor writes it.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use mcp_tasks_proto::Revision;

/// Most endpoints the process-wide cache remembers.
pub const DEFAULT_CAPACITY: usize = 256;
/// How long a legacy answer is trusted.
pub const LEGACY_TTL: Duration = Duration::from_secs(5 * 60);
/// The longest a modern answer (and its `DiscoverResult`) is trusted: the bound on its
/// `ttlMs`, and its lifetime when it has none.
pub const MODERN_TTL: Duration = Duration::from_secs(60 * 60);

/// How long `discover` (a `DiscoverResult`) may be kept: its `ttlMs` (`0`: not at all), at
/// most [`MODERN_TTL`], which is also the lifetime of a result without one.
pub fn discover_ttl(discover: &Value) -> Duration {
    discover
        .get("ttlMs")
        .and_then(Value::as_u64)
        .map_or(MODERN_TTL, |ms| Duration::from_millis(ms).min(MODERN_TTL))
}

/// Whether `discover` may be reused only within its authorization context
/// (`cacheScope: "private"`).
fn is_private(discover: &Value) -> bool {
    discover.get("cacheScope").and_then(Value::as_str) == Some("private")
}

/// What is known of one endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Known {
    /// A 2025-11-25 server: speak `initialize` at once.
    Initialize,
    /// A 2026-07-28 server, with the `DiscoverResult` it gave.
    Discover(Value),
}

impl Known {
    /// The revision of this answer.
    pub fn revision(&self) -> Revision {
        match self {
            Self::Initialize => Revision::V2025_11_25,
            Self::Discover(_) => Revision::V2026_07_28,
        }
    }
}

#[derive(Debug)]
struct Entry {
    known: Known,
    expires: Instant,
    used: u64,
    /// For a `private` answer: the authorization context it was given to (a keyed hash
    /// of the bearer token, never the token).
    private_to: Option<u64>,
}

/// A bounded LRU of endpoint eras with a TTL per era.
#[derive(Debug)]
pub struct EraCache {
    capacity: usize,
    inner: Mutex<(HashMap<String, Entry>, u64)>,
    /// The key of the authorization contexts' hashes (random per cache).
    contexts: RandomState,
}

impl EraCache {
    /// An empty cache of at most `capacity` endpoints (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new((HashMap::new(), 0)),
            contexts: RandomState::new(),
        }
    }

    /// The authorization context of a client holding `token`.
    fn context(&self, token: Option<&str>) -> u64 {
        self.contexts.hash_one(token)
    }

    /// The cache every client of this process shares.
    pub fn global() -> &'static Self {
        static GLOBAL: OnceLock<EraCache> = OnceLock::new();
        GLOBAL.get_or_init(|| Self::new(DEFAULT_CAPACITY))
    }

    /// What is known of `url`'s endpoint and still fresh, for a client holding the bearer
    /// `token` (a `private` answer serves only the token it was given to).
    pub fn get(&self, url: &str, token: Option<&str>) -> Option<Known> {
        self.get_at(url, token, Instant::now())
    }

    /// [`Self::get`] as of `now`.
    pub fn get_at(&self, url: &str, token: Option<&str>, now: Instant) -> Option<Known> {
        let key = origin(url)?;
        let context = self.context(token);
        let mut g = self.inner.lock();
        let (map, clock) = &mut *g;
        *clock += 1;
        let tick = *clock;
        match map.get_mut(&key) {
            Some(e) if e.expires > now => {
                if e.private_to.is_some_and(|c| c != context) {
                    return None;
                }
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

    /// Remember `known` for `url`'s endpoint, as told by a client holding the bearer
    /// `token`: a legacy answer [`LEGACY_TTL`], a modern one as its cache hint says
    /// ([`discover_ttl`]; one that is stale at once replaces nothing and is not kept).
    pub fn put(&self, url: &str, token: Option<&str>, known: Known) {
        self.put_at(url, token, known, Instant::now());
    }

    /// [`Self::put`] as of `now`.
    pub fn put_at(&self, url: &str, token: Option<&str>, known: Known, now: Instant) {
        let Some(key) = origin(url) else {
            return;
        };
        let (ttl, private) = match &known {
            Known::Initialize => (LEGACY_TTL, false),
            Known::Discover(discover) => (discover_ttl(discover), is_private(discover)),
        };
        let private_to = private.then(|| self.context(token));
        let mut g = self.inner.lock();
        let (map, clock) = &mut *g;
        if ttl.is_zero() {
            map.remove(&key);
            return;
        }
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
                private_to,
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
        for (url, want) in [
            ("HTTP://Example.COM/mcp?x=1#f", "http://example.com:80/mcp"),
            ("https://u:p@h:8443", "https://h:8443/"),
            ("http://[::1]:9000/a/b", "http://[::1]:9000/a/b"),
            ("http://[::1]/m", "http://[::1]:80/m"),
        ] {
            assert_eq!(origin(url).as_deref(), Some(want), "{url}");
        }
        assert_eq!(origin("https://h/mcp"), origin("https://h:443/mcp"));
        assert_ne!(origin("http://h/a"), origin("http://h/b"));
        assert_ne!(origin("http://h:1/a"), origin("http://h:2/a"));
        assert_eq!(origin("no-scheme"), None);
        assert_eq!(origin("http:///x"), None);
    }

    #[test]
    fn legacy_answers_last_five_minutes_and_modern_ones_without_a_ttl_an_hour() {
        let c = EraCache::new(8);
        let t0 = Instant::now();
        c.put_at("http://l/mcp", None, Known::Initialize, t0);
        c.put_at("http://m/mcp", None, Known::Discover(json!({"x": 1})), t0);
        let just_before = t0 + LEGACY_TTL - Duration::from_millis(1);
        assert_eq!(
            c.get_at("http://l/mcp", None, just_before),
            Some(Known::Initialize)
        );
        assert_eq!(c.get_at("http://l/mcp", None, t0 + LEGACY_TTL), None);
        assert_eq!(c.len(), 1, "the expired entry is dropped when read");
        assert_eq!(
            c.get_at(
                "http://m/mcp",
                None,
                t0 + MODERN_TTL - Duration::from_millis(1)
            ),
            Some(Known::Discover(json!({"x": 1})))
        );
        assert_eq!(c.get_at("http://m/mcp", None, t0 + MODERN_TTL), None);
        c.put_at("http://l/mcp", None, Known::Initialize, t0);
        c.forget("http://L:80/mcp?q");
        assert!(c.is_empty());
    }

    #[test]
    fn past_the_capacity_the_endpoint_used_longest_ago_goes() {
        let c = EraCache::new(DEFAULT_CAPACITY);
        let now = Instant::now();
        let url = |i: usize| format!("http://h:{}/mcp", 1000 + i);
        for i in 0..DEFAULT_CAPACITY {
            c.put_at(&url(i), None, Known::Initialize, now);
        }
        assert_eq!(c.len(), DEFAULT_CAPACITY);
        // Endpoint 0 is used again: endpoint 1 is now the least recently used.
        assert!(c.get_at(&url(0), None, now).is_some());
        c.put_at(&url(DEFAULT_CAPACITY), None, Known::Initialize, now);
        assert_eq!(c.len(), DEFAULT_CAPACITY);
        assert!(c.get_at(&url(0), None, now).is_some());
        assert!(c.get_at(&url(1), None, now).is_none());
        assert!(c.get_at(&url(DEFAULT_CAPACITY), None, now).is_some());
        // Pushing 100 more keeps the bound.
        for i in 0..100 {
            c.put_at(&url(DEFAULT_CAPACITY + 1 + i), None, Known::Initialize, now);
        }
        assert_eq!(c.len(), DEFAULT_CAPACITY);
        // Expired entries make room before a live one is evicted.
        let later = now + LEGACY_TTL;
        c.put_at("http://fresh/mcp", None, Known::Discover(json!({})), later);
        assert_eq!(c.len(), 1);
    }

    /// Schema (`CacheableResult.ttlMs`): "If positive, the client SHOULD consider the
    /// result fresh for this many milliseconds after receiving the response"; "If 0, The
    /// response SHOULD be considered immediately stale".
    #[test]
    fn a_discover_result_is_kept_as_long_as_its_ttl_says() {
        let c = EraCache::new(8);
        let t0 = Instant::now();
        let minute = json!({"ttlMs": 60_000, "cacheScope": "public"});
        c.put_at("http://m/mcp", None, Known::Discover(minute.clone()), t0);
        let fresh = t0 + Duration::from_millis(59_999);
        assert_eq!(
            c.get_at("http://m/mcp", None, fresh),
            Some(Known::Discover(minute))
        );
        assert_eq!(
            c.get_at("http://m/mcp", None, t0 + Duration::from_secs(60)),
            None,
            "stale after the server's 60 s, not an hour"
        );
        // A `ttlMs` of 0 is not kept, and replaces what was.
        c.put_at("http://z/mcp", None, Known::Initialize, t0);
        c.put_at(
            "http://z/mcp",
            None,
            Known::Discover(json!({"ttlMs": 0})),
            t0,
        );
        assert_eq!(c.get_at("http://z/mcp", None, t0), None);
        assert!(c.is_empty());
        // A day is cut to the hour.
        let day = Known::Discover(json!({"ttlMs": 86_400_000u64}));
        c.put_at("http://d/mcp", None, day, t0);
        assert_eq!(c.get_at("http://d/mcp", None, t0 + MODERN_TTL), None);
        assert_eq!(discover_ttl(&json!({"ttlMs": "soon"})), MODERN_TTL);
    }

    /// Schema (`cacheScope`): `"private"`: "Caches MUST NOT be shared across
    /// authorization contexts (e.g., a different access token requires a different
    /// cache)."
    #[test]
    fn a_private_discover_result_serves_only_the_token_it_was_given_to() {
        let c = EraCache::new(8);
        let t0 = Instant::now();
        let private = Known::Discover(json!({"ttlMs": 60_000, "cacheScope": "private"}));
        c.put_at("http://p/mcp", Some("tok-a"), private.clone(), t0);
        assert_eq!(
            c.get_at("http://p/mcp", Some("tok-a"), t0),
            Some(private.clone())
        );
        assert_eq!(c.get_at("http://p/mcp", Some("tok-b"), t0), None);
        assert_eq!(c.get_at("http://p/mcp", None, t0), None);
        // A public one serves everyone.
        let public = Known::Discover(json!({"ttlMs": 60_000, "cacheScope": "public"}));
        c.put_at("http://p/mcp", Some("tok-a"), public.clone(), t0);
        assert_eq!(c.get_at("http://p/mcp", Some("tok-b"), t0), Some(public));
        // The token itself is nowhere in the cache.
        c.put_at("http://q/mcp", Some("s3cret-token"), private, t0);
        assert!(!format!("{c:?}").contains("s3cret-token"));
    }
}
