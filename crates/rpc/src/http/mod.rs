//! The Streamable HTTP server transport (MCP 2025-11-25, `basic/transports`).
//!
//! One endpoint (default `/mcp`) takes:
//!
//! * **POST** one JSON-RPC message. A notification or response is delivered to the
//!   session's [`Peer`](crate::Peer) and answered `202 Accepted`. A request is answered by
//!   the [`ReplyMode`] the configured policy picks for it: `application/json`, or an SSE
//!   stream when messages may precede the response (decided by peeking: JSON if the
//!   response is the first thing the handler emits, within a short window).
//! * **GET** opens the standalone SSE stream (messages tied to no request), or, with
//!   `Last-Event-ID`, resumes the stream that event belongs to, replaying what followed it.
//! * **DELETE** ends the session.
//!
//! The transport knows nothing about tasks: a [`SessionFactory`] makes the
//! [`Handler`](crate::Handler) of each session, given the authenticated principal.
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

mod accept;
mod auth;
mod config;
mod fuzz;
mod handlers;
mod metrics;
mod modern_stream;
mod oauth;
mod session;
mod state;
mod stateless;
mod stream;
#[cfg(feature = "http-tls")]
mod tls;
mod ui;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub use auth::{BearerTokens, HostPolicy, OriginPolicy};
pub(crate) use handlers::ClientAddr;
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
pub use config::{
    DEFAULT_MAX_BODY, HttpConfig, NotReady, Readiness, ReplyMode, ReplyPolicy, SessionFactory,
};
pub use session::directory::{Ended, EndedCallback, RelayFailure, SessionDirectory, SharedSession};
pub use ui::{UI_PATH, UiApi, UiAssets, UiEndpoint, UiMethod, UiRequest, UiResponse};

use accept::accept_loop;
use session::listener::Note;
use state::{Sessions, Shared};

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
                        if let Some(note) = Note::parse(&message) {
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
