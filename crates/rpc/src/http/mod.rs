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

mod auth;
mod handlers;
mod session;
mod stream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tasks_proto::Request;
use mcp_tasks_proto::mcp::SUPPORTED_PROTOCOL_VERSIONS;
use tokio_util::sync::CancellationToken;

pub use auth::{BearerTokens, OriginPolicy};

use crate::peer::Handler;
use session::HttpSession;

/// Makes the handler of a new session, given the principal that authenticated (`None`
/// without authentication).
pub trait SessionFactory: Send + Sync + 'static {
    /// The handler of a new session of `principal`.
    fn create(&self, principal: Option<&str>) -> Arc<dyn Handler>;
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

/// Configuration of the HTTP transport.
#[derive(Clone)]
pub struct HttpConfig {
    /// The MCP endpoint path.
    pub path: String,
    /// Largest request body; larger ones get 413.
    pub max_body_bytes: usize,
    /// Bearer tokens; empty turns authentication off.
    pub tokens: BearerTokens,
    /// Accepted `Origin`s.
    pub origins: OriginPolicy,
    /// A session with no request and no open stream for this long ends.
    pub session_idle: Duration,
    /// How long an SSE connection is held while it waits before it is closed with a
    /// `retry` field (the stream stays resumable).
    pub sse_hold: Duration,
    /// The `retry` interval sent when closing a connection early.
    pub sse_retry: Duration,
    /// Most events kept per stream for replay.
    pub replay_events: usize,
    /// Most bytes kept per stream for replay.
    pub replay_bytes: usize,
    /// How long a stream nobody reads is kept for replay.
    pub replay_keep: Duration,
    /// How long [`ReplyMode::Auto`] waits for the response before choosing SSE.
    pub peek: Duration,
    /// Picks the reply mode of each request.
    pub reply_policy: ReplyPolicy,
    /// Accepted `MCP-Protocol-Version` header values.
    pub protocol_versions: Vec<String>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("path", &self.path)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("tokens", &self.tokens)
            .field("origins", &self.origins)
            .field("session_idle", &self.session_idle)
            .field("sse_hold", &self.sse_hold)
            .field("sse_retry", &self.sse_retry)
            .finish_non_exhaustive()
    }
}

/// Default body limit: 16 MiB.
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            max_body_bytes: DEFAULT_MAX_BODY,
            tokens: BearerTokens::new(),
            origins: OriginPolicy::default(),
            session_idle: Duration::from_secs(3600),
            sse_hold: Duration::from_secs(60),
            sse_retry: Duration::from_secs(2),
            replay_events: 1000,
            replay_bytes: 1 << 20,
            replay_keep: Duration::from_secs(300),
            peek: Duration::from_millis(100),
            reply_policy: Arc::new(|_| ReplyMode::Auto),
            protocol_versions: SUPPORTED_PROTOCOL_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
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
            keep: self.replay_keep,
            hold: self.sse_hold,
            retry: self.sse_retry,
        }
    }
}

pub(crate) struct Shared {
    config: HttpConfig,
    factory: Box<dyn SessionFactory>,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    shutdown: CancellationToken,
}

impl Shared {
    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    fn insert(&self, s: Arc<HttpSession>) {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(s.id.clone(), s);
    }

    fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id)
    }

    fn all(&self) -> Vec<Arc<HttpSession>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// End idle sessions; drop streams nobody read for the replay period.
    fn sweep(&self) {
        let now = Instant::now();
        for s in self.all() {
            if s.is_idle(self.config.session_idle, now) {
                tracing::info!(session = %s.id, "session expired after being idle");
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

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// A server whose sessions get their handler from `factory`.
    pub fn new(config: HttpConfig, factory: impl SessionFactory) -> Self {
        Self {
            shared: Arc::new(Shared {
                config,
                factory: Box::new(factory),
                sessions: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// The axum router serving the endpoint (and 404 elsewhere).
    pub fn router(&self) -> axum::Router {
        handlers::router(Arc::clone(&self.shared))
    }

    /// Number of live sessions.
    pub fn session_count(&self) -> usize {
        self.shared
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Begin shutting down: stop accepting connections, close every SSE connection after
    /// a `retry` field. [`Self::serve`] returns once the open connections are done.
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Serve on `listener` until [`Self::shutdown`] and the end of the open connections;
    /// then end every session.
    ///
    /// # Errors
    /// I/O errors of the listener.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        let every = (shared.config.session_idle / 4)
            .min(shared.config.replay_keep / 4)
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
                }
            })
        };
        let stop = shared.shutdown.clone();
        // Small writes (an SSE event with a task's result, a JSON reply) go out at once:
        // with Nagle's algorithm on, a response written in two pieces waited for the
        // client's delayed ACK, ~40 ms per result (measured by `mcp-tasks bench`
        // result-wait, docs/performance.md).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "could not set TCP_NODELAY");
            }
        });
        let result = axum::serve(listener, self.router())
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        sweeper.abort();
        for s in shared.all() {
            shared.remove(&s.id);
            s.end();
        }
        result
    }
}
