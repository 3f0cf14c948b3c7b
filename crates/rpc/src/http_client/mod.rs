//! The Streamable HTTP client transport (MCP 2025-11-25, `basic/transports`).
//!
//! [`HttpClientTransport::start`] drains a [`Peer`]'s outgoing queue onto an MCP
//! endpoint and feeds what comes back into the peer:
//!
//! * every outgoing message is one POST (spec: "Every JSON-RPC message sent from the
//!   client MUST be a new HTTP POST request to the MCP endpoint"), with `Accept:
//!   application/json, text/event-stream`; a request's answer is read whether it comes as
//!   one JSON object or as an SSE stream ("The client MUST support both these cases");
//! * the session id of the `initialize` response is sent on every later request, with
//!   `MCP-Protocol-Version` once the version is known;
//! * an SSE stream that breaks before the response came is resumed with a GET carrying
//!   `Last-Event-ID`, after the `retry` the server asked for ("The client MUST respect the
//!   `retry` field, waiting the given number of milliseconds before attempting to
//!   reconnect");
//! * after `notifications/initialized` a standalone GET stream carries what the server
//!   sends outside any request, and is reopened when it closes (405 means the server has
//!   none);
//! * a 404 to a request carrying the session id starts a new session ("When a client
//!   receives HTTP 404 in response to a request containing an `MCP-Session-Id`, it MUST
//!   start a new session by sending a new `InitializeRequest` without a session ID
//!   attached"), replaying the `initialize` the peer sent first, then retries the message
//!   once;
//! * `Authorization: Bearer` when a token is configured, and any other headers the
//!   configuration names (for servers behind a gateway that wants its own API key);
//! * a session opened earlier (by another process, say) can be taken up again without a
//!   new `initialize` ([`ResumeSession`]); should the server have ended it, the 404 starts
//!   a new one as above.
//!
//! A request the transport could not get answered fails with a
//! [`crate::PeerError::Transport`] ([`Peer::fail`]), so that the requester can tell a
//! broken connection from the server's own error and retry idempotent requests. Like the
//! rest of this crate it knows nothing about tasks.

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks_proto::{Message, Request, RequestId, methods};
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::error::{TransportError, TransportErrorKind};
use crate::peer::{Outbound, Peer};
use crate::sse::SseParser;

const MCP_SESSION_ID: &str = "mcp-session-id";
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn transport_error(
    kind: TransportErrorKind,
    message: impl std::fmt::Display,
    status: Option<u16>,
) -> TransportError {
    let e = TransportError::new(kind, message.to_string());
    match status {
        Some(s) => e.with_status(s),
        None => e,
    }
}

/// Configuration of the HTTP client transport.
#[derive(Debug, Clone)]
pub struct HttpClientConfig {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: String,
    /// Sent as `Authorization: Bearer TOKEN` on every request.
    pub bearer_token: Option<String>,
    /// More headers sent on every request (`(name, value)`), e.g. an API key. The headers
    /// the transport manages itself (`Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Last-Event-ID`, `Accept`, `Content-Type`, `Content-Length`, `Host`) are refused by
    /// [`HttpClientTransport::start`].
    pub headers: Vec<(String, String)>,
    /// Take up this existing session instead of starting with `initialize`.
    pub resume: Option<ResumeSession>,
    /// Bound on establishing a TCP connection.
    pub connect_timeout: Duration,
    /// Open the standalone GET stream after `notifications/initialized`.
    pub standalone_stream: bool,
    /// Reconnection delay when the server sent no `retry`.
    pub default_retry: Duration,
    /// Consecutive failed reconnections of a request's SSE stream before giving up.
    pub max_resume_attempts: u32,
    /// Largest JSON body or SSE event accepted.
    pub max_message_bytes: usize,
}

impl HttpClientConfig {
    /// Defaults for `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            bearer_token: None,
            headers: Vec::new(),
            resume: None,
            connect_timeout: Duration::from_secs(10),
            standalone_stream: true,
            default_retry: Duration::from_secs(1),
            max_resume_attempts: 5,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

impl HttpClientConfig {
    /// Whether [`HttpClientTransport::start`] would accept this configuration (the URL and
    /// the headers), without starting anything.
    ///
    /// # Errors
    /// What `start` would refuse.
    pub fn check(&self) -> Result<(), HttpClientError> {
        self.validate().map(|_| ())
    }

    fn validate(&self) -> Result<(reqwest::Url, HeaderMap), HttpClientError> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| HttpClientError::InvalidUrl {
            url: self.url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpClientError::InvalidUrl {
                url: self.url.clone(),
                reason: "the scheme must be http or https".into(),
            });
        }
        if url.scheme() == "https" && !cfg!(feature = "http-client-tls") {
            return Err(HttpClientError::InvalidUrl {
            url: self.url.clone(),
            reason: "https needs a build with TLS (feature `http-client-tls` of mcp-tasks-rpc, `tls` of mcp-tasks-client)".into(),
        });
        }
        let extra = extra_headers(self)?;
        Ok((url, extra))
    }
}

/// A session to take up again: the transport starts in it, already initialized, opens
/// its standalone stream at once, and replays `init_params` as its `initialize` if the
/// server answers 404 (the session is gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeSession {
    /// The `Mcp-Session-Id` the server assigned.
    pub session_id: String,
    /// The negotiated protocol version, sent as `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// The params of the session's original `initialize`.
    pub init_params: Value,
}

/// Headers the transport sets itself; configuring them is an error.
const MANAGED_HEADERS: [&str; 7] = [
    MCP_SESSION_ID,
    MCP_PROTOCOL_VERSION,
    LAST_EVENT_ID,
    "accept",
    "content-type",
    "content-length",
    "host",
];

fn extra_headers(config: &HttpClientConfig) -> Result<HeaderMap, HttpClientError> {
    let mut map = HeaderMap::new();
    for (name, value) in &config.headers {
        let bad = |reason: &str| HttpClientError::InvalidHeader {
            name: name.clone(),
            reason: reason.to_owned(),
        };
        let n = header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| bad("not a valid header name"))?;
        if MANAGED_HEADERS.contains(&n.as_str()) {
            return Err(bad("the transport sets this header itself"));
        }
        let mut v =
            HeaderValue::from_str(value.trim()).map_err(|_| bad("not a valid header value"))?;
        v.set_sensitive(true);
        map.append(n, v);
    }
    Ok(map)
}

/// Why the transport could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    /// The endpoint is not a usable URL.
    #[error("invalid MCP endpoint URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// A configured header cannot be sent.
    #[error("header `{name}`: {reason}")]
    InvalidHeader {
        /// The header's name as configured.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// State of the standalone GET stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandaloneState {
    /// Not opened yet (before `notifications/initialized`, or while connecting).
    Pending,
    /// Open.
    Open,
    /// Closed by the server; reconnecting.
    Reconnecting,
    /// The server offers none (405), or it is turned off.
    Unavailable,
    /// Opening failed; retrying with backoff.
    Failing,
}

#[derive(Debug, Default)]
struct SessionState {
    id: Option<String>,
    protocol_version: Option<String>,
    /// The params of the peer's `initialize`, replayed on a new session.
    init_params: Option<Value>,
    /// Whether `notifications/initialized` was sent on this session.
    initialized: bool,
}

struct State {
    http: reqwest::Client,
    url: reqwest::Url,
    config: HttpClientConfig,
    /// [`HttpClientConfig::headers`], checked.
    extra: HeaderMap,
    peer: Peer,
    session: Mutex<SessionState>,
    reinit: tokio::sync::Mutex<()>,
    standalone: Mutex<Option<tokio::task::JoinHandle<()>>>,
    standalone_state: watch::Sender<StandaloneState>,
    stop: CancellationToken,
    reinitializations: AtomicU64,
    resumptions: AtomicU64,
    next_internal_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running Streamable HTTP client transport. Dropping it stops it (and, best effort,
/// ends the session with DELETE); [`Self::close`] does so and waits.
pub struct HttpClientTransport {
    state: Arc<State>,
    driver: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for HttpClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientTransport")
            .field("url", &self.state.url.as_str())
            .field("session_id", &self.session_id())
            .finish_non_exhaustive()
    }
}

impl HttpClientTransport {
    /// Start draining `outbound` (the queue of `peer`) onto the endpoint. Must be called
    /// inside a tokio runtime.
    ///
    /// # Errors
    /// A bad URL or an HTTP client that cannot be built.
    pub fn start(
        peer: Peer,
        outbound: mpsc::Receiver<Outbound>,
        config: HttpClientConfig,
    ) -> Result<Self, HttpClientError> {
        let (url, extra) = config.validate()?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| HttpClientError::Client(e.to_string()))?;
        let (standalone_state, _) = watch::channel(if config.standalone_stream {
            StandaloneState::Pending
        } else {
            StandaloneState::Unavailable
        });
        let session = match &config.resume {
            Some(r) => SessionState {
                id: Some(r.session_id.clone()),
                protocol_version: r.protocol_version.clone(),
                init_params: Some(r.init_params.clone()),
                initialized: true,
            },
            None => SessionState::default(),
        };
        let resuming = config.resume.is_some();
        let state = Arc::new(State {
            http,
            url,
            config,
            extra,
            peer,
            session: Mutex::new(session),
            reinit: tokio::sync::Mutex::new(()),
            standalone: Mutex::new(None),
            standalone_state,
            stop: CancellationToken::new(),
            reinitializations: AtomicU64::new(0),
            resumptions: AtomicU64::new(0),
            next_internal_id: AtomicU64::new(1),
        });
        if resuming {
            state.start_standalone();
        }
        let driver = tokio::spawn(drive(Arc::clone(&state), outbound));
        Ok(Self {
            state,
            driver: Some(driver),
        })
    }

    /// The current session id, if the server assigned one.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.state.session).id.clone()
    }

    /// The protocol version sent in `MCP-Protocol-Version` (from the `initialize` result).
    pub fn protocol_version(&self) -> Option<String> {
        lock(&self.state.session).protocol_version.clone()
    }

    /// A way to read the current session id and protocol version later, without keeping
    /// the transport alive (both `None` once it has stopped).
    pub fn session_probe(
        &self,
    ) -> impl Fn() -> (Option<String>, Option<String>) + Send + Sync + 'static {
        let state = Arc::downgrade(&self.state);
        move || {
            state.upgrade().map_or((None, None), |s| {
                let s = lock(&s.session);
                (s.id.clone(), s.protocol_version.clone())
            })
        }
    }

    /// How many times a new session was started after a 404.
    pub fn reinitializations(&self) -> u64 {
        self.state.reinitializations.load(Ordering::Relaxed)
    }

    /// How many times an SSE stream was resumed with `Last-Event-ID`.
    pub fn resumptions(&self) -> u64 {
        self.state.resumptions.load(Ordering::Relaxed)
    }

    /// The state of the standalone GET stream, as it changes.
    pub fn standalone_state(&self) -> watch::Receiver<StandaloneState> {
        self.state.standalone_state.subscribe()
    }

    /// Wait until the standalone stream is open or known to be unavailable or failing
    /// (servers that send requests outside any request's stream need it open first).
    pub async fn standalone_settled(&self) {
        let mut rx = self.state.standalone_state.subscribe();
        let _ = rx
            .wait_for(|s| !matches!(s, StandaloneState::Pending))
            .await;
    }

    /// Stop: end the session with DELETE (a 405 is fine), stop every stream, close the
    /// peer.
    pub async fn close(mut self) {
        let id = lock(&self.state.session).id.clone();
        if let Some(id) = id {
            let req = self
                .state
                .request(reqwest::Method::DELETE)
                .header(MCP_SESSION_ID, id);
            match tokio::time::timeout(Duration::from_secs(5), req.send()).await {
                Ok(Ok(r)) => tracing::debug!(status = %r.status(), "session ended"),
                Ok(Err(e)) => tracing::debug!(error = %e, "DELETE of the session failed"),
                Err(_) => tracing::debug!("DELETE of the session timed out"),
            }
            lock(&self.state.session).id = None;
        }
        self.state.shutdown();
        if let Some(d) = self.driver.take() {
            let _ = d.await;
        }
    }
}

impl Drop for HttpClientTransport {
    fn drop(&mut self) {
        let id = lock(&self.state.session).id.take();
        if let (Some(id), Ok(rt)) = (id, tokio::runtime::Handle::try_current()) {
            // Best effort: a runtime shutting down may never run it.
            let req = self
                .state
                .request(reqwest::Method::DELETE)
                .header(MCP_SESSION_ID, id);
            rt.spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
            });
        }
        self.state.shutdown();
    }
}

impl State {
    fn shutdown(&self) {
        self.stop.cancel();
        if let Some(h) = lock(&self.standalone).take() {
            h.abort();
        }
        self.peer.close();
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .request(method, self.url.clone())
            .headers(self.extra.clone());
        if let Some(t) = &self.config.bearer_token {
            r = r.bearer_auth(t);
        }
        r
    }

    /// Session and protocol headers of the current session.
    fn session_headers(&self) -> (HeaderMap, Option<String>) {
        let s = lock(&self.session);
        let mut h = HeaderMap::new();
        if let Some(id) = &s.id
            && let Ok(v) = HeaderValue::from_str(id)
        {
            h.insert(MCP_SESSION_ID, v);
        }
        if let Some(pv) = &s.protocol_version
            && let Ok(v) = HeaderValue::from_str(pv)
        {
            h.insert(MCP_PROTOCOL_VERSION, v);
        }
        (h, s.id.clone())
    }

    async fn post(&self, body: String) -> Result<(Response, Option<String>), reqwest::Error> {
        let (headers, session) = self.session_headers();
        let r = self
            .request(reqwest::Method::POST)
            .headers(headers)
            .header(header::ACCEPT, ACCEPT_BOTH)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await?;
        Ok((r, session))
    }

    async fn get(&self, last_event_id: Option<&str>) -> Result<Response, reqwest::Error> {
        let (headers, _) = self.session_headers();
        let mut r = self
            .request(reqwest::Method::GET)
            .headers(headers)
            .header(header::ACCEPT, EVENT_STREAM);
        if let Some(id) = last_event_id {
            r = r.header(LAST_EVENT_ID, id);
        }
        r.send().await
    }

    async fn deliver(&self, message: Message) {
        self.peer.receive(message).await;
    }

    fn fail(&self, id: RequestId, error: TransportError) {
        self.peer.fail(id, error);
    }

    fn reply_retry(&self, parser: &SseParser) -> Duration {
        parser.retry.unwrap_or(self.config.default_retry)
    }

    /// Start a new session after a 404 to a request that carried `failed` as its session
    /// id: replay `initialize` and `notifications/initialized`, reopen the standalone
    /// stream. Does nothing when another task already did it.
    async fn reinitialize(self: &Arc<Self>, failed: &str) -> Result<(), TransportError> {
        let _guard = self.reinit.lock().await;
        let params = {
            let mut s = lock(&self.session);
            if s.id.as_deref() != Some(failed) {
                return Ok(());
            }
            s.id = None;
            s.initialized = false;
            s.init_params.clone()
        };
        let Some(params) = params else {
            return Err(transport_error(
                TransportErrorKind::Session,
                "the session ended (HTTP 404) before initialize completed",
                Some(404),
            ));
        };
        tracing::info!("the server ended the session (HTTP 404); starting a new one");
        let n = self.next_internal_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("mcp-tasks-reinitialize-{n}"));
        let msg = Message::request(id.clone(), methods::INITIALIZE, Some(params));
        let (resp, _) = self.post(msg.to_json()).await.map_err(|e| {
            transport_error(
                TransportErrorKind::Session,
                format!("re-initialize failed: {e}"),
                None,
            )
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(transport_error(
                TransportErrorKind::Session,
                format!("re-initialize failed: HTTP {status}"),
                Some(status.as_u16()),
            ));
        }
        self.capture_session(&resp);
        let reply = self.read_one_reply(resp, &id).await?;
        match reply {
            Message::Response(r) => self.capture_version(&r.result),
            Message::Error(e) => {
                return Err(transport_error(
                    TransportErrorKind::Session,
                    format!("re-initialize refused: {}", e.error),
                    None,
                ));
            }
            _ => {}
        }
        let note = Message::notification(methods::INITIALIZED, None);
        let (resp, _) = self.post(note.to_json()).await.map_err(|e| {
            transport_error(
                TransportErrorKind::Session,
                format!("re-initialize failed: {e}"),
                None,
            )
        })?;
        if !resp.status().is_success() {
            return Err(transport_error(
                TransportErrorKind::Session,
                format!("notifications/initialized refused: HTTP {}", resp.status()),
                Some(resp.status().as_u16()),
            ));
        }
        lock(&self.session).initialized = true;
        self.reinitializations.fetch_add(1, Ordering::Relaxed);
        self.start_standalone();
        Ok(())
    }

    /// The one reply to `id` in a response, JSON or SSE (messages before it are delivered
    /// to the peer).
    async fn read_one_reply(
        &self,
        resp: Response,
        id: &RequestId,
    ) -> Result<Message, TransportError> {
        if is_event_stream(&resp) {
            let mut parser = SseParser::new(self.config.max_message_bytes);
            let mut found = None;
            let _ = self
                .read_events(resp, &mut parser, |m| {
                    if reply_id(&m) == Some(id) {
                        found = Some(m);
                        return (false, true);
                    }
                    (true, false)
                })
                .await;
            found.ok_or_else(|| {
                transport_error(
                    TransportErrorKind::Stream,
                    "the stream ended without a reply",
                    None,
                )
            })
        } else {
            let body = self.read_body(resp).await?;
            Message::parse(&body).map_err(|f| {
                transport_error(
                    TransportErrorKind::Body,
                    format!("unreadable reply: {}", f.error),
                    None,
                )
            })
        }
    }

    fn capture_session(&self, resp: &Response) {
        if let Some(id) = resp
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            lock(&self.session).id = Some(id.to_owned());
        }
    }

    fn capture_version(&self, result: &Value) {
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            lock(&self.session).protocol_version = Some(v.to_owned());
        }
    }

    async fn read_body(&self, mut resp: Response) -> Result<Vec<u8>, TransportError> {
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) => {
                    if body.len() + c.len() > self.config.max_message_bytes {
                        return Err(TransportError::too_large(
                            None,
                            self.config.max_message_bytes as u64,
                        ));
                    }
                    body.extend_from_slice(&c);
                }
                Ok(None) => return Ok(body),
                Err(e) => {
                    return Err(transport_error(
                        TransportErrorKind::Body,
                        format!("reading the reply failed: {e}"),
                        None,
                    ));
                }
            }
        }
    }

    /// Read SSE events of `resp`, passing each JSON-RPC message to `on`, which returns
    /// (deliver it to the peer, stop reading). Returns whether reading stopped because
    /// `on` asked (else the stream ended or broke).
    async fn read_events(
        &self,
        mut resp: Response,
        parser: &mut SseParser,
        mut on: impl FnMut(Message) -> (bool, bool),
    ) -> bool {
        loop {
            let chunk = tokio::select! {
                c = resp.chunk() => c,
                () = self.stop.cancelled() => return true,
            };
            let chunk = match chunk {
                Ok(Some(c)) => c,
                Ok(None) => {
                    parser.finish();
                    return false;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "SSE connection broke");
                    parser.finish();
                    return false;
                }
            };
            let events = match parser.feed(&chunk) {
                Ok(ev) => ev,
                Err(e) => {
                    tracing::warn!(error = %e, "SSE stream dropped");
                    parser.finish();
                    return false;
                }
            };
            for ev in events {
                if ev.event != "message" {
                    continue;
                }
                match Message::parse(ev.data.as_bytes()) {
                    Ok(m) => {
                        let (deliver, stop) = on(m.clone());
                        if deliver {
                            self.deliver(m).await;
                        }
                        if stop {
                            return true;
                        }
                    }
                    Err(f) => {
                        tracing::warn!(error = %f.error, "unreadable SSE event ignored");
                    }
                }
            }
        }
    }

    /// POST one request and deliver its reply (or a made-up error) to the peer.
    async fn send_request(self: Arc<Self>, req: Request) {
        let id = req.id.clone();
        let is_init = req.method == methods::INITIALIZE;
        if is_init {
            let mut s = lock(&self.session);
            s.init_params = req.params.clone();
        }
        let body = Message::Request(req).to_json();
        let mut retried = false;
        loop {
            let (resp, sent_session) = match self.post(body.clone()).await {
                Ok(r) => r,
                Err(e) => {
                    let err = transport_error(
                        TransportErrorKind::Connect,
                        format!("POST failed: {e}"),
                        None,
                    );
                    self.fail(id, err);
                    return;
                }
            };
            let status = resp.status();
            if status == StatusCode::NOT_FOUND
                && let Some(failed) = sent_session
                && !retried
                && !is_init
            {
                retried = true;
                if let Err(e) = self.reinitialize(&failed).await {
                    self.fail(id, e);
                    return;
                }
                continue;
            }
            if !status.is_success() {
                let err = self.http_failure(resp).await;
                self.fail(id, err);
                return;
            }
            if is_init {
                self.capture_session(&resp);
            }
            if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
                let err = transport_error(
                    TransportErrorKind::Protocol,
                    format!("the server answered a request with HTTP {status} and no reply"),
                    Some(status.as_u16()),
                );
                self.fail(id, err);
                return;
            }
            if is_event_stream(&resp) {
                self.follow_request_stream(id, resp, is_init).await;
            } else {
                match self.read_body(resp).await {
                    Ok(body) => match Message::parse(&body) {
                        Ok(m) => {
                            if is_init && let Message::Response(r) = &m {
                                self.capture_version(&r.result);
                            }
                            self.deliver(m).await;
                        }
                        Err(f) => {
                            let err = transport_error(
                                TransportErrorKind::Body,
                                format!("unreadable reply: {}", f.error),
                                None,
                            );
                            self.fail(id, err);
                        }
                    },
                    Err(e) => self.fail(id, e),
                }
            }
            return;
        }
    }

    /// Read a request's SSE stream until its reply; resume with `Last-Event-ID` when the
    /// connection ends first.
    async fn follow_request_stream(
        self: &Arc<Self>,
        id: RequestId,
        first: Response,
        is_init: bool,
    ) {
        let mut parser = SseParser::new(self.config.max_message_bytes);
        let mut resp = first;
        let mut failures = 0u32;
        loop {
            let mut init_result = None;
            let done = self
                .read_events(resp, &mut parser, |m| {
                    let mine = reply_id(&m) == Some(&id);
                    if mine
                        && is_init
                        && let Message::Response(r) = &m
                    {
                        init_result = Some(r.result.clone());
                    }
                    (true, mine)
                })
                .await;
            if let Some(r) = init_result {
                self.capture_version(&r);
            }
            if done {
                return;
            }
            let Some(last) = parser.last_event_id.clone() else {
                let err = transport_error(
                    TransportErrorKind::Stream,
                    "the SSE stream ended before the reply, without an event id to resume from",
                    None,
                );
                self.fail(id, err);
                return;
            };
            // Spec: "If the client wishes to resume after a disconnection (whether due to
            // network failure or server-initiated closure), it SHOULD issue an HTTP GET to
            // the MCP endpoint, and include the Last-Event-ID header".
            loop {
                tokio::select! {
                    () = tokio::time::sleep(self.reply_retry(&parser)) => {}
                    () = self.stop.cancelled() => return,
                }
                match self.get(Some(&last)).await {
                    Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                        self.resumptions.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(last_event_id = %last, "SSE stream resumed");
                        resp = r;
                        failures = 0;
                        break;
                    }
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                        let err = transport_error(
                            TransportErrorKind::Session,
                            "the session ended (HTTP 404) before the reply came",
                            Some(404),
                        );
                        if let Some(s) = self.session_headers().1 {
                            let me = Arc::clone(self);
                            tokio::spawn(async move {
                                let _ = me.reinitialize(&s).await;
                            });
                        }
                        self.fail(id, err);
                        return;
                    }
                    Ok(r) => {
                        failures += 1;
                        tracing::debug!(status = %r.status(), "SSE resumption refused");
                        if failures >= self.config.max_resume_attempts {
                            let err = self.http_failure(r).await;
                            self.fail(id, err);
                            return;
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::debug!(error = %e, "SSE resumption failed");
                        if failures >= self.config.max_resume_attempts {
                            let err = transport_error(
                                TransportErrorKind::Connect,
                                format!("resuming the SSE stream failed: {e}"),
                                None,
                            );
                            self.fail(id, err);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// POST a notification or response; 202 expected.
    async fn send_one_way(self: &Arc<Self>, message: Message) {
        let body = message.to_json();
        let mut retried = false;
        loop {
            match self.post(body.clone()).await {
                Ok((resp, sent)) => {
                    let status = resp.status();
                    if status == StatusCode::NOT_FOUND
                        && let Some(failed) = sent
                        && !retried
                    {
                        retried = true;
                        if self.reinitialize(&failed).await.is_ok() {
                            continue;
                        }
                    }
                    if !status.is_success() {
                        tracing::warn!(status = %status, "the server refused a message");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "POST of a message failed"),
            }
            return;
        }
    }

    /// The error for a non-success HTTP response: its JSON-RPC error if the body holds
    /// one, else the status line.
    async fn http_failure(&self, resp: Response) -> TransportError {
        let status = resp.status();
        let www = resp
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = self.read_body(resp).await.unwrap_or_default();
        let detail = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.get("message")).cloned())
            .and_then(|m| m.as_str().map(str::to_owned))
            .or_else(|| {
                let t = String::from_utf8_lossy(&body).trim().to_owned();
                (!t.is_empty() && t.len() < 300).then_some(t)
            });
        let mut message = format!("HTTP {status}");
        if let Some(d) = detail {
            message.push_str(": ");
            message.push_str(&d);
        }
        if let Some(w) = www {
            message.push_str(&format!(" (WWW-Authenticate: {w})"));
        }
        transport_error(TransportErrorKind::Http, message, Some(status.as_u16()))
    }

    fn start_standalone(self: &Arc<Self>) {
        if !self.config.standalone_stream || self.stop.is_cancelled() {
            return;
        }
        self.standalone_state.send_replace(StandaloneState::Pending);
        let me = Arc::clone(self);
        let h = tokio::spawn(async move { me.standalone().await });
        if let Some(old) = lock(&self.standalone).replace(h) {
            old.abort();
        }
    }

    /// Keep the standalone GET stream open.
    async fn standalone(self: Arc<Self>) {
        let mut parser = SseParser::new(self.config.max_message_bytes);
        let mut failures = 0u32;
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            let last = parser.last_event_id.clone();
            match self.get(last.as_deref()).await {
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the server offers no standalone SSE stream (405)");
                    self.standalone_state
                        .send_replace(StandaloneState::Unavailable);
                    return;
                }
                Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                    if let Some(s) = self.session_headers().1 {
                        let me = Arc::clone(&self);
                        // Runs in its own task: it replaces (aborts) this one.
                        tokio::spawn(async move {
                            if let Err(e) = me.reinitialize(&s).await {
                                tracing::warn!(error = %e, "could not start a new session");
                            }
                        });
                    }
                    self.standalone_state.send_replace(StandaloneState::Failing);
                    return;
                }
                Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                    failures = 0;
                    self.standalone_state.send_replace(StandaloneState::Open);
                    self.read_events(r, &mut parser, |_| (true, false)).await;
                    self.standalone_state
                        .send_replace(StandaloneState::Reconnecting);
                    tokio::select! {
                        () = tokio::time::sleep(self.reply_retry(&parser)) => {}
                        () = self.stop.cancelled() => return,
                    }
                }
                other => {
                    match other {
                        Ok(r) => tracing::debug!(status = %r.status(), "standalone stream refused"),
                        Err(e) => tracing::debug!(error = %e, "standalone stream failed"),
                    }
                    failures = failures.saturating_add(1);
                    self.standalone_state.send_replace(StandaloneState::Failing);
                    let backoff = self
                        .reply_retry(&parser)
                        .saturating_mul(1 << failures.min(5))
                        .min(Duration::from_secs(30));
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = self.stop.cancelled() => return,
                    }
                }
            }
        }
    }
}

fn is_event_stream(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case(EVENT_STREAM))
        })
}

fn reply_id(m: &Message) -> Option<&RequestId> {
    match m {
        Message::Response(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

/// Drain the peer's queue: requests concurrently, notifications and responses in order.
async fn drive(state: Arc<State>, mut outbound: mpsc::Receiver<Outbound>) {
    let closed = state.peer.closed();
    loop {
        let next = tokio::select! {
            m = outbound.recv() => m,
            () = state.stop.cancelled() => None,
            () = closed.cancelled() => None,
        };
        let Some(out) = next else { break };
        match out.message {
            Message::Request(r) if r.method == methods::INITIALIZE => {
                // Everything after initialize needs its session id.
                Arc::clone(&state).send_request(r).await;
            }
            Message::Request(r) => {
                tokio::spawn(Arc::clone(&state).send_request(r));
            }
            m @ Message::Notification(_) => {
                let initialized =
                    matches!(&m, Message::Notification(n) if n.method == methods::INITIALIZED);
                state.send_one_way(m).await;
                if initialized {
                    lock(&state.session).initialized = true;
                    state.start_standalone();
                }
            }
            m => state.send_one_way(m).await,
        }
    }
    state.shutdown();
}
