//! [`crate::Transport::Http`]: a server over Streamable HTTP, with the policy of `mcp-tasks serve`:
//! sessions bound to the principal of their bearer token, the reply mode of each method,
//! `Origin` checks and resource bounds, and graceful shutdown.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::{Requester, TaskEngine, TaskStore};
use mcp_tasks_proto::{Request, methods};
use mcp_tasks_rpc::Handler;
use mcp_tasks_rpc::http::{HttpServer, SessionFactory};

pub use mcp_tasks_rpc::http::{
    BearerTokens, HostPolicy, HttpConfig, MetricsEndpoint, OAuth, OAuthConfig, OriginPolicy,
    Readiness, ReplyMode,
};
#[cfg(feature = "tls")]
pub use mcp_tasks_rpc::http::{TlsError, TlsFiles};

pub use crate::http_metrics::MetricsServing;
use crate::http_metrics::{self, METRICS_CONTENT_TYPE};
pub use crate::ui::UiServing;
use crate::{SHUTDOWN_MESSAGE, Server};

/// How [`crate::Transport::Http`] serves: [`HttpOptions::new`], then the setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The transport: endpoint path, body limit, bearer tokens, allowed origins, session,
    /// SSE and connection bounds, timeouts, and the reply mode of each request
    /// ([`reply_mode`] unless replaced).
    pub transport: HttpConfig,
    /// Serve a non-loopback address without authentication (anyone who can reach it can
    /// run tools, and any task id is a capability). Off: serving refuses to.
    pub allow_unauthenticated: bool,
    /// On shutdown, how long `/readyz` answers 503 while requests are still served, so
    /// that a load balancer stops sending new ones before connections are refused.
    /// Zero (the default): no such wait.
    pub drain: Duration,
    /// Where `GET /metrics` is served (on the endpoint's port by default).
    pub metrics: MetricsServing,
    /// Whether the task dashboard is served at `/ui` (by default; never on a non-loopback
    /// address without authentication), and who sees every task there.
    pub ui: UiServing,
}

mcp_tasks_proto::default_is_new!(HttpOptions);

impl HttpOptions {
    /// The defaults of `mcp-tasks serve`: endpoint `/mcp`, no authentication (so loopback
    /// addresses only), loopback origins, [`reply_mode`].
    pub fn new() -> Self {
        let mut transport = HttpConfig::default();
        transport.reply_policy = Arc::new(reply_mode);
        Self {
            transport,
            allow_unauthenticated: false,
            drain: Duration::ZERO,
            metrics: MetricsServing::default(),
            ui: UiServing::default(),
        }
    }

    /// Accept the bearer token `token` as `principal`. With any token, every request
    /// needs `Authorization: Bearer TOKEN`, and each session belongs to its token's
    /// principal, which sees its own tasks across sessions (and may list them).
    #[must_use]
    pub fn token(mut self, token: &str, principal: &str) -> Self {
        self.transport.tokens.insert(token, principal);
        self
    }

    /// Accept these bearer tokens (replacing those given before).
    #[must_use]
    pub fn tokens(mut self, tokens: BearerTokens) -> Self {
        self.transport.tokens = tokens;
        self
    }

    /// Accept OAuth 2.1 access tokens (JWTs) as [`OAuth`] validates them, beside any
    /// static tokens.
    #[must_use]
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.transport.oauth = Some(Arc::new(oauth));
        self
    }

    /// `Host` names allowed besides IP literals and `localhost` (DNS rebinding protection;
    /// `*`: any). On a loopback address, any other name is refused; elsewhere names are
    /// checked only when some are given.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        self.transport.hosts = HostPolicy::new(hosts);
        self
    }

    /// Browser `Origin`s allowed besides loopback ones.
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        self.transport.origins = OriginPolicy::new(origins);
        self
    }

    /// Largest request body (413 above it).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.transport.max_body_bytes = bytes;
        self
    }

    mcp_tasks_proto::setters! {
        /// See [`Self::allow_unauthenticated`](field@Self::allow_unauthenticated).
        pub fn allow_unauthenticated(allow_unauthenticated: bool);
        /// See [`Self::drain`](field@Self::drain).
        pub fn drain(drain: Duration);
        /// See [`Self::metrics`](field@Self::metrics).
        pub fn metrics(metrics: MetricsServing);
        /// See [`Self::ui`](field@Self::ui).
        pub fn ui(ui: UiServing);
    }

    /// Edit the transport's configuration in place (session, SSE and connection bounds,
    /// timeouts, ...).
    #[must_use]
    pub fn with_transport(mut self, edit: impl FnOnce(&mut HttpConfig)) -> Self {
        edit(&mut self.transport);
        self
    }
}

/// Which requests may be answered with an SSE stream: those before whose response
/// messages may come (a `tasks/result` relays the task's requests for input; a plain
/// `tools/call` may report progress or ask). They are answered as JSON all the same when
/// the response is ready at once. Everything else is `application/json`.
///
/// Spec (tasks): "Where possible, the server SHOULD NOT upgrade to an SSE stream in
/// response to a `tasks/get` request, as the client has indicated it wishes to poll for a
/// result."
pub fn reply_mode(req: &Request) -> ReplyMode {
    match req.method.as_str() {
        methods::TASKS_RESULT => ReplyMode::Auto,
        methods::TOOLS_CALL if req.params.as_ref().and_then(|p| p.get("task")).is_none() => {
            ReplyMode::Auto
        }
        _ => ReplyMode::Json,
    }
}

/// Serve `server` over Streamable HTTP on `listener` (endpoint
/// [`HttpConfig::path`], `/mcp` by default) until `shutdown` completes, then shut down
/// gracefully: stop accepting, close streams with a `retry` field, let running tasks
/// finish for [`crate::ServerConfig::shutdown_grace`], fail the ones left with
/// [`SHUTDOWN_MESSAGE`], and give open connections what is left of the grace.
///
/// With bearer tokens every session belongs to its principal, which sees its own tasks
/// across sessions; without, nobody can be identified and `tasks/list` is off.
///
/// Spec (transports, security warning): "When running locally, servers SHOULD bind only to
/// localhost (127.0.0.1) rather than all network interfaces (0.0.0.0)", and "Servers SHOULD
/// implement proper authentication for all connections".
///
/// # Errors
/// [`io::ErrorKind::PermissionDenied`] for a non-loopback address without tokens and
/// without [`HttpOptions::allow_unauthenticated`]; an I/O error of the listener.
pub(crate) async fn serve_http(
    server: &Server,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let addr = listener.local_addr()?;
    let authenticated = !options.transport.tokens.is_empty() || options.transport.oauth.is_some();
    let drain = options.drain;
    check_exposure(addr, &options)?;
    if let Some(o) = &options.transport.oauth
        && o.resource().is_none()
        && addr.ip().is_unspecified()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "listening on {addr} (every interface), the resource URL clients use cannot be \
                 derived: give it (--resource-url)"
            ),
        ));
    }
    let factory = Sessions(server.clone());
    let mut transport = options.transport;
    if transport.sessions.is_none() {
        transport.sessions = server.state().shared_sessions.get().cloned();
    }
    if transport.readiness.is_none()
        && let Some(engine) = server.engine()
    {
        transport.readiness = Some(store_readiness(Arc::clone(engine.store())));
    }
    if transport.observer.is_none() {
        transport.observer = Some(http_metrics::observer(server));
    }
    let metrics_listener = match &options.metrics {
        MetricsServing::Off => None,
        MetricsServing::Endpoint { principal } => {
            transport.metrics = Some(MetricsEndpoint {
                render: http_metrics::render(server, None),
                content_type: METRICS_CONTENT_TYPE,
                principal: principal.clone(),
            });
            None
        }
        MetricsServing::Listen(at) => {
            http_metrics::check_metrics_exposure(*at, options.allow_unauthenticated)?;
            Some(tokio::net::TcpListener::bind(at).await?)
        }
    };
    if let UiServing::On { admin } = &options.ui
        && let Some(engine) = server.engine()
    {
        // Without authentication only on a loopback address: anyone who reaches a public
        // one would see every task.
        if authenticated || addr.ip().is_loopback() {
            transport.ui = Some(crate::ui::endpoint(engine.clone(), admin.clone()));
        }
    }
    let http_hosts = transport.hosts.clone();
    let http = HttpServer::new(transport, factory);
    tracing::info!(address = %addr, authenticated, "serving Streamable HTTP");
    let stop_metrics = tokio_util::sync::CancellationToken::new();
    let _stop_metrics = stop_metrics.clone().drop_guard();
    if let Some(listener) = metrics_listener {
        let gauges = {
            let http = http.clone();
            Arc::new(move || http.gauges()) as Arc<dyn Fn() -> _ + Send + Sync>
        };
        let render = http_metrics::render(server, Some(gauges));
        tracing::info!(address = %listener.local_addr()?, "serving metrics");
        let stop = stop_metrics.clone();
        let hosts = http_hosts.clone();
        tokio::spawn(async move {
            let stopped = async move { stop.cancelled().await };
            if let Err(e) = mcp_tasks_rpc::http::serve_metrics(
                listener,
                render,
                METRICS_CONTENT_TYPE,
                hosts,
                stopped,
            )
            .await
            {
                tracing::warn!(error = %e, "the metrics listener failed");
            }
        });
    }
    let mut serving = {
        let http = http.clone();
        tokio::spawn(async move { http.serve(listener).await })
    };
    tokio::select! {
        r = &mut serving => {
            return match r {
                Ok(r) => r,
                Err(e) => Err(io::Error::other(format!("the HTTP transport panicked: {e}"))),
            };
        }
        () = shutdown => {}
    }
    // `/readyz` turns 503 first; requests are still served for the drain period.
    http.drain();
    if !drain.is_zero() {
        tracing::info!(drain = ?drain, "draining: /readyz answers 503, requests are still served");
        tokio::time::sleep(drain).await;
    }
    graceful_shutdown(&http, server, serving, server.state().config.shutdown_grace).await;
    Ok(())
}

/// Makes the session of each principal; with shared sessions, also rebuilds a session
/// another replica started from the state its [`Session`](crate::Session) shared.
struct Sessions(Server);

impl SessionFactory for Sessions {
    fn create(&self, principal: Option<&str>) -> Arc<dyn Handler> {
        self.create_stateless(principal, None)
    }

    /// Without a principal, the client's address is what the per-requester limits of its
    /// stateless requests count against ([`Requester::quota_key`]).
    fn create_stateless(
        &self,
        principal: Option<&str>,
        client: Option<std::net::IpAddr>,
    ) -> Arc<dyn Handler> {
        let requester = Requester {
            principal: principal.map(str::to_owned),
            sees_all: false,
            session: None,
            client_address: client.filter(|_| principal.is_none()),
        };
        self.0.session(requester, principal.is_some())
    }

    fn restore(
        &self,
        principal: Option<&str>,
        state: &serde_json::Value,
    ) -> Option<Arc<dyn Handler>> {
        crate::replicas::restore(&self.0, principal, state)
    }
}

/// `/readyz` asks the task store for a trivial query ([`TaskStore::ready`]).
fn store_readiness(store: Arc<dyn TaskStore>) -> Readiness {
    Arc::new(move || {
        let store = Arc::clone(&store);
        Box::pin(async move {
            store.ready().await.map_err(|e| {
                mcp_tasks_rpc::http::NotReady::new("the task store does not answer", e.to_string())
            })
        })
    })
}

/// Refuse a non-loopback address without authentication unless allowed.
fn check_exposure(addr: std::net::SocketAddr, options: &HttpOptions) -> io::Result<()> {
    if options.transport.tokens.is_empty()
        && options.transport.oauth.is_none()
        && !addr.ip().is_loopback()
        && !options.allow_unauthenticated
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing to serve the non-loopback address {addr} without authentication \
                 (give bearer tokens, or allow unauthenticated access)"
            ),
        ));
    }
    Ok(())
}

/// Stop accepting, close streams with a `retry`, give running tasks `grace` to finish,
/// then fail what is left.
async fn graceful_shutdown(
    http: &HttpServer,
    server: &Server,
    serving: tokio::task::JoinHandle<io::Result<()>>,
    grace: Duration,
) {
    let running = || server.engine().map_or(0, TaskEngine::running_count);
    tracing::info!(
        running = running(),
        grace = ?grace,
        "shutting down: no new connections; running tasks may finish"
    );
    http.shutdown();
    let deadline = tokio::time::Instant::now() + grace;
    while running() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(engine) = server.engine() {
        let left = engine.running_count();
        if left > 0 {
            tracing::warn!("shutdown: failing {left} task(s) still running after the grace period");
            engine.fail_running(SHUTDOWN_MESSAGE).await;
        }
    }
    // Connections still open (a plain call still running) get what is left of the grace.
    let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
    if tokio::time::timeout(rest, serving).await.is_err() {
        tracing::info!("connections still open at the end of the grace period were dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json as j;

    #[test]
    fn only_calls_that_may_stream_are_upgraded() {
        let req = |m: &str, p: serde_json::Value| Request {
            id: 1.into(),
            method: m.into(),
            params: Some(p),
        };
        assert_eq!(
            reply_mode(&req("tasks/result", j!({"taskId": "x"}))),
            ReplyMode::Auto
        );
        assert_eq!(
            reply_mode(&req("tools/call", j!({"name": "ask"}))),
            ReplyMode::Auto
        );
        assert_eq!(
            reply_mode(&req("tools/call", j!({"name": "ask", "task": {}}))),
            ReplyMode::Json
        );
        for m in [
            "tasks/get",
            "tasks/list",
            "tasks/cancel",
            "tools/list",
            "initialize",
            "ping",
        ] {
            assert_eq!(reply_mode(&req(m, j!({}))), ReplyMode::Json, "{m}");
        }
    }

    #[test]
    fn a_public_address_needs_tokens_or_consent() {
        let public: std::net::SocketAddr = "192.0.2.1:80".parse().unwrap();
        let local: std::net::SocketAddr = "127.0.0.1:80".parse().unwrap();
        let err = check_exposure(public, &HttpOptions::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(check_exposure(local, &HttpOptions::new()).is_ok());
        assert!(check_exposure(public, &HttpOptions::new().token("t", "p")).is_ok());
        assert!(check_exposure(public, &HttpOptions::new().allow_unauthenticated(true)).is_ok());
    }

    /// `GET path` on a fresh connection: the status and the body.
    async fn probe(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
        probe_with(addr, path, "").await
    }

    /// `GET path` with `headers` (`Name: value\r\n` lines).
    async fn probe_with(addr: std::net::SocketAddr, path: &str, headers: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n");
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut raw = String::new();
        tcp.read_to_string(&mut raw).await.unwrap();
        let status = raw[9..12].parse().unwrap();
        let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
        (status, body)
    }

    /// Serve `options` on a loopback port until the returned sender fires.
    async fn serving(
        server: &Server,
        options: HttpOptions,
    ) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = server.clone();
        tokio::spawn(async move {
            serve_http(&server, listener, options, async {
                let _ = stopped.await;
            })
            .await
        });
        (addr, stop)
    }

    #[tokio::test]
    async fn probes_need_no_token_and_readyz_asks_the_store() {
        let server = Server::builder().build().await.unwrap();
        let (addr, _stop) = serving(&server, HttpOptions::new().token("secret", "alice")).await;
        assert_eq!(probe(addr, "/healthz").await, (200, "ok\n".into()));
        assert_eq!(probe(addr, "/readyz").await, (200, "ready\n".into()));
        // The endpoint itself still wants the token.
        assert_eq!(probe(addr, "/mcp").await.0, 401);
        server.shutdown().await;
    }

    /// A readiness check that fails, naming a user, host and database in its detail.
    fn on_fire() -> Readiness {
        Arc::new(|| {
            Box::pin(async {
                Err(mcp_tasks_rpc::http::NotReady::new(
                    "the store is on fire",
                    "at postgres://alice@db.internal:5432/tasks",
                ))
            })
        })
    }

    #[tokio::test]
    async fn readyz_is_503_with_the_reason_when_the_check_fails_or_hangs() {
        let server = Server::builder().build().await.unwrap();
        let failing = on_fire();
        let (addr, _stop) = serving(
            &server,
            HttpOptions::new().with_transport(|t| t.readiness = Some(failing)),
        )
        .await;
        let (status, body) = probe(addr, "/readyz").await;
        assert_eq!(status, 503);
        assert_eq!(
            body, "not ready: the store is on fire\n",
            "without a token the body names no user, host or database"
        );
        // With authentication on, a valid token sees the cause; a wrong one does not.
        let failing = on_fire();
        let (addr, _stop) = serving(
            &server,
            HttpOptions::new()
                .token("secret", "ops")
                .with_transport(|t| t.readiness = Some(failing)),
        )
        .await;
        let (status, body) = probe(addr, "/readyz").await;
        assert_eq!(
            (status, body.as_str()),
            (503, "not ready: the store is on fire\n")
        );
        let (_, body) = probe_with(addr, "/readyz", "Authorization: Bearer wrong\r\n").await;
        assert!(!body.contains("db.internal"), "{body}");
        let (status, body) = probe_with(addr, "/readyz", "Authorization: Bearer secret\r\n").await;
        assert_eq!(status, 503);
        assert!(body.contains("alice@db.internal:5432/tasks"), "{body}");
        assert_eq!(probe(addr, "/healthz").await.0, 200);

        let hanging: Readiness = Arc::new(|| Box::pin(std::future::pending()));
        let (addr, _stop) = serving(
            &server,
            HttpOptions::new().with_transport(|t| {
                t.readiness = Some(hanging);
                t.readiness_timeout = Duration::from_millis(50);
            }),
        )
        .await;
        let (status, body) = probe(addr, "/readyz").await;
        assert_eq!(status, 503);
        assert!(body.contains("did not answer within 50 ms"), "{body}");
        server.shutdown().await;
    }

    #[tokio::test]
    async fn on_shutdown_readyz_turns_503_first_while_requests_are_served() {
        let server = Server::builder().build().await.unwrap();
        let options = HttpOptions::new().drain(Duration::from_millis(400));
        let (addr, stop) = serving(&server, options).await;
        assert_eq!(probe(addr, "/readyz").await.0, 200);
        stop.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (status, body) = probe(addr, "/readyz").await;
        assert_eq!(status, 503);
        assert!(body.contains("shutting down"), "{body}");
        // Still accepting and serving during the drain period.
        assert_eq!(probe(addr, "/healthz").await.0, 200);
        server.shutdown().await;
    }

    #[tokio::test]
    async fn probes_can_be_turned_off() {
        let server = Server::builder().build().await.unwrap();
        let (addr, _stop) = serving(
            &server,
            HttpOptions::new().with_transport(|t| t.probes = false),
        )
        .await;
        assert_eq!(probe(addr, "/healthz").await.0, 404);
        assert_eq!(probe(addr, "/readyz").await.0, 404);
        server.shutdown().await;
    }

    #[tokio::test]
    async fn serves_until_shutdown() {
        let server = Server::builder().build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = {
            let server = server.clone();
            tokio::spawn(async move {
                serve_http(&server, listener, HttpOptions::new(), async {
                    let _ = stopped.await;
                })
                .await
            })
        };
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), serving)
            .await
            .expect("serving ends on shutdown")
            .unwrap()
            .unwrap();
        server.shutdown().await;
    }
}
