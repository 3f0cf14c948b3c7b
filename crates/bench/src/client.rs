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
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

use mcp_tasks_proto::{Revision, RevisionChoice};
use mcp_tasks_rpc::sse::SseParser;

/// The protocol revision the bench speaks in the legacy era.
pub const PROTOCOL_VERSION: &str = Revision::V2025_11_25.as_str();

/// The protocol revision the bench speaks in the modern era.
pub use mcp_tasks_proto::modern::PROTOCOL_VERSION as MODERN_PROTOCOL_VERSION;

/// The name of the protocol revision the bench speaks, on the command line and in
/// reports (`--era`, the `era` of the JSON report): `legacy` for 2025-11-25, one MCP
/// session per virtual client (`initialize`, `Mcp-Session-Id`), task-augmented
/// `tools/call`, `tasks/result`, `tasks/list`; `modern` for 2026-07-28 with the tasks
/// extension (SEP-2663): no session; every request carries the protocol version, client
/// info and capabilities (the extension declared) in its `_meta`, and the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers; the server decides which
/// `tools/call` becomes a task; results come inline in `tasks/get`.
pub fn era_name(revision: Revision) -> &'static str {
    if revision.is_stateless() {
        "modern"
    } else {
        "legacy"
    }
}

/// The revision `--era` names: `legacy`, `modern` or a dated revision.
///
/// # Errors
/// Any other word (`auto` too: the bench speaks one revision).
pub fn parse_era(s: &str) -> Result<Revision, String> {
    match s.parse::<RevisionChoice>() {
        Ok(RevisionChoice::Fixed(r)) => Ok(r),
        _ => Err(format!("unknown era `{s}` (legacy or modern)")),
    }
}

/// The `_meta` every modern request of the bench carries, as JSON text.
///
/// Spec (basic, `_meta`): "Client requests carry the following `io.modelcontextprotocol/*`
/// fields in `_meta`; fields marked as required MUST be included on every request"; the
/// tasks extension is declared in the capabilities (SEP-2663: "A server MUST NOT return
/// `CreateTaskResult` to a client that did not include the extension capability on its
/// request").
fn modern_meta() -> String {
    use mcp_tasks_proto::modern::{ClientCapabilities, Implementation, TASKS_EXTENSION};
    let mut caps = serde_json::Map::new();
    caps.insert(
        "extensions".into(),
        serde_json::json!({ TASKS_EXTENSION: {} }),
    );
    mcp_tasks_proto::modern::request_meta_value(
        &Implementation::new("mcp-tasks-bench", env!("CARGO_PKG_VERSION")),
        &ClientCapabilities(caps),
    )
    .to_string()
}

/// Whether `value` can be sent as a plain header value (the transport's "Value
/// Encoding": printable ASCII, no leading or trailing whitespace, not the Base64
/// sentinel form). The bench sends only such values: tool names and server-made task ids.
pub(crate) fn header_safe(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !value.starts_with("=?base64?")
}

/// `params` (a JSON object) with the modern `_meta` first, as JSON text.
fn with_meta(meta: &str, params: &Value) -> String {
    let text = params.to_string();
    match text.strip_prefix('{') {
        Some("}") => format!(r#"{{"_meta":{meta}}}"#),
        Some(rest) => format!(r#"{{"_meta":{meta},{rest}"#),
        None => text,
    }
}

/// The standard headers of one modern request.
struct ModernHeaders<'a> {
    method: &'a str,
    name: Option<&'a str>,
}

/// Why a call did not give a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// A JSON-RPC error response.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// An answer that is not the JSON-RPC response it should be (or a result whose shape
    /// is wrong for the method).
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// An HTTP status other than the one expected.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The connection failed or timed out.
    #[error("transport: {0}")]
    Transport(String),
}

impl CallError {
    /// The class used to count errors: `jsonrpc <code>`, `malformed`, `http <status>`,
    /// `transport`.
    pub fn class(&self) -> String {
        match self {
            Self::Rpc { code, .. } => format!("jsonrpc {code}"),
            Self::Malformed(_) => "malformed".into(),
            Self::Http { status, .. } => format!("http {status}"),
            Self::Transport(_) => "transport".into(),
        }
    }
}

/// Where the server is.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port` to connect to.
    pub addr: String,
    /// The `Host` header.
    pub authority: String,
    /// The request path (`/mcp`).
    pub path: String,
    /// A bearer token, if any.
    pub token: Option<String>,
}

impl Endpoint {
    /// Parse an `http://host:port/path` URL.
    ///
    /// # Errors
    /// Anything but a plain `http` URL with a host.
    pub fn parse(url: &str, token: Option<String>) -> Result<Self, String> {
        let uri: Uri = url.parse().map_err(|e| format!("bad URL `{url}`: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("`{url}`: only http:// URLs are supported"));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("`{url}` has no host"))?
            .as_str()
            .to_owned();
        let addr = if uri.port().is_some() {
            authority.clone()
        } else {
            format!("{authority}:80")
        };
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Self {
            addr,
            authority,
            path,
            token,
        })
    }
}

/// A successful call: its `result`, and when it arrived.
#[derive(Debug)]
pub struct Reply {
    /// The `result` member.
    pub result: Value,
    /// When the response message was read (before the rest of an SSE stream was drained).
    pub arrived: Instant,
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
    /// Times a connection had to be opened again.
    pub reconnects: u64,
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

    fn request(&self, body: Vec<u8>, modern: Option<&ModernHeaders<'_>>) -> Request<Full<Bytes>> {
        let mut b = Request::post(self.endpoint.path.as_str())
            .header(HOST, self.endpoint.authority.as_str())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(m) = modern {
            // Spec (streamable HTTP): "The client MUST include the `MCP-Protocol-Version`
            // header on all requests"; `Mcp-Method` on all requests, `Mcp-Name` where the
            // method has a name.
            b = b
                .header("mcp-protocol-version", MODERN_PROTOCOL_VERSION)
                .header("mcp-method", m.method);
            if let Some(name) = m.name {
                b = b.header("mcp-name", name);
            }
        } else if let Some(sid) = &self.session_id {
            b = b
                .header("mcp-session-id", sid.as_str())
                .header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        if let Some(t) = &self.endpoint.token {
            b = b.header(AUTHORIZATION, format!("Bearer {t}"));
        }
        b.body(Full::new(Bytes::from(body)))
            .expect("a valid request")
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

fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    s.into_owned()
}

fn http_error(status: StatusCode, body: &[u8]) -> CallError {
    CallError::Http {
        status: status.as_u16(),
        body: excerpt(body),
    }
}

/// The `result` of the JSON-RPC response `msg` to request `id`.
///
/// # Errors
/// Its error, or [`CallError::Malformed`] when it is not a response to `id`.
pub fn response_of(id: u64, msg: Value) -> Result<Value, CallError> {
    let Value::Object(mut obj) = msg else {
        return Err(CallError::Malformed("response is not a JSON object".into()));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(CallError::Malformed(
            "response lacks `\"jsonrpc\": \"2.0\"`".into(),
        ));
    }
    if let Some(err) = obj.get("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(CallError::Rpc {
                code,
                message: message.to_owned(),
            }),
            _ => Err(CallError::Malformed(format!("bad error object: {err}"))),
        };
    }
    if obj.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(CallError::Malformed(format!(
            "response id {:?} is not the request's ({id})",
            obj.get("id")
        )));
    }
    match obj.remove("result") {
        Some(r @ Value::Object(_)) => Ok(r),
        Some(other) => Err(CallError::Malformed(format!(
            "`result` is not an object: {other}"
        ))),
        None => Err(CallError::Malformed(
            "response has neither `result` nor `error`".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_parsing() {
        let e = Endpoint::parse("http://127.0.0.1:8080/mcp", None).unwrap();
        assert_eq!(e.addr, "127.0.0.1:8080");
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(e.path, "/mcp");
        let e = Endpoint::parse("http://localhost/x", Some("t".into())).unwrap();
        assert_eq!(e.addr, "localhost:80");
        assert!(Endpoint::parse("https://localhost/mcp", None).is_err());
        assert!(Endpoint::parse("not a url", None).is_err());
    }

    #[test]
    fn modern_params_carry_the_meta_first() {
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        let p: Value = serde_json::from_str(&with_meta(meta, &json!({"taskId": "t-1"}))).unwrap();
        assert_eq!(p["taskId"], "t-1");
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let p: Value = serde_json::from_str(&with_meta(meta, &json!({}))).unwrap();
        assert_eq!(
            p,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        );
        // The whole `_meta` of the bench: version, capabilities with the extension, info.
        let m: Value = serde_json::from_str(&modern_meta()).unwrap();
        assert_eq!(m["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        assert!(
            m["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"]
                .is_object()
        );
        assert_eq!(
            m["io.modelcontextprotocol/clientInfo"]["name"],
            "mcp-tasks-bench"
        );
        assert_eq!(
            mcp_tasks_proto::modern::mcp_name_field("tasks/get"),
            Some("taskId")
        );
        assert_eq!(
            mcp_tasks_proto::modern::mcp_name_field("tools/call"),
            Some("name")
        );
        assert_eq!(
            mcp_tasks_proto::modern::mcp_name_field("server/discover"),
            None
        );
        assert!(header_safe("0b4f2a8c-6d2e-4f7a-9c51-3e2f1a0b9d77"));
        for bad in ["naïve", " x", "a\nb", "=?base64?x?="] {
            assert!(!header_safe(bad), "{bad}");
        }
        assert_eq!(parse_era("modern"), Ok(Revision::V2026_07_28));
        assert_eq!(parse_era("2025-11-25"), Ok(Revision::V2025_11_25));
        assert!(parse_era("x").is_err());
        assert!(parse_era("auto").is_err());
        assert_eq!(era_name(Revision::V2025_11_25), "legacy");
        assert_eq!(era_name(Revision::V2026_07_28), "modern");
    }

    #[test]
    fn responses_are_checked() {
        let ok = json!({"jsonrpc": "2.0", "id": 3, "result": {"x": 1}});
        assert_eq!(response_of(3, ok.clone()).unwrap(), json!({"x": 1}));
        assert!(matches!(response_of(4, ok), Err(CallError::Malformed(_))));
        let err = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}});
        assert_eq!(
            response_of(3, err),
            Err(CallError::Rpc {
                code: -32602,
                message: "bad".into()
            })
        );
        for bad in [
            json!([]),
            json!({"id": 3, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 3}),
            json!({"jsonrpc": "2.0", "id": 3, "result": 5}),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}}),
        ] {
            assert!(
                matches!(response_of(3, bad.clone()), Err(CallError::Malformed(_))),
                "{bad}"
            );
        }
    }
}
