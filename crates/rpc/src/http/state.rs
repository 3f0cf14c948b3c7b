//! The server's state, shared by every connection and handler: the configuration, the
//! live sessions within their bounds, and what the metrics read of them.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use mcp_tasks_proto::logged::digest;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::config::{HttpConfig, SessionFactory};
use super::metrics::{HttpGauges, Refusal};
use super::session::HttpSession;
use super::session::listener::Relay;
use super::stateless;

/// Whose sessions count together against [`HttpConfig::max_sessions_per_principal`]:
/// the principal with authentication, the client IP address without.
pub(super) fn owner_key(principal: Option<&str>, client: Option<IpAddr>) -> String {
    match (principal, client) {
        (Some(p), _) => format!("principal:{p}"),
        (None, Some(ip)) => format!("ip:{ip}"),
        (None, None) => "anonymous".to_owned(),
    }
}

/// The live sessions, indexed by owner.
#[derive(Default)]
pub(super) struct Sessions {
    pub(super) by_id: HashMap<String, (Arc<HttpSession>, Arc<str>), crate::FastHash>,
    pub(super) by_owner: HashMap<Arc<str>, HashSet<String>>,
}

impl Sessions {
    fn remove(&mut self, id: &str) -> Option<Arc<HttpSession>> {
        let (s, owner) = self.by_id.remove(id)?;
        if let Some(set) = self.by_owner.get_mut(&owner) {
            set.remove(id);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
        Some(s)
    }

    /// The session to replace among `candidates`: one with no open stream and no request
    /// in flight, preferring those whose client never completed initialization, then the
    /// longest idle.
    fn victim<'a>(&self, candidates: impl Iterator<Item = &'a String>) -> Option<String> {
        candidates
            .filter_map(|id| self.by_id.get(id).map(|(s, _)| s))
            .filter(|s| !s.is_busy())
            .min_by_key(|s| (s.is_initialized(), s.last_seen()))
            .map(|s| s.id.clone())
    }
}

/// Why a new session was refused.
pub(crate) enum Refused {
    /// [`HttpConfig::max_sessions`] sessions, all in use.
    Total(usize),
    /// [`HttpConfig::max_sessions_per_principal`] sessions of this owner, all in use.
    Owner(usize),
}

pub(crate) struct Shared {
    pub(super) config: HttpConfig,
    pub(super) factory: Box<dyn SessionFactory>,
    pub(super) sessions: Mutex<Sessions>,
    /// Bytes held by every session's SSE replay buffers.
    pub(super) replay_bytes: Arc<AtomicUsize>,
    pub(super) shutdown: CancellationToken,
    /// Set by [`HttpServer::drain`]: `/readyz` answers 503 while everything else is served.
    pub(super) draining: std::sync::atomic::AtomicBool,
    /// The handlers of modern (sessionless) requests, per principal.
    pub(super) stateless: stateless::Peers,
    /// With a directory: how shared sessions reach the other replicas (started with the
    /// first shared session, in the runtime).
    pub(super) relay: std::sync::OnceLock<Relay>,
    /// The address [`HttpServer::serve`] listens on, for the `Host` check.
    pub(super) listen: std::sync::OnceLock<SocketAddr>,
}

impl Shared {
    pub(super) fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions
            .lock()
            .by_id
            .get(id)
            .map(|(s, _)| Arc::clone(s))
    }

    /// Register new session `s` of `owner`, within the session bounds: beyond a bound the
    /// idlest unused session of the owner (per-owner bound) or of anyone (total bound) is
    /// ended to make room; when none is unused, `s` is refused.
    pub(super) fn admit(&self, s: &Arc<HttpSession>, owner: &str) -> Result<(), Refused> {
        let per_owner = self.config.max_sessions_per_principal.max(1);
        let total = self.config.max_sessions.max(1);
        let mut evicted = Vec::new();
        let result = {
            let mut g = self.sessions.lock();
            let owner: Arc<str> = g
                .by_owner
                .get_key_value(owner)
                .map_or_else(|| Arc::from(owner), |(k, _)| Arc::clone(k));
            let mut result = Ok(());
            if g.by_owner.get(&owner).map_or(0, HashSet::len) >= per_owner {
                let victim = g.victim(g.by_owner.get(&owner).into_iter().flatten());
                match victim.and_then(|v| g.remove(&v)) {
                    Some(v) => evicted.push((v, "the principal's session bound")),
                    None => result = Err(Refused::Owner(per_owner)),
                }
            }
            if result.is_ok() && g.by_id.len() >= total {
                let victim = g.victim(g.by_id.keys());
                match victim.and_then(|v| g.remove(&v)) {
                    Some(v) => evicted.push((v, "the server's session bound")),
                    None => result = Err(Refused::Total(total)),
                }
            }
            if result.is_ok() {
                g.by_id
                    .insert(s.id.clone(), (Arc::clone(s), Arc::clone(&owner)));
                g.by_owner.entry(owner).or_default().insert(s.id.clone());
            }
            result
        };
        for (v, why) in evicted {
            if self.config.sessions.is_some() {
                // Shared: only this process's copy goes (it is reloaded if the client comes
                // back here); the bound of the principal's sessions everywhere is kept by
                // the directory at `initialize`.
                tracing::debug!(session = %digest(&v.id), "local copy of a shared session dropped to make room ({why})");
            } else {
                tracing::info!(session = %digest(&v.id), principal = ?v.principal, initialized = v.is_initialized(), "session ended to make room for a new one ({why})");
            }
            v.end();
        }
        result
    }

    pub(super) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions.lock().remove(id)
    }

    /// `https` when serving TLS, else `http`.
    pub(super) fn scheme(&self) -> &'static str {
        #[cfg(feature = "http-tls")]
        if self.config.tls.is_some() {
            return "https";
        }
        "http"
    }

    pub(super) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.sessions
            .lock()
            .by_id
            .values()
            .map(|(s, _)| Arc::clone(s))
            .collect()
    }

    /// End idle sessions (sooner when their client never completed initialization); drop
    /// streams nobody read for the replay period.
    pub(super) fn sweep(&self) {
        let now = Instant::now();
        for s in self.all() {
            let idle = if s.is_initialized() {
                self.config.session_idle
            } else {
                self.config.session_init_idle.min(self.config.session_idle)
            };
            if s.is_idle(idle, now) {
                if self.config.sessions.is_some() {
                    // Its row expires by itself unless another replica uses it.
                    tracing::debug!(session = %digest(&s.id), "idle local copy of a shared session dropped");
                } else {
                    tracing::info!(session = %digest(&s.id), initialized = s.is_initialized(), "session expired after being idle");
                }
                self.remove(&s.id);
                s.end();
            } else {
                s.sweep_streams(now);
            }
        }
    }
}

impl Shared {
    /// Count a refusal.
    pub(crate) fn refused(&self, why: Refusal) {
        if let Some(o) = &self.config.observer {
            o.refused(why);
        }
    }

    /// Report a refused credential (see [`HttpObserver::auth_failed`]).
    pub(crate) fn auth_failed(&self, reason: &'static str) {
        if let Some(o) = &self.config.observer {
            o.auth_failed(reason);
        }
    }

    /// Live sessions and open SSE connections.
    pub(crate) fn gauges(&self) -> HttpGauges {
        let sessions = self.sessions.lock();
        HttpGauges {
            sessions: sessions.by_id.len(),
            sse_streams: sessions
                .by_id
                .values()
                .map(|(s, _)| s.connections.load(Ordering::Relaxed))
                .sum(),
        }
    }
}
