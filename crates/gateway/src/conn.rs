//! One live connection to the upstream, and the handler of what the upstream sends.
//!
//! Requests the gateway sends upstream go through [`Peer::request_with`]: a request
//! abandoned downstream (a cancelled task, a dropped call) or over `--upstream-timeout`
//! is cancelled upstream with `notifications/cancelled` naming its id.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use async_trait::async_trait;
use mcp_tasks_core::Metrics;
use mcp_tasks_proto::{ErrorObject, Notification, Request, RequestId, Revision};
use mcp_tasks_rpc::{Handler, Peer, PeerError, RequestContext, RequestOptions, Route};
use serde_json::Value;

use mcp_tasks_client::connect::SessionProbe;

use crate::lane::{LaneInner, Limits};
use crate::resume::UpstreamSession;

/// Why a call to the upstream did not produce its answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallError {
    /// The upstream answered with this JSON-RPC error (passed on unchanged).
    Upstream(ErrorObject),
    /// The connection ended (or, over HTTP, the request or its answer was lost) before
    /// the answer came; with the transport's own explanation when it gave one.
    Lost(Option<String>),
    /// The gateway gave up on the call, with the error that says why: the answer was too
    /// large to read (`upstream reply too large: N bytes`), or it did not come within
    /// `--upstream-timeout` (the request was cancelled upstream).
    Failed(ErrorObject),
}

impl CallError {
    /// The error of call `method` that got no result: the one place a [`PeerError`]
    /// becomes a gateway error.
    fn of(method: &str, e: PeerError) -> Self {
        match e {
            PeerError::Remote(e) => Self::Upstream(e),
            // An answer over the bound, which asking again would not mend.
            PeerError::Transport(t) if t.is_too_large() => {
                tracing::warn!(method, error = %t, "upstream reply too large");
                Self::Failed(match (t.bytes, t.limit) {
                    (Some(bytes), _) => reply_too_large(method, bytes),
                    (None, limit) => ErrorObject::new(
                        mcp_tasks_proto::codes::INTERNAL_ERROR,
                        format!(
                            "upstream reply too large: exceeds {} bytes (the answer to `{method}` is over --max-message-bytes)",
                            limit.unwrap_or_default()
                        ),
                    ),
                })
            }
            // The request or its answer was lost.
            PeerError::Transport(t) => {
                tracing::debug!(error = %t, "upstream transport error");
                Self::Lost(Some(t.message))
            }
            PeerError::Timeout(timeout) => {
                tracing::warn!(method, timeout = ?timeout, "upstream call timed out");
                Self::Failed(timed_out(method, timeout))
            }
            _ => Self::Lost(None),
        }
    }
}

/// The error of a call whose answer was `bytes` long, over `--max-message-bytes`.
pub(crate) fn reply_too_large(method: &str, bytes: u64) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "upstream reply too large: {bytes} bytes (the answer to `{method}` is over --max-message-bytes)"
        ),
    )
}

/// The error of a call the upstream did not answer within `timeout`.
pub(crate) fn timed_out(method: &str, timeout: std::time::Duration) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "the upstream did not answer `{method}` within {timeout:?} (--upstream-timeout); the request was cancelled upstream"
        ),
    )
}

pub(crate) struct ConnShared {
    pub(crate) lane: Weak<LaneInner>,
    /// `--upstream-timeout`.
    timeout: Option<std::time::Duration>,
    /// Where the latency of each upstream call is observed.
    metrics: Option<Metrics>,
}

impl ConnShared {
    pub(crate) fn new(lane: Weak<LaneInner>, limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            lane,
            timeout: limits.call_timeout,
            metrics: limits.metrics().cloned(),
        })
    }
}

/// One connection: its peer, what its `initialize` answered, and the resources that keep
/// it alive (dropping the last `Conn` tears the connection down).
pub(crate) struct Conn {
    /// The upstream's JSON-RPC peer.
    pub peer: Peer,
    shared: Arc<ConnShared>,
    init: OnceLock<Value>,
    /// The `_meta` stamped on every request of an upstream of a stateless revision
    /// (2026-07-28, [`crate::modern_upstream`]); unset for a 2025-11-25 one.
    request_meta: OnceLock<Value>,
    /// Which connection of the lane this is (1, 2, ... across restarts).
    pub generation: u64,
    session: Option<SessionProbe>,
    _guard: Box<dyn Send + Sync>,
}

mcp_tasks_proto::debug_non_exhaustive!(Conn, |s| { generation: s.generation });

impl Conn {
    pub(crate) fn new(
        peer: Peer,
        shared: Arc<ConnShared>,
        generation: u64,
        guard: Box<dyn Send + Sync>,
        session: Option<SessionProbe>,
    ) -> Self {
        Self {
            peer,
            shared,
            init: OnceLock::new(),
            request_meta: OnceLock::new(),
            generation,
            session,
            _guard: guard,
        }
    }

    /// The upstream session this connection speaks in now, if it has one a later
    /// connection can take up.
    pub(crate) fn upstream_session(&self) -> Option<UpstreamSession> {
        let (id, protocol_version) = (self.session.as_ref()?)();
        Some(UpstreamSession {
            session_id: id?,
            protocol_version,
            init_result: self.init_result().clone(),
        })
    }

    /// The upstream's `initialize` result.
    pub(crate) fn init_result(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.init.get().unwrap_or(&NULL)
    }

    pub(crate) fn set_init_result(&self, v: Value) {
        let _ = self.init.set(v);
    }

    /// Speak 2026-07-28 on this connection: `meta` goes into the `_meta` of every request.
    pub(crate) fn speak_stateless(&self, meta: Value) {
        let _ = self.request_meta.set(meta);
    }

    /// The revision this connection speaks.
    pub(crate) fn revision(&self) -> Revision {
        if self.request_meta.get().is_some() {
            Revision::V2026_07_28
        } else {
            Revision::V2025_11_25
        }
    }

    /// Whether the upstream declared `tasks.requests.tools.call`.
    pub(crate) fn runs_tool_tasks(&self) -> bool {
        self.init_result()
            .pointer("/capabilities/tasks/requests/tools/call")
            .is_some_and(|v| !v.is_null())
    }

    /// Send a request upstream and wait for its answer (at most `--upstream-timeout`).
    /// Dropping the future before the answer, or the timeout, cancels the request upstream
    /// (`notifications/cancelled`).
    ///
    /// # Errors
    /// The upstream's error, [`CallError::Lost`] if the connection ends first,
    /// [`CallError::Failed`] on a timeout or an answer too large to read.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, CallError> {
        self.send(method, params, self.shared.timeout).await
    }

    /// [`Self::call`] on behalf of the call `waiter`: what the upstream sends on this
    /// request's response stream (Streamable HTTP) is that call's.
    pub(crate) async fn call_for(
        &self,
        method: &str,
        params: Option<Value>,
        waiter: &Arc<crate::lane::Waiter>,
    ) -> Result<Value, CallError> {
        let post = waiter.post();
        self.send_with(method, params, self.shared.timeout, Some(post.sink()))
            .await
    }

    /// [`Self::call`] without `--upstream-timeout` (`initialize` has its own bound).
    pub(crate) async fn call_unbounded(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, CallError> {
        self.send(method, params, None).await
    }

    async fn send(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Value, CallError> {
        self.send_with(method, params, timeout, None).await
    }

    async fn send_with(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<std::time::Duration>,
        id_sink: Option<Arc<OnceLock<mcp_tasks_proto::RequestId>>>,
    ) -> Result<Value, CallError> {
        let mut options = RequestOptions::new(Route::Standalone)
            .timeout(timeout)
            .cancel_reason("The request was cancelled by the client of the gateway");
        if let Some(sink) = id_sink {
            options = options.record_id(sink);
        }
        let params = match self.request_meta.get() {
            Some(meta) => Some(crate::modern_upstream::stamp(meta, params)),
            None => params,
        };
        let started = Instant::now();
        let mut answer = self.peer.request_with(method, params, options).await;
        // `server/discover` keeps its `_meta` serverInfo: it is the upstream's identity,
        // which the lane's `initialize`-like result carries on (`init_of_discover`).
        if self.revision().is_stateless()
            && method != mcp_tasks_proto::modern::methods::SERVER_DISCOVER
            && let Ok(v) = &mut answer
        {
            crate::modern_upstream::strip_complete(v);
        }
        // A call abandoned downstream (the future dropped) is not observed.
        if let Some(m) = &self.shared.metrics {
            m.upstream_call(method, started.elapsed(), answer.is_ok());
        }
        answer.map_err(|e| CallError::of(method, e))
    }

    /// Send a notification upstream (best effort).
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params, Route::Standalone).await;
    }
}

/// Serves what the upstream sends: requests and notifications go to the lane, answers to
/// the gateway's own requests to their callers.
pub(crate) struct UpstreamHandler(pub(crate) Arc<ConnShared>);

#[async_trait]
impl Handler for UpstreamHandler {
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        match self.0.lane.upgrade() {
            Some(lane) => {
                lane.on_upstream_request(req.method, req.params, cx.stream_of)
                    .await
            }
            None => Err(crate::lane::ended()),
        }
    }

    async fn handle_notification(&self, _peer: &Peer, n: Notification) {
        if let Some(lane) = self.0.lane.upgrade() {
            lane.on_upstream_notification(n.method, n.params).await;
        }
    }

    fn handle_unmatched_response(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let _ = outcome;
        tracing::debug!(id = %id, "late or unknown response from the upstream ignored");
    }
}
