//! One live connection to the upstream, and the handler of what the upstream sends.
//!
//! Requests the gateway sends upstream carry ids of its own (`gw-N`, strings, so they
//! never meet the [`Peer`]'s numeric ids): the gateway must know the id of every request
//! it sends, because a request abandoned downstream (a cancelled task, a dropped call)
//! is cancelled upstream with `notifications/cancelled` naming that id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, Message, RequestId, methods};
use mcp_tasks_rpc::{Handler, Peer, RequestContext, Route};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::connect::{SessionProbe, UpstreamSession};
use crate::error::unavailable;
use crate::lane::LaneInner;

type Answer = oneshot::Sender<Result<Value, ErrorObject>>;

/// Why a call to the upstream did not produce its answer.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
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

/// The error of a call whose answer was `bytes` long, over `--max-message-bytes`.
pub fn reply_too_large(method: &str, bytes: u64) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "upstream reply too large: {bytes} bytes (the answer to `{method}` is over --max-message-bytes)"
        ),
    )
}

/// The error of a call the upstream did not answer within `timeout`.
pub fn timed_out(method: &str, timeout: std::time::Duration) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "the upstream did not answer `{method}` within {timeout:?} (--upstream-timeout); the request was cancelled upstream"
        ),
    )
}

pub(crate) struct ConnShared {
    pending: Mutex<HashMap<RequestId, Answer>>,
    next: AtomicU64,
    pub(crate) lane: Weak<LaneInner>,
    /// `--upstream-timeout`.
    timeout: Option<std::time::Duration>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ConnShared {
    pub(crate) fn new(lane: Weak<LaneInner>, timeout: Option<std::time::Duration>) -> Arc<Self> {
        Arc::new(Self {
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            lane,
            timeout,
        })
    }
}

/// One connection: its peer, what its `initialize` answered, and the resources that keep
/// it alive (dropping the last `Conn` tears the connection down).
pub struct Conn {
    /// The upstream's JSON-RPC peer.
    pub peer: Peer,
    shared: Arc<ConnShared>,
    init: OnceLock<Value>,
    /// Which connection of the lane this is (1, 2, ... across restarts).
    pub generation: u64,
    session: Option<SessionProbe>,
    _guard: Box<dyn Send + Sync>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// Removes a pending call, and cancels it upstream, when its caller goes away first.
struct CallGuard {
    peer: Peer,
    shared: Arc<ConnShared>,
    id: Option<RequestId>,
}

impl CallGuard {
    fn disarm(&mut self) {
        if let Some(id) = self.id.take() {
            lock(&self.shared.pending).remove(&id);
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        lock(&self.shared.pending).remove(&id);
        if self.peer.is_closed() {
            return;
        }
        // The caller was dropped (a cancelled task or request): tell the upstream.
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            tracing::debug!(id = %id, "cancelling an abandoned upstream request");
            rt.spawn(async move {
                peer.notify(
                    methods::CANCELLED,
                    Some(json!({
                        "requestId": id.to_value(),
                        "reason": "The request was cancelled by the client of the gateway",
                    })),
                    Route::Standalone,
                )
                .await;
            });
        }
    }
}

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
            generation,
            session,
            _guard: guard,
        }
    }

    /// The upstream session this connection speaks in now, if it has one a later
    /// connection can take up.
    pub fn upstream_session(&self) -> Option<UpstreamSession> {
        let (id, protocol_version) = (self.session.as_ref()?)();
        Some(UpstreamSession {
            session_id: id?,
            protocol_version,
            init_result: self.init_result().clone(),
        })
    }

    /// The upstream's `initialize` result.
    pub fn init_result(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.init.get().unwrap_or(&NULL)
    }

    pub(crate) fn set_init_result(&self, v: Value) {
        let _ = self.init.set(v);
    }

    /// Whether the upstream declared `tasks.requests.tools.call`.
    pub fn runs_tool_tasks(&self) -> bool {
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
    pub async fn call(&self, method: &str, params: Option<Value>) -> Result<Value, CallError> {
        let Some(timeout) = self.shared.timeout else {
            return self.call_unbounded(method, params).await;
        };
        // On the timeout the call future is dropped: its guard cancels it upstream.
        match tokio::time::timeout(timeout, self.call_unbounded(method, params)).await {
            Ok(out) => out,
            Err(_) => {
                tracing::warn!(method, timeout = ?timeout, "upstream call timed out");
                Err(CallError::Failed(timed_out(method, timeout)))
            }
        }
    }

    /// [`Self::call`] without `--upstream-timeout` (`initialize` has its own bound).
    pub(crate) async fn call_unbounded(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, CallError> {
        let n = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("gw-{n}"));
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id.clone(), tx);
        let mut guard = CallGuard {
            peer: self.peer.clone(),
            shared: Arc::clone(&self.shared),
            id: Some(id.clone()),
        };
        if self
            .peer
            .send(Message::request(id, method, params), Route::Standalone)
            .await
            .is_err()
        {
            guard.disarm();
            return Err(CallError::Lost(None));
        }
        let closed = self.peer.closed();
        let out = tokio::select! {
            r = rx => r.ok(),
            () = closed.cancelled() => None,
        };
        guard.disarm();
        match out {
            Some(Ok(v)) => Ok(v),
            // Made up by the HTTP transport: an answer over the bound, which asking again
            // would not mend.
            Some(Err(e))
                if mcp_tasks_rpc::http_client::is_transport_error(&e)
                    && e.message.starts_with("the reply exceeds ") =>
            {
                tracing::warn!(method, error = %e, "upstream reply too large");
                Err(CallError::Failed(ErrorObject::new(
                    mcp_tasks_proto::codes::INTERNAL_ERROR,
                    format!(
                        "upstream reply too large: {} (the answer to `{method}` is over --max-message-bytes)",
                        e.message.trim_start_matches("the reply ")
                    ),
                )))
            }
            // Made up by the HTTP transport: the request or its answer was lost.
            Some(Err(e)) if mcp_tasks_rpc::http_client::is_transport_error(&e) => {
                tracing::debug!(error = %e, "upstream transport error");
                Err(CallError::Lost(Some(e.message)))
            }
            Some(Err(e)) => match mcp_tasks_rpc::line::too_large_bytes(&e) {
                Some(bytes) => {
                    tracing::warn!(method, bytes, "upstream reply too large");
                    Err(CallError::Failed(reply_too_large(method, bytes)))
                }
                None => Err(CallError::Upstream(e)),
            },
            None => Err(CallError::Lost(None)),
        }
    }

    /// Send a notification upstream (best effort).
    pub async fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params, Route::Standalone).await;
    }
}

/// Serves what the upstream sends: requests and notifications go to the lane, answers to
/// the gateway's own requests to their callers.
pub(crate) struct UpstreamHandler(pub(crate) Arc<ConnShared>);

#[async_trait]
impl Handler for UpstreamHandler {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        match self.0.lane.upgrade() {
            Some(lane) => lane.on_upstream_request(method, params).await,
            None => Err(unavailable("the gateway session has ended")),
        }
    }

    async fn handle_notification(&self, _peer: &Peer, method: String, params: Option<Value>) {
        if let Some(lane) = self.0.lane.upgrade() {
            lane.on_upstream_notification(method, params).await;
        }
    }

    fn handle_unmatched_response(
        &self,
        _peer: &Peer,
        id: RequestId,
        outcome: Result<Value, ErrorObject>,
    ) {
        let tx = lock(&self.0.pending).remove(&id);
        match tx {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => tracing::debug!(id = %id, "late or unknown response from the upstream ignored"),
        }
    }
}
