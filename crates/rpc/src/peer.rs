//! The JSON-RPC peer.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use async_trait::async_trait;
use mcp_tasks_proto::modern::RequestMeta;
use mcp_tasks_proto::{ErrorObject, Message, Notification, Request, RequestId, methods};
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::error::{PeerError, TransportError};
use crate::pending::PendingMap;
pub use crate::route::{Outbound, Route, RouteDelivery};

/// Serves what the other side sends.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Serve one request (its id is also `cx.id`). Runs concurrently with other requests;
    /// the future is dropped (and no response sent) when the request is cancelled.
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject>;

    /// [`Self::handle_request`] with the result as JSON text: what a transport that writes
    /// the answer at once calls (a 2026-07-28 request over HTTP, `crate::http`), so that a
    /// handler able to write its result without building a [`Value`] tree first does so.
    /// The text must be one JSON value (it is sent as it is). The default serializes what
    /// [`Self::handle_request`] returns.
    async fn handle_request_text(
        &self,
        cx: RequestContext,
        req: Request,
    ) -> Result<String, ErrorObject> {
        let result = self.handle_request(cx, req).await?;
        serde_json::to_string(&result).map_err(ErrorObject::internal)
    }

    /// Whether a request of `method` must be served before the next incoming message is
    /// read (e.g. `initialize`, whose effect the requests pipelined after it must see).
    /// Such requests cannot be cancelled.
    fn is_sequential(&self, method: &str) -> bool {
        let _ = method;
        false
    }

    /// Serve one notification, in arrival order.
    async fn handle_notification(&self, peer: &Peer, n: Notification) {
        let _ = (peer, n);
    }

    /// A response whose id matches no request this peer sent (the engine sends requests
    /// with ids of its own).
    fn handle_unmatched_response(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let _ = outcome;
        tracing::warn!(id = %id, "response to an unknown request ignored");
    }

    /// Whether a notification (`Some(method)`) or a response (`None`) the other side sent
    /// may be taken in: a transport that takes them one by one (Streamable HTTP, a POST
    /// each) asks first, so that they count toward the sender's request rate like its
    /// requests. `Err` refuses it with that error (-32029: over HTTP, 429). The default
    /// takes everything.
    fn admit_message(&self, method: Option<&str>) -> Result<(), ErrorObject> {
        let _ = method;
        Ok(())
    }

    /// What another process needs to serve this session as this handler does (for a
    /// 2025-11-25 server: the negotiated version, the client's capabilities and the
    /// requester), once initialization settled it; `None` when the session cannot be
    /// served elsewhere. See `http::SessionDirectory`.
    fn shared_state(&self) -> Option<Value> {
        None
    }

    /// Whether task `task_id` runs in this process (so its messages reach a stream of
    /// this process without a relay). `false` (the default) when the handler does not
    /// know: a `tasks/result` stream of a shared session then asks the other replicas to
    /// send the task's messages to it (`http::SessionDirectory`).
    fn runs_task_here(&self, task_id: &str) -> bool {
        let _ = task_id;
        false
    }
}

struct Inner {
    tx: mpsc::Sender<Outbound>,
    handler: Arc<dyn Handler>,
    /// The requests this peer sent, waiting for their answers.
    pending: PendingMap,
    inflight: Mutex<HashMap<RequestId, CancellationToken, crate::FastHash>>,
    /// Incoming requests not yet answered: in flight, or whose response is being queued.
    unanswered: AtomicUsize,
    /// Woken each time `unanswered` drops to zero.
    idle: Notify,
    closed: CancellationToken,
    /// Fires when nothing more can be read (a child of `closed`): no response can come.
    input_ended: CancellationToken,
}

/// One logical JSON-RPC connection. Cheap to clone.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<Inner>,
}

mcp_tasks_proto::debug_non_exhaustive!(Peer, |s| { closed: s.inner.closed.is_cancelled() });

/// Capacity of the outgoing queue; senders wait when the transport falls behind.
pub const OUTBOUND_CAPACITY: usize = 4096;

impl Peer {
    /// A peer serving `handler`; the transport drains the returned receiver.
    pub fn new(handler: Arc<dyn Handler>) -> (Self, mpsc::Receiver<Outbound>) {
        let (tx, rx) = mpsc::channel(OUTBOUND_CAPACITY);
        let closed = CancellationToken::new();
        let input_ended = closed.child_token();
        let inner = Inner {
            input_ended,
            tx,
            handler,
            pending: PendingMap::new(),
            inflight: Mutex::new(HashMap::default()),
            unanswered: AtomicUsize::new(0),
            idle: Notify::new(),
            closed,
        };
        (
            Self {
                inner: Arc::new(inner),
            },
            rx,
        )
    }

    /// The handler this peer serves.
    pub fn handler(&self) -> &Arc<dyn Handler> {
        &self.inner.handler
    }

    /// Fires when the connection is closed.
    pub fn closed(&self) -> CancellationToken {
        self.inner.closed.clone()
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    /// Close: pending outgoing requests fail, in-flight handlers are cancelled.
    pub fn close(&self) {
        self.inner.closed.cancel();
        self.inner.pending.fail_all(&PeerError::Closed);
        for (_, token) in self.inner.inflight.lock().drain() {
            token.cancel();
        }
    }

    /// Nothing more will be read (the transport's input ended), though what is sent is
    /// still delivered: the requests this peer sent fail at once (no response can come), and
    /// so do those it sends from now on. Requests in flight go on.
    pub fn end_input(&self) {
        self.inner.input_ended.cancel();
        self.inner.pending.fail_all(&PeerError::Closed);
    }

    /// Whether nothing more will be read ([`Self::end_input`], or the peer closed): no
    /// answer can come.
    pub fn is_input_ended(&self) -> bool {
        self.inner.input_ended.is_cancelled()
    }

    pub(crate) fn input_ended(&self) -> CancellationToken {
        self.inner.input_ended.clone()
    }

    pub(crate) fn pending(&self) -> &PendingMap {
        &self.inner.pending
    }

    /// Number of requests this peer sent that wait for their answers.
    pub fn outstanding(&self) -> usize {
        self.inner.pending.len()
    }

    /// Number of incoming requests being served.
    /// Whether the incoming request `id` is being served here.
    pub(crate) fn is_inflight(&self, id: &RequestId) -> bool {
        self.inner.inflight.lock().contains_key(id)
    }

    /// The number of incoming requests being served.
    pub fn inflight(&self) -> usize {
        self.inner.inflight.lock().len()
    }

    /// Resolves once every incoming request has been answered (its response queued) or
    /// cancelled; at once when none is in flight. A transport whose input ended waits on
    /// it, bounded, before it closes the peer.
    pub async fn idle(&self) {
        loop {
            let woken = self.inner.idle.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.inner.unanswered.load(Ordering::Acquire) == 0 {
                return;
            }
            woken.await;
        }
    }

    /// Queue a message for the transport.
    ///
    /// # Errors
    /// When the connection is closed.
    pub async fn send(&self, message: Message, route: Route) -> Result<(), ErrorObject> {
        if self.is_closed() {
            return Err(ErrorObject::internal("connection closed"));
        }
        self.inner
            .tx
            .send(Outbound { message, route })
            .await
            .map_err(|_| ErrorObject::internal("connection closed"))
    }

    /// Send a notification (errors only mean the connection is gone).
    pub async fn notify(&self, method: &str, params: Option<Value>, route: Route) {
        let _ = self
            .send(
                Message::Notification(Notification {
                    method: method.to_owned(),
                    params,
                }),
                route,
            )
            .await;
    }

    /// The transport could not get request `id` answered: it fails with
    /// [`PeerError::Transport`]. An id this peer did not send (a request whose id the
    /// sender chose, e.g. one relayed by a task) goes to
    /// [`Handler::handle_unmatched_response`] as a -32603 error.
    pub fn fail(&self, id: RequestId, error: TransportError) {
        if let Some(Err(PeerError::Transport(error))) = self
            .inner
            .pending
            .complete(&id, Err(PeerError::Transport(error)))
        {
            self.inner
                .handler
                .handle_unmatched_response(id, Err(error.to_error_object()));
        }
    }

    /// Deliver one incoming message.
    pub async fn receive(&self, message: Message) {
        self.receive_with(message, RouteDelivery::Shared).await;
    }

    /// Deliver one incoming message; a request's handler learns how what it sends on the
    /// request's route reaches the other side (see [`RequestContext::delivery`]).
    pub async fn receive_with(&self, message: Message, delivery: RouteDelivery) {
        self.receive_on(message, delivery, None).await;
    }

    /// [`Self::receive_with`] for a message that came on the response stream of our own
    /// request `stream_of` (a Streamable HTTP client reading the SSE answer of one of its
    /// POSTs): a request's handler learns it ([`RequestContext::stream_of`]).
    pub async fn receive_on(
        &self,
        message: Message,
        delivery: RouteDelivery,
        stream_of: Option<RequestId>,
    ) {
        match message {
            Message::Request(r) if self.inner.handler.is_sequential(&r.method) => {
                let cx = RequestContext {
                    peer: self.clone(),
                    id: r.id.clone(),
                    cancel: CancellationToken::new(),
                    delivery,
                    request_meta: None,
                    stream_of,
                };
                let handler = Arc::clone(&self.inner.handler);
                let id = r.id.clone();
                let out = handler.handle_request(cx, r).await;
                let _ = self
                    .send(Message::reply(id.clone(), out), Route::Request(id))
                    .await;
            }
            Message::Request(r) => self.spawn_request(r, delivery, stream_of),
            Message::Notification(n) => {
                if n.method == methods::CANCELLED
                    && let Some(id) = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .and_then(request_id_of)
                    && let Some(token) = self.inner.inflight.lock().get(&id)
                {
                    tracing::debug!(id = %id, "request cancelled by the peer");
                    token.cancel();
                }
                let handler = Arc::clone(&self.inner.handler);
                handler.handle_notification(self, n).await;
            }
            Message::Response(r) => self.complete(r.id, Ok(r.result)),
            Message::Error(e) => match e.id {
                Some(id) => self.complete(id, Err(e.error)),
                None => {
                    tracing::warn!(error = %e.error, "the peer reported an error without an id")
                }
            },
        }
    }

    fn complete(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        if let Some(answer) = self
            .inner
            .pending
            .complete(&id, outcome.map_err(PeerError::Remote))
        {
            let outcome = answer.map_err(PeerError::into_error_object);
            self.inner.handler.handle_unmatched_response(id, outcome);
        }
    }
}

fn request_id_of(v: &Value) -> Option<RequestId> {
    match v {
        Value::String(s) => Some(RequestId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

/// The context of one incoming request.
#[derive(Clone, Debug)]
pub struct RequestContext {
    /// The connection.
    pub peer: Peer,
    /// The request's id.
    pub id: RequestId,
    /// Fires when the request is cancelled (or the connection closes).
    pub cancel: CancellationToken,
    /// How what is sent on this request's route reaches the other side.
    pub delivery: RouteDelivery,
    /// The request's checked `_meta` of a stateless revision (the revision in
    /// [`RequestMeta::revision`]), when the transport decided the request's revision and
    /// read that `_meta` already (Streamable HTTP does, once per POST, to answer a
    /// malformed one with 400): the handler need not parse it again. `None`: read it
    /// from the request.
    pub request_meta: Option<Arc<RequestMeta>>,
    /// The id of our own request on whose response stream this request came, when the
    /// transport can tell (a Streamable HTTP client: spec, "The server MAY send JSON-RPC
    /// requests and notifications before sending the JSON-RPC response. These messages
    /// SHOULD relate to the originating client request."); `None` on a shared stream
    /// (stdio, the standalone GET stream).
    pub stream_of: Option<RequestId>,
}

impl RequestContext {
    /// The route of messages tied to this request.
    pub fn route(&self) -> Route {
        Route::Request(self.id.clone())
    }

    /// Send a notification tied to this request.
    pub async fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params, self.route()).await;
    }

    /// Send a request tied to this request and wait for the answer (see
    /// [`Peer::request_with`]); dropping the future cancels it.
    ///
    /// # Errors
    /// See [`PeerError`].
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, PeerError> {
        self.peer.request(method, params, self.route()).await
    }
}

mod serving;

pub(crate) use serving::{CancelOnDrop, is_read, panicked};

#[cfg(test)]
mod tests;
