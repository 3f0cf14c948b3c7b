//! A lean MCP client over Streamable HTTP: one HTTP/1.1 keep-alive connection and one MCP
//! session per virtual client, JSON or SSE answers.
//!
//! It is deliberately small (hyper's connection-level HTTP/1.1, no pool, no redirects, no
//! TLS) so that the load generator spends as little CPU per request as it can: the figure
//! it measures should be the server's.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue,
};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

use mcp_tasks_proto::Revision;
use mcp_tasks_rpc::sse::SseParser;

pub use crate::message::{
    CallError, Endpoint, MODERN_PROTOCOL_VERSION, PROTOCOL_VERSION, Reply, era_name, parse_era,
    response_of,
};
use crate::message::{excerpt, header_safe, http_error, modern_meta, with_meta};

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The standard headers of one modern request.
struct ModernHeaders<'a> {
    method: &'a str,
    name: Option<&'a str>,
}

/// One MCP session on one connection.
pub struct McpClient {
    endpoint: Endpoint,
    revision: Revision,
    /// Modern: the `_meta` of every request, as JSON text.
    meta: std::sync::Arc<str>,
    sender: Option<http1::SendRequest<Full<Bytes>>>,
    session_id: Option<String>,
    next_id: u64,
    timeout: Duration,
    /// The headers every request carries and the path, built once for the session id they
    /// name rather than parsed per request (see [`McpClient::base`]).
    base: Option<Base>,
    /// Times a connection had to be opened again.
    pub reconnects: u64,
}

/// What every request of a client carries, for one session id.
struct Base {
    session_id: Option<String>,
    uri: Uri,
    headers: HeaderMap,
}

mcp_tasks_proto::debug_non_exhaustive!(McpClient, |s| {
    endpoint: s.endpoint,
    revision: s.revision,
    session_id: s.session_id,
});

/// The largest SSE event read (a bound against a server that never ends one).
const MAX_SSE_EVENT: usize = 16 * 1024 * 1024;

/// How long to wait for the rest of an SSE stream after its response arrived before
/// giving the connection up.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

impl McpClient {
    /// A client of 2025-11-25 that has not connected yet.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Self {
        Self::with_revision(endpoint, Revision::V2025_11_25, timeout)
    }

    /// A client of `revision` that has not connected yet.
    pub fn with_revision(endpoint: Endpoint, revision: Revision, timeout: Duration) -> Self {
        let meta = if revision.is_stateless() {
            modern_meta()
        } else {
            String::new()
        };
        Self {
            endpoint,
            revision,
            meta: meta.into(),
            sender: None,
            session_id: None,
            next_id: 0,
            timeout,
            base: None,
            reconnects: 0,
        }
    }

    /// Another connection in the same MCP session (for parallel requests in one session);
    /// its request ids start at `k * 10^12` so that they never collide with this one's.
    pub fn fork(&self, k: u64) -> Self {
        Self {
            endpoint: self.endpoint.clone(),
            revision: self.revision,
            meta: std::sync::Arc::clone(&self.meta),
            sender: None,
            session_id: self.session_id.clone(),
            next_id: k.saturating_mul(1_000_000_000_000),
            timeout: self.timeout,
            base: None,
            reconnects: 0,
        }
    }

    /// Another connection in the same MCP session to another endpoint (a replica that
    /// shares sessions with this one's): ids as with [`Self::fork`].
    pub fn fork_to(&self, endpoint: Endpoint, k: u64) -> Self {
        let mut fork = self.fork(k);
        fork.endpoint = endpoint;
        fork
    }

    /// The session id the server gave, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    async fn connect(&mut self) -> Result<(), CallError> {
        let stream = TcpStream::connect(&self.endpoint.addr)
            .await
            .map_err(|e| CallError::Transport(format!("connect {}: {e}", self.endpoint.addr)))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| CallError::Transport(format!("handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        self.sender = Some(sender);
        Ok(())
    }

    /// The revision this client speaks.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The path and the headers of every request of this session, built again when the
    /// session id changed.
    fn base(&mut self) -> &Base {
        let stale = self
            .base
            .as_ref()
            .is_none_or(|b| b.session_id != self.session_id);
        if stale {
            let value = |v: &str| HeaderValue::from_str(v).expect("a valid header value");
            let mut headers = HeaderMap::new();
            headers.insert(HOST, value(&self.endpoint.authority));
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            );
            if let (false, Some(sid)) = (self.revision.is_stateless(), &self.session_id) {
                headers.insert(MCP_SESSION_ID, value(sid));
                headers.insert(
                    MCP_PROTOCOL_VERSION,
                    HeaderValue::from_static(PROTOCOL_VERSION),
                );
            }
            if let Some(t) = &self.endpoint.token {
                let mut auth = value(&format!("Bearer {t}"));
                auth.set_sensitive(true);
                headers.insert(AUTHORIZATION, auth);
            }
            self.base = Some(Base {
                session_id: self.session_id.clone(),
                uri: self.endpoint.path.parse().expect("a valid path"),
                headers,
            });
        }
        self.base.as_ref().expect("built above")
    }

    fn request(
        &mut self,
        body: Vec<u8>,
        modern: Option<&ModernHeaders<'_>>,
    ) -> Request<Full<Bytes>> {
        let base = self.base();
        let mut req = Request::new(Full::new(Bytes::from(body)));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = base.uri.clone();
        *req.headers_mut() = base.headers.clone();
        if let Some(m) = modern {
            // Spec (streamable HTTP): "The client MUST include the `MCP-Protocol-Version`
            // header on all requests"; `Mcp-Method` on all requests, `Mcp-Name` where the
            // method has a name.
            let h = req.headers_mut();
            h.insert(
                MCP_PROTOCOL_VERSION,
                HeaderValue::from_static(MODERN_PROTOCOL_VERSION),
            );
            h.insert(
                MCP_METHOD,
                HeaderValue::from_str(m.method).expect("a valid method name"),
            );
            if let Some(name) = m.name {
                h.insert(
                    MCP_NAME,
                    HeaderValue::from_str(name).expect("a header-safe name"),
                );
            }
        }
        req
    }

    async fn send(
        &mut self,
        body: Vec<u8>,
        modern: Option<&ModernHeaders<'_>>,
    ) -> Result<Response<Incoming>, CallError> {
        let usable = match &mut self.sender {
            Some(s) => s.ready().await.is_ok(),
            None => false,
        };
        if !usable {
            if self.sender.is_some() {
                self.reconnects += 1;
            }
            self.sender = None;
            self.connect().await?;
        }
        let req = self.request(body, modern);
        let sender = self.sender.as_mut().expect("connected above");
        match sender.send_request(req).await {
            Ok(r) => Ok(r),
            Err(e) => {
                self.sender = None;
                Err(CallError::Transport(format!("request: {e}")))
            }
        }
    }

    /// Send a request and wait for its response.
    ///
    /// # Errors
    /// A JSON-RPC error response, a malformed answer, an unexpected HTTP status, or a
    /// transport failure (after which the next call connects again).
    pub async fn call(&mut self, method: &str, params: &Value) -> Result<Reply, CallError> {
        self.next_id += 1;
        let id = self.next_id;
        let (body, modern) = if self.revision.is_stateless() {
            {
                let name = mcp_tasks_proto::modern::mcp_name_field(method)
                    .and_then(|f| params.get(f))
                    .and_then(Value::as_str);
                if let Some(name) = name
                    && !header_safe(name)
                {
                    return Err(CallError::Malformed(format!(
                        "`{name}` cannot be sent as a plain Mcp-Name header value (the bench sends no Base64-encoded names)"
                    )));
                }
                let params = with_meta(&self.meta, params);
                (
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
                    ),
                    Some(ModernHeaders { method, name }),
                )
            }
        } else {
            (
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#),
                None,
            )
        };
        let timeout = self.timeout;
        let exchange = self.exchange(id, body.into_bytes(), modern.as_ref());
        match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r,
            Err(_) => {
                // The connection is in an unknown state: start afresh.
                self.sender = None;
                Err(CallError::Transport(format!(
                    "{method}: no answer within {:?}",
                    self.timeout
                )))
            }
        }
    }

    async fn exchange(
        &mut self,
        id: u64,
        body: Vec<u8>,
        modern: Option<&ModernHeaders<'_>>,
    ) -> Result<Reply, CallError> {
        let resp = self.send(body, modern).await?;
        let status = resp.status();
        let ctype = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if let Some(sid) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            && self.session_id.is_none()
        {
            self.session_id = Some(sid.to_owned());
        }
        if status != StatusCode::OK {
            let bytes = self.collect(resp.into_body()).await?;
            // A modern error comes with a 4xx and its JSON-RPC error as the body.
            if modern.is_some()
                && let Ok(msg) = serde_json::from_slice::<Value>(&bytes)
                && let Err(e @ CallError::Rpc { .. }) = response_of(id, msg)
            {
                return Err(e);
            }
            return Err(http_error(status, &bytes));
        }
        if ctype.starts_with("text/event-stream") {
            self.read_sse(id, resp.into_body()).await
        } else if ctype.starts_with("application/json") {
            let bytes = self.collect(resp.into_body()).await?;
            let arrived = Instant::now();
            let msg: Value = serde_json::from_slice(&bytes)
                .map_err(|e| CallError::Malformed(format!("response is not JSON: {e}")))?;
            response_of(id, msg).map(|result| Reply { result, arrived })
        } else {
            let _ = self.collect(resp.into_body()).await;
            Err(CallError::Malformed(format!(
                "unexpected content type `{ctype}`"
            )))
        }
    }

    async fn collect(&mut self, body: Incoming) -> Result<Bytes, CallError> {
        match body.collect().await {
            Ok(c) => Ok(c.to_bytes()),
            Err(e) => {
                self.sender = None;
                Err(CallError::Transport(format!("body: {e}")))
            }
        }
    }

    async fn read_sse(&mut self, id: u64, mut body: Incoming) -> Result<Reply, CallError> {
        let mut parser = SseParser::new(MAX_SSE_EVENT);
        let mut answer: Option<(Result<Value, CallError>, Instant)> = None;
        let mut drain_until: Option<Instant> = None;
        loop {
            let frame = match drain_until {
                None => body.frame().await,
                Some(limit) => match tokio::time::timeout_at(limit.into(), body.frame()).await {
                    Ok(f) => f,
                    Err(_) => {
                        // The server keeps the stream open after the response: give the
                        // connection up rather than wait.
                        self.sender = None;
                        break;
                    }
                },
            };
            match frame {
                None => break,
                Some(Err(e)) => {
                    self.sender = None;
                    if answer.is_none() {
                        return Err(CallError::Transport(format!("SSE stream: {e}")));
                    }
                    break;
                }
                Some(Ok(f)) => {
                    let Ok(data) = f.into_data() else { continue };
                    let events = match parser.feed(&data) {
                        Ok(events) => events,
                        Err(e) => {
                            self.sender = None;
                            if answer.is_none() {
                                return Err(CallError::Transport(format!("SSE stream: {e}")));
                            }
                            break;
                        }
                    };
                    for ev in events {
                        let Ok(msg) = serde_json::from_str::<Value>(&ev.data) else {
                            if answer.is_none() {
                                answer = Some((
                                    Err(CallError::Malformed(format!(
                                        "SSE event is not JSON: {}",
                                        excerpt(ev.data.as_bytes())
                                    ))),
                                    Instant::now(),
                                ));
                            }
                            continue;
                        };
                        let is_ours = msg.get("id").and_then(Value::as_u64) == Some(id)
                            && msg.get("method").is_none();
                        if is_ours && answer.is_none() {
                            answer = Some((response_of(id, msg), Instant::now()));
                            drain_until = Some(Instant::now() + DRAIN_LIMIT);
                        }
                        // Notifications and server requests are not what the bench waits for.
                    }
                }
            }
        }
        match answer {
            Some((Ok(result), arrived)) => Ok(Reply { result, arrived }),
            Some((Err(e), _)) => Err(e),
            None => Err(CallError::Malformed(
                "the SSE stream ended without the response".into(),
            )),
        }
    }

    /// Send a notification (expects `202 Accepted`).
    ///
    /// # Errors
    /// An unexpected status or a transport failure.
    pub async fn notify(&mut self, method: &str) -> Result<(), CallError> {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
        let timeout = self.timeout;
        let fut = async {
            let resp = self.send(body.into_bytes(), None).await?;
            let status = resp.status();
            let bytes = self.collect(resp.into_body()).await?;
            if status == StatusCode::ACCEPTED || status == StatusCode::OK {
                Ok(())
            } else {
                Err(http_error(status, &bytes))
            }
        };
        tokio::time::timeout(timeout, fut)
            .await
            .unwrap_or_else(|_| Err(CallError::Transport(format!("{method}: timed out"))))
    }

    /// `initialize` (revision 2025-11-25) and `notifications/initialized`. Returns the
    /// server's `initialize` result.
    ///
    /// # Errors
    /// Any failure, or a server that does not speak 2025-11-25.
    pub async fn initialize(&mut self) -> Result<Value, CallError> {
        self.session_id = None;
        let params = serde_json::json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "mcp-tasks-bench", "version": env!("CARGO_PKG_VERSION") }
        });
        let reply = self.call("initialize", &params).await?;
        let version = reply.result.get("protocolVersion").and_then(Value::as_str);
        if version != Some(PROTOCOL_VERSION) {
            return Err(CallError::Malformed(format!(
                "the server negotiated protocol {version:?}, not {PROTOCOL_VERSION}"
            )));
        }
        self.notify("notifications/initialized").await?;
        Ok(reply.result)
    }

    /// Modern: `server/discover`, checking that the server speaks 2026-07-28 and offers
    /// the tasks extension. Returns the `DiscoverResult`.
    ///
    /// Spec (SEP-2663): "Servers advertise support by including
    /// `io.modelcontextprotocol/tasks` in their `capabilities.extensions`".
    ///
    /// # Errors
    /// Any failure, or a server that does not offer 2026-07-28 with the tasks extension.
    pub async fn discover(&mut self) -> Result<Value, CallError> {
        use mcp_tasks_proto::modern::TASKS_EXTENSION;
        let reply = self.call("server/discover", &serde_json::json!({})).await?;
        let speaks = reply
            .result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|v| {
                v.iter()
                    .any(|x| x.as_str() == Some(MODERN_PROTOCOL_VERSION))
            });
        if !speaks {
            return Err(CallError::Malformed(format!(
                "server/discover does not list {MODERN_PROTOCOL_VERSION} in `supportedVersions`: {}",
                reply.result
            )));
        }
        let tasks = reply
            .result
            .get("capabilities")
            .and_then(|c| c.get("extensions"))
            .and_then(|e| e.get(TASKS_EXTENSION));
        if tasks.is_none() {
            return Err(CallError::Malformed(format!(
                "the server does not offer the tasks extension ({TASKS_EXTENSION}) in `capabilities.extensions`"
            )));
        }
        Ok(reply.result)
    }

    /// Open the client's conversation with the server as its revision does it:
    /// `initialize` (2025-11-25) or `server/discover` (2026-07-28).
    ///
    /// # Errors
    /// As [`Self::initialize`] or [`Self::discover`].
    pub async fn open(&mut self) -> Result<Value, CallError> {
        if self.revision.has_initialize() {
            self.initialize().await
        } else {
            self.discover().await
        }
    }
}
