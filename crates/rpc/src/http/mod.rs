//! The Streamable HTTP server transport (MCP 2025-11-25, `basic/transports`).
//!
//! One endpoint (default `/mcp`) takes:
//!
//! * **POST** one JSON-RPC message. A notification or response is delivered to the
//!   session's [`Peer`] and answered `202 Accepted`. A request is answered by the
//!   [`ReplyMode`] the configured policy picks for it: `application/json`, or an SSE
//!   stream when messages may precede the response (decided by peeking: JSON if the
//!   response is the first thing the handler emits, within a short window).
//! * **GET** opens the standalone SSE stream (messages tied to no request), or, with
//!   `Last-Event-ID`, resumes the stream that event belongs to, replaying what followed it.
//! * **DELETE** ends the session.
//!
//! The transport knows nothing about tasks: a [`SessionFactory`] makes the [`Handler`] of
//! each session, given the authenticated principal.
//!
//! Stream routing: every outgoing message carries a [`crate::Route`]. A message routed
//! to an open request goes on that request's SSE stream; anything else goes on the
//! standalone stream, where it waits in a bounded buffer until a GET reads it. Each stream
//! keeps its events in a bounded replay buffer; a connection is only a cursor into it, so
//! a reconnect with `Last-Event-ID` replays exactly what followed on *that* stream.
//!
//! Resource bounds (one client must not exhaust the server): replay bytes per session
//! and in total ([`HttpConfig::replay_bytes`], [`HttpConfig::replay_total_bytes`]),
//! sessions in total and per principal ([`HttpConfig::max_sessions`],
//! [`HttpConfig::max_sessions_per_principal`]), connections in total and per IP address,
//! and header and body read timeouts ([`HttpConfig::max_connections`] and the fields after
//! it).

mod auth;
mod fuzz;
mod handlers;
mod metrics;
mod modern_stream;
mod oauth;
mod session;
mod stateless;
mod stream;
#[cfg(feature = "http-tls")]
mod tls;
mod ui;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use mcp_tasks_proto::Request;
use mcp_tasks_proto::logged::digest;
use mcp_tasks_proto::mcp::SUPPORTED_PROTOCOL_VERSIONS;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub use auth::{BearerTokens, HostPolicy, OriginPolicy};
pub use metrics::{
    HttpGauges, HttpObserver, METRICS_PATH, MetricsEndpoint, MetricsRender, Refusal, serve_metrics,
};
pub use oauth::{ACCEPTED_ALGORITHMS, AuthFailure, OAuth, OAuthConfig};
#[cfg(feature = "http-tls")]
pub use tls::{TlsError, TlsFiles};

/// The router's fuzz entry: see [`crate::fuzz::http_router`].
#[doc(hidden)]
pub fn fuzz_router(bytes: &[u8]) {
    fuzz::router(bytes);
}

/// The OAuth parsers' fuzz entry: see [`crate::fuzz::jwt_jwks`].
#[doc(hidden)]
pub fn fuzz_oauth(bytes: &[u8]) {
    oauth::fuzz(bytes);
}
use session::shared::LoadError;
pub use session::shared::{Ended, EndedCallback, RelayFailure, SessionDirectory, SharedSession};
pub use ui::{UI_PATH, UiApi, UiAssets, UiEndpoint, UiMethod, UiRequest, UiResponse};

use crate::peer::Handler;
use session::HttpSession;

/// Makes the handler of a new session, given the principal that authenticated (`None`
/// without authentication).
pub trait SessionFactory: Send + Sync + 'static {
    /// The handler of a new session of `principal`.
    fn create(&self, principal: Option<&str>) -> Arc<dyn Handler>;

    /// The handler of a request served without a session (a 2026-07-28 request) of
    /// `principal` from `client` (its network address, when known): without a principal,
    /// what a factory counts that client's requests against (each request is a handler
    /// of its own; a session id would be new every time). By default [`Self::create`].
    fn create_stateless(
        &self,
        principal: Option<&str>,
        client: Option<IpAddr>,
    ) -> Arc<dyn Handler> {
        let _ = client;
        self.create(principal)
    }

    /// The handler of a session of `principal` that another replica started, rebuilt from
    /// the state its handler shared ([`Handler::shared_state`]); `None` when it cannot be
    /// (the session is then unknown here: 404).
    fn restore(
        &self,
        principal: Option<&str>,
        state: &serde_json::Value,
    ) -> Option<Arc<dyn Handler>> {
        let _ = (principal, state);
        None
    }
}

impl<F> SessionFactory for F
where
    F: Fn(Option<&str>) -> Arc<dyn Handler> + Send + Sync + 'static,
{
    fn create(&self, principal: Option<&str>) -> Arc<dyn Handler> {
        self(principal)
    }
}

/// How a POSTed request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// Always `application/json`; anything the handler emits on the request's route
    /// before the response goes to the standalone stream instead.
    Json,
    /// `application/json` when the response is the first message of the request's route
    /// and comes within [`HttpConfig::peek`]; otherwise an SSE stream.
    Auto,
    /// Always an SSE stream.
    Stream,
}

/// Picks the [`ReplyMode`] of each request.
pub type ReplyPolicy = Arc<dyn Fn(&Request) -> ReplyMode + Send + Sync>;

/// What `/readyz` asks besides "not shutting down": `Err(why)` when the service cannot
/// serve (its store does not answer, ...). Bounded by [`HttpConfig::readiness_timeout`].
pub type Readiness =
    Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<(), NotReady>> + Send + Sync>;

/// Why the service is not ready. `/readyz` is served without authentication, so its body
/// gives the [`Self::summary`] only (anyone may read it); the [`Self::cause`], which may
/// name the database's user, host, port and name, is logged, and shown only to a request
/// with a valid bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    /// What anyone may read ("the task store does not answer").
    pub summary: String,
    /// Why, with the names of what failed.
    pub cause: String,
}

impl NotReady {
    /// Not ready: `summary` for everyone, `cause` for the log and authenticated callers.
    pub fn new(summary: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            summary: summary.into(),
            cause: cause.into(),
        }
    }
}

/// Configuration of the HTTP transport.
#[non_exhaustive]
#[derive(Clone)]
pub struct HttpConfig {
    /// The MCP endpoint path.
    pub path: String,
    /// Largest request body; larger ones get 413.
    pub max_body_bytes: usize,
    /// Bearer tokens; empty (and no [`Self::oauth`]) turns authentication off.
    pub tokens: BearerTokens,
    /// The OAuth 2.1 resource server: JWT access tokens of configured issuers, beside the
    /// static [`Self::tokens`] (either kind is accepted when both are on).
    pub oauth: Option<Arc<OAuth>>,
    /// Accepted `Origin`s.
    pub origins: OriginPolicy,
    /// Accepted `Host`s.
    pub hosts: HostPolicy,
    /// A session with no request and no open stream for this long ends.
    pub session_idle: Duration,
    /// A session whose client never completed initialization (no request naming the
    /// session after `initialize`, not even `notifications/initialized`) ends after this
    /// long without one.
    pub session_init_idle: Duration,
    /// Most sessions. A new session beyond it replaces the idlest session (one whose
    /// client never completed initialization first) that has no open stream and no
    /// request in flight; when every session is in use, `initialize` is refused with 503.
    pub max_sessions: usize,
    /// Most sessions of one principal; without authentication, of one client IP address
    /// (every anonymous client of an address counts as one principal). Beyond it the
    /// principal's idlest session is replaced as with [`Self::max_sessions`].
    pub max_sessions_per_principal: usize,
    /// How long an SSE connection is held while it waits before it is closed with a
    /// `retry` field (the stream stays resumable).
    pub sse_hold: Duration,
    /// The `retry` interval sent when closing a connection early.
    pub sse_retry: Duration,
    /// Most events kept per stream for replay.
    pub replay_events: usize,
    /// Most bytes the SSE streams of one session hold, all its streams together (the
    /// standalone stream at most half of it). Events already delivered go first when it is
    /// exceeded; an event larger than it is delivered but never kept for replay.
    pub replay_bytes: usize,
    /// Most bytes the SSE streams of all sessions hold together.
    pub replay_total_bytes: usize,
    /// How long a stream nobody reads is kept for replay.
    pub replay_keep: Duration,
    /// How long a stream read to its end (response delivered) is kept for replay, unless a
    /// new request on its session acknowledges it first.
    pub replay_ack: Duration,
    /// How long [`ReplyMode::Auto`] waits for the response before choosing SSE.
    pub peek: Duration,
    /// Picks the reply mode of each request.
    pub reply_policy: ReplyPolicy,
    /// Accepted `MCP-Protocol-Version` header values.
    pub protocol_versions: Vec<String>,
    /// Most open connections; beyond it the server accepts no more until one closes
    /// (further clients wait in the listen backlog).
    pub max_connections: usize,
    /// Most open connections from one IP address; beyond it a new connection gets 503
    /// and is closed.
    pub max_connections_per_ip: usize,
    /// Time a client has to send a request's headers, counted from the connection's
    /// start or from the end of the previous response on it: it is also the keep-alive
    /// idle timeout (hyper's `header_read_timeout` runs while a connection waits for a
    /// request). A connection that exceeds it is closed.
    pub header_read_timeout: Duration,
    /// Time a client has to send a request's body; then 408 and the connection closes.
    pub body_read_timeout: Duration,
    /// Serve HTTPS with this certificate and key (reloadable while serving); `None`:
    /// plain HTTP.
    #[cfg(feature = "http-tls")]
    pub tls: Option<Arc<TlsFiles>>,
    /// With [`Self::tls`], the time a client has to complete the TLS handshake, counted
    /// from the connection's start; then the connection is closed (and its slot among
    /// [`Self::max_connections`] freed). [`Self::header_read_timeout`] starts after it.
    pub tls_handshake_timeout: Duration,
    /// Serve the probes `GET /healthz` (200 while the process answers) and `GET /readyz`
    /// (200 when ready, 503 with the reason otherwise) beside the endpoint, with no
    /// authentication (they tell nothing about tasks). Off when the endpoint's path is
    /// one of theirs.
    pub probes: bool,
    /// The check of `/readyz` besides "not shutting down"; `None`: none.
    pub readiness: Option<Readiness>,
    /// How long `/readyz` waits for [`Self::readiness`] before it answers 503.
    pub readiness_timeout: Duration,
    /// `GET /metrics` beside the endpoint; `None`: not served (404).
    pub metrics: Option<MetricsEndpoint>,
    /// Told of requests refused before any handler (for metrics).
    pub observer: Option<Arc<dyn HttpObserver>>,
    /// The task dashboard at `/ui`; `None`: not served (404).
    pub ui: Option<UiEndpoint>,
    /// Sessions shared with the other replicas of this server (several processes on one
    /// database behind a load balancer): a request naming a session this process does not
    /// hold is looked up there. `None`: sessions live in this process only.
    pub sessions: Option<Arc<dyn SessionDirectory>>,
}

mcp_tasks_proto::debug_non_exhaustive!(HttpConfig, |s| {
    path: s.path,
    max_body_bytes: s.max_body_bytes,
    tokens: s.tokens,
    oauth: s.oauth,
    origins: s.origins,
    hosts: s.hosts,
    session_idle: s.session_idle,
    sse_hold: s.sse_hold,
    sse_retry: s.sse_retry,
    max_sessions: s.max_sessions,
    max_connections: s.max_connections,
});

/// Default body limit: 16 MiB.
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            max_body_bytes: DEFAULT_MAX_BODY,
            tokens: BearerTokens::new(),
            oauth: None,
            origins: OriginPolicy::default(),
            hosts: HostPolicy::default(),
            session_idle: Duration::from_secs(3600),
            session_init_idle: Duration::from_secs(30),
            max_sessions: 10_000,
            max_sessions_per_principal: 100,
            sse_hold: Duration::from_secs(60),
            sse_retry: Duration::from_secs(2),
            replay_events: 1000,
            replay_bytes: 4 << 20,
            replay_total_bytes: 128 << 20,
            replay_keep: Duration::from_secs(300),
            replay_ack: Duration::from_secs(5),
            peek: Duration::from_millis(100),
            reply_policy: Arc::new(|_| ReplyMode::Auto),
            protocol_versions: SUPPORTED_PROTOCOL_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            max_connections: 512,
            max_connections_per_ip: 256,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            #[cfg(feature = "http-tls")]
            tls: None,
            tls_handshake_timeout: Duration::from_secs(10),
            probes: true,
            readiness: None,
            readiness_timeout: Duration::from_secs(2),
            metrics: None,
            observer: None,
            ui: None,
            sessions: None,
        }
    }
}

impl HttpConfig {
    fn limits(&self) -> session::SessionLimits {
        session::SessionLimits {
            buffer: stream::BufferLimits {
                events: self.replay_events.max(1),
                bytes: self.replay_bytes.max(1),
            },
            total_bytes: self.replay_total_bytes.max(1),
            keep: self.replay_keep,
            ack: self.replay_ack,
            hold: self.sse_hold,
            retry: self.sse_retry,
        }
    }
}

/// Whose sessions count together against [`HttpConfig::max_sessions_per_principal`]:
/// the principal with authentication, the client IP address without.
fn owner_key(principal: Option<&str>, client: Option<IpAddr>) -> String {
    match (principal, client) {
        (Some(p), _) => format!("principal:{p}"),
        (None, Some(ip)) => format!("ip:{ip}"),
        (None, None) => "anonymous".to_owned(),
    }
}

/// The live sessions, indexed by owner.
#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, (Arc<HttpSession>, Arc<str>)>,
    by_owner: HashMap<Arc<str>, HashSet<String>>,
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
    config: HttpConfig,
    factory: Box<dyn SessionFactory>,
    sessions: Mutex<Sessions>,
    /// Bytes held by every session's SSE replay buffers.
    replay_bytes: Arc<AtomicUsize>,
    shutdown: CancellationToken,
    /// Set by [`HttpServer::drain`]: `/readyz` answers 503 while everything else is served.
    draining: std::sync::atomic::AtomicBool,
    /// The handlers of modern (sessionless) requests, per principal.
    stateless: stateless::Peers,
    /// With a directory: how shared sessions reach the other replicas (started with the
    /// first shared session, in the runtime).
    relay: std::sync::OnceLock<session::listener::Relay>,
    /// The address [`HttpServer::serve`] listens on, for the `Host` check.
    listen: std::sync::OnceLock<SocketAddr>,
}

impl Shared {
    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions
            .lock()
            .by_id
            .get(id)
            .map(|(s, _)| Arc::clone(s))
    }

    /// Register new session `s` of `owner`, within the session bounds: beyond a bound the
    /// idlest unused session of the owner (per-owner bound) or of anyone (total bound) is
    /// ended to make room; when none is unused, `s` is refused.
    fn admit(&self, s: &Arc<HttpSession>, owner: &str) -> Result<(), Refused> {
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

    fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions.lock().remove(id)
    }

    /// `https` when serving TLS, else `http`.
    fn scheme(&self) -> &'static str {
        #[cfg(feature = "http-tls")]
        if self.config.tls.is_some() {
            return "https";
        }
        "http"
    }

    fn all(&self) -> Vec<Arc<HttpSession>> {
        self.sessions
            .lock()
            .by_id
            .values()
            .map(|(s, _)| Arc::clone(s))
            .collect()
    }

    /// End idle sessions (sooner when their client never completed initialization); drop
    /// streams nobody read for the replay period.
    fn sweep(&self) {
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

/// The Streamable HTTP server. Cheap to clone.
#[derive(Clone)]
pub struct HttpServer {
    shared: Arc<Shared>,
}

mcp_tasks_proto::debug_non_exhaustive!(HttpServer, |s| { config: s.shared.config });

impl HttpServer {
    /// A server whose sessions get their handler from `factory`.
    pub fn new(config: HttpConfig, factory: impl SessionFactory) -> Self {
        let shared = Arc::new(Shared {
            config,
            factory: Box::new(factory),
            sessions: Mutex::new(Sessions::default()),
            replay_bytes: Arc::default(),
            shutdown: CancellationToken::new(),
            draining: std::sync::atomic::AtomicBool::new(false),
            stateless: stateless::Peers::new(stateless::MAX_CACHED_PRINCIPALS),
            relay: std::sync::OnceLock::new(),
            listen: std::sync::OnceLock::new(),
        });
        if let Some(dir) = &shared.config.sessions {
            let weak = Arc::downgrade(&shared);
            dir.on_ended(Arc::new(move |ended| {
                let Some(shared) = weak.upgrade() else { return };
                match ended {
                    Ended::Session(id) => shared.ended_elsewhere(&id),
                    Ended::Relayed { session, message } => {
                        // Notes of the session's standalone stream are applied at once,
                        // in the order they came (a task's progress stays in order).
                        if let Some(note) = session::listener::Note::parse(&message) {
                            if let Some(s) = shared.session(&session) {
                                s.noted(&note);
                            }
                            return;
                        }
                        if let Ok(rt) = tokio::runtime::Handle::try_current() {
                            rt.spawn(async move { shared.relayed(&session, message).await });
                        }
                    }
                    Ended::Unknown => {
                        if let Ok(rt) = tokio::runtime::Handle::try_current() {
                            rt.spawn(shared.resync());
                        }
                    }
                }
            }));
        }
        Self { shared }
    }

    /// The axum router serving the endpoint (and 404 elsewhere).
    pub fn router(&self) -> axum::Router {
        handlers::router(Arc::clone(&self.shared))
    }

    /// Number of live sessions.
    pub fn session_count(&self) -> usize {
        self.shared.sessions.lock().by_id.len()
    }

    /// Bytes held by the SSE replay buffers of all sessions.
    pub fn replay_bytes(&self) -> usize {
        self.shared
            .replay_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Live sessions and open SSE connections now.
    pub fn gauges(&self) -> HttpGauges {
        self.shared.gauges()
    }

    /// Tell load balancers to stop sending requests: `/readyz` answers 503 from now on,
    /// while every request that still arrives is served as before (the first step of a
    /// graceful shutdown, before [`Self::shutdown`]).
    pub fn drain(&self) {
        self.shared
            .draining
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Begin shutting down: stop accepting connections, close every SSE connection after
    /// a `retry` field. [`Self::serve`] returns once the open connections are done.
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Serve on `listener` until [`Self::shutdown`] and the end of the open connections;
    /// then end every session.
    ///
    /// A hand-written accept loop (rather than `axum::serve`) so that the connection
    /// bounds hold: at most [`HttpConfig::max_connections`] open connections (the loop
    /// takes a permit before it accepts, so further clients wait in the kernel's listen
    /// backlog and cost no file descriptor here), at most
    /// [`HttpConfig::max_connections_per_ip`] from one address (more get 503), and
    /// HTTP/1.1 with [`HttpConfig::header_read_timeout`] (which also closes idle
    /// keep-alive connections).
    ///
    /// # Errors
    /// I/O errors of the listener.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        let _ = shared.listen.set(listener.local_addr()?);
        if let Some(o) = &shared.config.oauth {
            o.default_resource(shared.scheme(), listener.local_addr()?, &shared.config.path);
        }
        let every = (shared.config.session_idle / 4)
            .min(shared.config.session_init_idle / 4)
            .min(shared.config.replay_keep / 4)
            .min(shared.config.replay_ack / 2)
            .clamp(Duration::from_millis(100), Duration::from_secs(5));
        let sweeper = {
            let weak = Arc::downgrade(&shared);
            let stop = shared.shutdown.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        () = stop.cancelled() => return,
                    }
                    let Some(shared) = weak.upgrade() else { return };
                    shared.sweep();
                    shared.sweep_shared().await;
                }
            })
        };
        let result = accept_loop(&shared, listener).await;
        sweeper.abort();
        for s in shared.all() {
            shared.remove(&s.id);
            s.end();
        }
        result
    }
}

/// The client's address, put in every request's extensions by [`HttpServer::serve`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) SocketAddr);

/// Open connections per client IP address.
#[derive(Default)]
struct PerIp(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in [`PerIp`], given back on drop.
struct IpSlot(Arc<PerIp>, IpAddr);

impl PerIp {
    fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<IpSlot> {
        let mut m = self.0.lock();
        let n = m.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(IpSlot(Arc::clone(self), ip))
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut m = (self.0).0.lock();
        if let Some(n) = m.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}

/// Whether an accept error concerns only the one connection (the next accept may work).
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

/// Accept and serve connections until shutdown; then wait for the open ones to finish.
async fn accept_loop(
    shared: &Arc<Shared>,
    listener: tokio::net::TcpListener,
) -> std::io::Result<()> {
    let config = &shared.config;
    let stop = shared.shutdown.clone();
    let permits = Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1)));
    let per_ip = Arc::new(PerIp::default());
    // Every connection task holds a receiver; `closed()` fires when all are gone.
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    let app = handlers::router(Arc::clone(shared));
    let plain_cors = Arc::new(handlers::PlainCors::new());
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .keep_alive(true);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = stop.cancelled() => break,
        };
        let (tcp, addr) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(error = %e, "accept failed; retrying in 1 s");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = stop.cancelled() => break,
                    }
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let Some(slot) = per_ip.take(addr.ip(), config.max_connections_per_ip.max(1)) else {
            tracing::debug!(client = %addr, "connection refused: too many from this address");
            shared.refused(Refusal::Limit);
            // Over TLS a plain-text answer would only be garbage to the client.
            if shared.scheme() == "http" {
                refuse(&tcp, config.max_connections_per_ip);
            }
            continue;
        };
        // Small writes (an SSE event with a task's result, a JSON reply) go out at once:
        // with Nagle's algorithm on, a response written in two pieces waited for the
        // client's delayed ACK, ~40 ms per result (measured by `mcp-tasks bench`
        // result-wait, docs/performance.md).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let conn = Connection {
            app: app.clone(),
            shared: Arc::clone(shared),
            cors: Arc::clone(&plain_cors),
            addr,
            stop: stop.clone(),
            http1: http1.clone(),
        };
        #[cfg(feature = "http-tls")]
        let tls = config
            .tls
            .as_ref()
            .map(|t| (t.acceptor(), config.tls_handshake_timeout));
        let open = open_rx.clone();
        tokio::spawn(async move {
            // Held until the connection ends, the TLS handshake included.
            let _held = (permit, slot, open);
            #[cfg(feature = "http-tls")]
            if let Some((acceptor, timeout)) = tls {
                let handshake = tokio::time::timeout(timeout, acceptor.accept(tcp));
                let stream = tokio::select! {
                    r = handshake => match r {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(client = %addr, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(client = %addr, ?timeout, "TLS handshake timed out");
                            return;
                        }
                    },
                    () = conn.stop.cancelled() => return,
                };
                conn.serve(stream).await;
                return;
            }
            conn.serve(tcp).await;
        });
    }
    // No new connections while the open ones finish.
    drop(listener);
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
}

/// What serving one accepted connection needs.
struct Connection {
    app: axum::Router,
    /// For the POSTs served without the router (`handlers::is_plain_post`).
    shared: Arc<Shared>,
    cors: Arc<handlers::PlainCors>,
    addr: SocketAddr,
    stop: CancellationToken,
    http1: hyper::server::conn::http1::Builder,
}

impl Connection {
    /// Serve HTTP/1.1 on `io` (TCP, or TLS over it) until it ends; on shutdown, finish the
    /// request in progress and close.
    async fn serve<I>(self, io: I)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Self {
            app,
            shared,
            cors,
            addr,
            stop,
            http1,
        } = self;
        let last_token = Arc::new(auth::LastToken::default());
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(ClientAddr(addr));
                // A POST on the endpoint without `Origin` (every message of a non-browser
                // client) is answered as the router would, without its layers.
                if handlers::is_plain_post(&shared, &req) {
                    futures::future::Either::Left(handlers::plain_post(
                        Arc::clone(&shared),
                        Arc::clone(&cors),
                        Arc::clone(&last_token),
                        req,
                    ))
                } else {
                    futures::future::Either::Right(app.clone().oneshot(req))
                }
            });
        let conn = http1.serve_connection(hyper_util::rt::TokioIo::new(io), service);
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(client = %addr, error = %e, "connection ended with an error");
                }
                return;
            }
            () = stop.cancelled() => {}
        }
        conn.as_mut().graceful_shutdown();
        if let Err(e) = conn.await {
            tracing::debug!(client = %addr, error = %e, "connection ended with an error");
        }
    }
}

/// Best effort: tell a refused connection why (one non-blocking write), then close it.
fn refuse(tcp: &tokio::net::TcpStream, max: usize) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","error":{{"code":-32603,"message":"Service Unavailable: at most {max} connections per client address (--max-connections-per-ip)"}}}}"#
    );
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = tcp.try_write(format!("{head}{body}").as_bytes());
}
