//! The configuration of the HTTP transport ([`HttpConfig`]) and what makes the handler
//! of each session ([`SessionFactory`]).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::Request;
use mcp_tasks_proto::mcp::SUPPORTED_PROTOCOL_VERSIONS;

use super::auth::{BearerTokens, HostPolicy, OriginPolicy};
use super::metrics::{HttpObserver, MetricsEndpoint};
use super::oauth::OAuth;
use super::session::SessionLimits;
use super::session::directory::SessionDirectory;
use super::stream::BufferLimits;
#[cfg(feature = "http-tls")]
use super::tls::TlsFiles;
use super::ui::UiEndpoint;
use crate::peer::Handler;

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
    pub(super) fn limits(&self) -> SessionLimits {
        SessionLimits {
            buffer: BufferLimits {
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
