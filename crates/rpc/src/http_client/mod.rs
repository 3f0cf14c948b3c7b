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
//! With a stateless [`HttpClientConfig::revision`] (2026-07-28) it speaks that revision
//! instead: no session, and each request's own `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers.
//!
//! A request the transport could not get answered fails with a
//! [`crate::PeerError::Transport`] ([`Peer::fail`]), so that the requester can tell a
//! broken connection from the server's own error and retry idempotent requests. Like the
//! rest of this crate it knows nothing about tasks.

mod config;
mod modern;
mod state;
mod streams;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::error::{TransportError, TransportErrorKind};
use crate::peer::{Outbound, Peer};
pub use config::{HttpClientConfig, HttpClientError, ResumeSession};

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
    /// 2026-07-28: the requests whose POST is in flight, by id; firing one's token drops
    /// its POST (the cancellation of that request, see `streams::drive`).
    in_flight: Mutex<std::collections::HashMap<mcp_tasks_proto::RequestId, CancellationToken>>,
    /// 2026-07-28: the `x-mcp-header` parameters of each tool, by name
    /// ([`HttpClientTransport::set_param_headers`]), mirrored into `Mcp-Param-{Name}`
    /// headers of its `tools/call`.
    param_headers: Mutex<ParamHeaderTable>,
}

/// Most tools whose `x-mcp-header` parameters a transport learns from the `tools/list`
/// results it reads (a server cannot grow a client's memory past it).
pub const MAX_PARAM_HEADER_TOOLS: usize = 4096;

/// The `x-mcp-header` parameters of each tool, by tool name.
pub type ParamHeaderTable =
    std::collections::HashMap<String, Vec<mcp_tasks_proto::modern::param_headers::ParamHeader>>;

/// A running Streamable HTTP client transport. Dropping it stops it (and, best effort,
/// ends the session with DELETE); [`Self::close`] does so and waits.
pub struct HttpClientTransport {
    state: Arc<State>,
    driver: Option<tokio::task::JoinHandle<()>>,
}

mcp_tasks_proto::debug_non_exhaustive!(HttpClientTransport, |s| {
    url: s.state.url.as_str(),
    session_id: s.session_id(),
});

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
        let builder = reqwest::Client::builder().connect_timeout(config.connect_timeout);
        #[cfg(feature = "http-client-tls")]
        let builder = {
            crate::install_crypto_provider();
            builder.tls_certs_merge(config.root_certs()?)
        };
        let http = builder
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
            in_flight: Mutex::new(std::collections::HashMap::new()),
            param_headers: Mutex::new(ParamHeaderTable::new()),
        });
        if resuming {
            state.start_standalone();
        }
        let driver = tokio::spawn(streams::drive(Arc::clone(&state), outbound));
        Ok(Self {
            state,
            driver: Some(driver),
        })
    }

    /// The current session id, if the server assigned one.
    pub fn session_id(&self) -> Option<String> {
        self.state.session.lock().id.clone()
    }

    /// The protocol version sent in `MCP-Protocol-Version` (from the `initialize` result).
    pub fn protocol_version(&self) -> Option<String> {
        self.state.session.lock().protocol_version.clone()
    }

    /// A way to read the current session id and protocol version later, without keeping
    /// the transport alive (both `None` once it has stopped).
    pub fn session_probe(
        &self,
    ) -> impl Fn() -> (Option<String>, Option<String>) + Send + Sync + 'static {
        let state = Arc::downgrade(&self.state);
        move || {
            state.upgrade().map_or((None, None), |s| {
                let s = s.session.lock();
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

    /// The `x-mcp-header` parameters of the server's tools (the valid ones of its last
    /// `tools/list`), replacing those known: a 2026-07-28 `tools/call` of one of them
    /// carries a `Mcp-Param-{Name}` header for each of its arguments so annotated.
    ///
    /// Spec (streamable HTTP, "Client Behavior"): "Inspect the tool's `inputSchema` for
    /// properties marked with `x-mcp-header` and extract the value at each annotated
    /// property's exact property path ... Encode the values according to the Value
    /// Encoding rules ... Append a `Mcp-Param-{Name}: {Value}` header to the request."
    pub fn set_param_headers(&self, table: ParamHeaderTable) {
        *self.state.param_headers.lock() = table;
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
        let id = self.state.session.lock().id.clone();
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
            self.state.session.lock().id = None;
        }
        self.state.shutdown();
        if let Some(d) = self.driver.take() {
            let _ = d.await;
        }
    }
}

impl Drop for HttpClientTransport {
    fn drop(&mut self) {
        let id = self.state.session.lock().id.take();
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
    /// A `tools/list` result read by this transport (2026-07-28): the tools'
    /// `x-mcp-header` parameters are kept, so that a later `tools/call` of one of them
    /// carries its `Mcp-Param-{Name}` headers whoever lists and calls (a gateway's
    /// upstream connection as well as our `Client`, which also drops the tools with
    /// invalid annotations from what it shows). At most [`MAX_PARAM_HEADER_TOOLS`] tools.
    ///
    /// Spec (streamable HTTP, "Client Behavior"): "Inspect the tool's `inputSchema` for
    /// properties marked with `x-mcp-header`".
    pub(super) fn learn_param_headers(&self, result: &serde_json::Value) {
        let Some(tools) = result.get("tools").and_then(serde_json::Value::as_array) else {
            return;
        };
        let mut table = self.param_headers.lock();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(serde_json::Value::as_str) else {
                continue;
            };
            let schema = tool.get("inputSchema").unwrap_or(&serde_json::Value::Null);
            match mcp_tasks_proto::modern::param_headers::annotations(schema) {
                Ok(annotated) if !annotated.is_empty() => {
                    if table.len() < MAX_PARAM_HEADER_TOOLS || table.contains_key(name) {
                        table.insert(name.to_owned(), annotated);
                    }
                }
                _ => {
                    table.remove(name);
                }
            }
        }
    }
}
