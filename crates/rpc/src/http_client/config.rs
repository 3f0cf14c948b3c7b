//! The transport's configuration.

use std::time::Duration;

use mcp_tasks_proto::Revision;
use reqwest::header::{self, HeaderMap, HeaderValue};
use serde_json::Value;

use super::{LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};

/// Configuration of the HTTP client transport.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct HttpClientConfig {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: String,
    /// Sent as `Authorization: Bearer TOKEN` on every request.
    pub bearer_token: Option<String>,
    /// More headers sent on every request (`(name, value)`), e.g. an API key. The headers
    /// the transport manages itself (`Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Last-Event-ID`, `Accept`, `Content-Type`, `Content-Length`, `Host`) are refused by
    /// [`HttpClientTransport::start`](super::HttpClientTransport::start).
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
    /// PEM bundles of CA certificates trusted for `https://` besides the system's (which
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` replace): e.g. a private CA, or a self-signed
    /// server certificate.
    pub extra_root_certs: Vec<Vec<u8>>,
    /// The revision spoken (default [`Revision::V2025_11_25`]). A stateless one
    /// ([`Revision::is_stateless`], 2026-07-28): no session (nothing is captured from an
    /// `initialize`, no `Mcp-Session-Id`, no standalone stream, no DELETE); every request
    /// carries `MCP-Protocol-Version` (from its `_meta`), `Mcp-Method` and, where the
    /// transport page asks for it, `Mcp-Name` (Base64 sentinel form when the value is not
    /// header-safe); and an error status whose body is the request's JSON-RPC error
    /// delivers that error to the peer (such servers answer `-32020`, `-32021`, `-32022`
    /// with 400 and `-32601` with 404).
    pub revision: Revision,
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
            extra_root_certs: Vec::new(),
            revision: Revision::V2025_11_25,
        }
    }
}

impl HttpClientConfig {
    /// Whether [`HttpClientTransport::start`](super::HttpClientTransport::start) would accept this configuration (the URL and
    /// the headers), without starting anything.
    ///
    /// # Errors
    /// What `start` would refuse.
    pub fn check(&self) -> Result<(), HttpClientError> {
        self.validate().map(|_| ())
    }

    pub(super) fn validate(&self) -> Result<(reqwest::Url, HeaderMap), HttpClientError> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| HttpClientError::InvalidUrl {
            url: mcp_tasks_proto::logged::redact_url(&self.url),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpClientError::InvalidUrl {
                url: mcp_tasks_proto::logged::redact_url(&self.url),
                reason: "the scheme must be http or https".into(),
            });
        }
        if url.scheme() == "https" && !cfg!(feature = "http-client-tls") {
            return Err(HttpClientError::InvalidUrl {
            url: mcp_tasks_proto::logged::redact_url(&self.url),
            reason: "https needs a build with TLS (feature `http-client-tls` of mcp-tasks-rpc, `tls` of mcp-tasks-client)".into(),
        });
        }
        let extra = extra_headers(self)?;
        self.root_certs()?;
        Ok((url, extra))
    }

    /// [`Self::extra_root_certs`], parsed.
    #[cfg(feature = "http-client-tls")]
    pub(super) fn root_certs(&self) -> Result<Vec<reqwest::Certificate>, HttpClientError> {
        let mut all = Vec::new();
        for pem in &self.extra_root_certs {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| HttpClientError::Client(format!("a CA certificate: {e}")))?;
            if certs.is_empty() {
                return Err(HttpClientError::Client(
                    "a CA certificate bundle holds no PEM certificate".into(),
                ));
            }
            all.extend(certs);
        }
        Ok(all)
    }

    #[cfg(not(feature = "http-client-tls"))]
    fn root_certs(&self) -> Result<(), HttpClientError> {
        if self.extra_root_certs.is_empty() {
            Ok(())
        } else {
            Err(HttpClientError::Client(
                "CA certificates need a build with TLS (feature `http-client-tls`)".into(),
            ))
        }
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
const MANAGED_HEADERS: [&str; 9] = [
    MCP_SESSION_ID,
    MCP_PROTOCOL_VERSION,
    super::modern::MCP_METHOD,
    super::modern::MCP_NAME,
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
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    /// The endpoint is not a usable URL.
    #[error("invalid MCP endpoint URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL given, redacted as logs show it (no password, no secret query value).
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
