//! How an incoming request is served: admitted (its id in flight, cancellable), run in a
//! task of its own or in its caller's, and answered: queued for the transport, or returned
//! to the caller as JSON text.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::FutureExt;
use mcp_tasks_proto::{ErrorObject, Message, Request, RequestId, methods};
use tokio_util::sync::CancellationToken;

use super::{Peer, RequestContext, Route, RouteDelivery};

impl Peer {
    pub(super) fn spawn_request(
        &self,
        req: Request,
        delivery: RouteDelivery,
        stream_of: Option<RequestId>,
    ) {
        let Some(token) = self.admit_request(&req.id) else {
            return;
        };
        // Counted before the task starts, so that `idle` cannot see it missing meanwhile.
        let unanswered = Unanswered::count(self);
        let peer = self.clone();
        tokio::spawn(async move {
            peer.serve_admitted(req, token, unanswered, delivery, stream_of)
                .await;
        });
    }

    /// Serve `req`, a request that only reads, in the caller's task instead of a task of
    /// its own, and queue its response as [`Self::receive_with`] would: what a Streamable
    /// HTTP POST does for the most frequent requests (`tasks/get` above all), saving a
    /// spawned task and a wake-up of the POST per request. It stays cancellable
    /// (`notifications/cancelled`); dropped half-way (its POST went away) it has nothing
    /// to undo, which is why only reads come here (the private `is_read`: `tasks/get`,
    /// `tools/list`, `server/discover`, `ping`): anything else is spawned as
    /// [`Self::receive_with`] spawns it. A handler that panics is answered with -32603.
    /// Spec (basic): "-32603 Internal error: Internal JSON-RPC error."
    pub async fn serve_read_here(&self, req: Request, delivery: RouteDelivery) {
        if !is_read(&req.method) || self.inner.handler.is_sequential(&req.method) {
            return self.receive_with(Message::Request(req), delivery).await;
        }
        let Some(token) = self.admit_request(&req.id) else {
            return;
        };
        let unanswered = Unanswered::count(self);
        self.serve_admitted(req, token, unanswered, delivery, None)
            .await;
    }

    /// Whether [`Self::serve_read_text`] serves a request of `method`: one that only reads
    /// and need not be served before the next message is read.
    pub fn reads_in_place(&self, method: &str) -> bool {
        is_read(method) && !self.inner.handler.is_sequential(method)
    }

    /// [`Self::serve_read_here`] for a request whose answer goes back as one JSON object
    /// and nothing else (a Streamable HTTP POST answered as `application/json`; what the
    /// handler sends on the request's route is diverted to the standalone stream): the
    /// answer is returned as JSON text
    /// ([`Handler::handle_request_text`](super::Handler::handle_request_text)) instead of
    /// being queued for the transport to route back to the POST. A `tasks/get` is answered
    /// without a `Value` tree, a queue, a routing task's wake-up or a channel
    /// (docs/performance.md, "The get, trimmed"). `None` when it was cancelled
    /// (`notifications/cancelled`): no answer. Only for [`Self::reads_in_place`] methods:
    /// dropped half-way (its POST went away), such a request has nothing to undo. An id
    /// already in flight is answered -32600, a handler that panics -32603.
    pub async fn serve_read_text(
        &self,
        req: Request,
        delivery: RouteDelivery,
    ) -> Option<Result<String, ErrorObject>> {
        debug_assert!(self.reads_in_place(&req.method));
        let token = match self.try_admit(&req.id) {
            Ok(token) => token,
            Err(e) => return Some(Err(e)),
        };
        let _unanswered = Unanswered::count(self);
        self.answer_text(req, token, delivery).await
    }

    /// Serve `req`, any request but a sequential one, in a task of its own and return its
    /// answer to the caller as JSON text
    /// ([`Handler::handle_request_text`](super::Handler::handle_request_text)) instead of
    /// queueing it for the transport to route back: what a Streamable HTTP POST answered as
    /// `application/json` does for a request that may change something (a task-augmented
    /// `tools/call` above all), saving the outbound queue, a wake-up of the session's
    /// routing task and the serialization of a queued `Value`. The request runs in a task
    /// of its own, as [`Self::receive_with`] runs it: the caller going away (its POST's
    /// connection closed) cancels it as `notifications/cancelled` would, and its handler is
    /// stopped where a cancelled request's is. `None` when it was cancelled: no answer. An
    /// id already in flight is answered -32600, a handler that panics -32603.
    pub async fn serve_text(
        &self,
        req: Request,
        delivery: RouteDelivery,
    ) -> Option<Result<String, ErrorObject>> {
        let token = match self.try_admit(&req.id) {
            Ok(token) => token,
            Err(e) => return Some(Err(e)),
        };
        let unanswered = Unanswered::count(self);
        let mut cancel = CancelOnDrop(Some(token.clone()));
        let peer = self.clone();
        // Boxed in a statement of its own: spawning a future copies it, and this one holds
        // the handler's.
        let request = Box::pin(async move {
            let out = peer.answer_text(req, token, delivery).await;
            drop(unanswered);
            out
        });
        let work = tokio::spawn(request);
        let out = match work.await {
            Ok(out) => out,
            Err(e) if e.is_panic() => Some(Err(panicked(e.into_panic().as_ref()))),
            Err(_) => None,
        };
        cancel.disarm();
        out
    }

    /// Run the handler of admitted request `req` for its answer as JSON text, until it
    /// answers or is cancelled (`None`: cancellation first, as in [`Self::serve_admitted`]);
    /// its id leaves the in-flight map however this ends, dropped half-way included.
    async fn answer_text(
        &self,
        req: Request,
        token: CancellationToken,
        delivery: RouteDelivery,
    ) -> Option<Result<String, ErrorObject>> {
        let _inflight = Inflight(self, req.id.clone());
        let cx = RequestContext {
            peer: self.clone(),
            id: req.id.clone(),
            cancel: token.clone(),
            delivery,
            request_meta: None,
            stream_of: None,
        };
        let handler = Arc::clone(&self.inner.handler);
        let fut = std::panic::AssertUnwindSafe(handler.handle_request_text(cx, req)).catch_unwind();
        tokio::select! {
            biased;
            () = token.cancelled() => None,
            r = fut => Some(r.unwrap_or_else(|panic| Err(panicked(panic.as_ref())))),
        }
    }

    /// Register `id` as in flight (its cancellation token), or answer -32600 when a request
    /// in flight already has it.
    fn admit_request(&self, id: &RequestId) -> Option<CancellationToken> {
        match self.try_admit(id) {
            Ok(token) => Some(token),
            Err(err) => {
                let peer = self.clone();
                let id = id.clone();
                tokio::spawn(async move {
                    let _ = peer
                        .send(Message::reply(id.clone(), Err(err)), Route::Request(id))
                        .await;
                });
                None
            }
        }
    }

    /// Register `id` as in flight (its cancellation token), or the -32600 error when a
    /// request in flight already has it.
    fn try_admit(&self, id: &RequestId) -> Result<CancellationToken, ErrorObject> {
        let mut inflight = self.inner.inflight.lock();
        if inflight.contains_key(id) {
            return Err(ErrorObject::invalid_request(format!(
                "request id {id} is already in use by a request in flight"
            )));
        }
        let token = CancellationToken::new();
        inflight.insert(id.clone(), token.clone());
        Ok(token)
    }

    /// Run the handler of an admitted request until it answers or is cancelled, and queue
    /// its response (none when cancelled).
    async fn serve_admitted(
        &self,
        req: Request,
        token: CancellationToken,
        unanswered: Unanswered,
        delivery: RouteDelivery,
        stream_of: Option<RequestId>,
    ) {
        let id = req.id.clone();
        // Off the in-flight map however it ends: dropped half-way too (a read served in
        // place whose POST went away), else its id would stay taken for good.
        let inflight = Inflight(self, id.clone());
        let cx = RequestContext {
            peer: self.clone(),
            id: id.clone(),
            cancel: token.clone(),
            delivery,
            request_meta: None,
            stream_of,
        };
        let handler = Arc::clone(&self.inner.handler);
        let fut = std::panic::AssertUnwindSafe(handler.handle_request(cx, req)).catch_unwind();
        // Cancellation first: a handler that notices the same cancellation and
        // returns an error must not get that error sent as the response.
        let out = tokio::select! {
            biased;
            () = token.cancelled() => None,
            r = fut => Some(r.unwrap_or_else(|panic| Err(panicked(panic.as_ref())))),
        };
        // The id is free before the response goes: a client may reuse it at once.
        drop(inflight);
        if let Some(out) = out {
            let _ = self
                .send(Message::reply(id.clone(), out), Route::Request(id))
                .await;
        }
        drop(unanswered);
    }
}

/// Whether a request of `method` only reads: dropped half-way, it leaves nothing to undo
/// (see [`Peer::serve_read_here`]).
pub(crate) fn is_read(method: &str) -> bool {
    matches!(
        method,
        methods::TASKS_GET | methods::TOOLS_LIST | methods::SERVER_DISCOVER | methods::PING
    )
}

/// The -32603 answer of a handler that panicked, naming the panic's message.
pub(crate) fn panicked(panic: &(dyn std::any::Any + Send)) -> ErrorObject {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    tracing::error!(panic = %what, "a request's handler panicked");
    ErrorObject::internal("Internal error: the request's handler failed")
}

/// Cancels a request when dropped armed: before it was answered (its POST went away).
pub(crate) struct CancelOnDrop(pub(crate) Option<CancellationToken>);

impl CancelOnDrop {
    /// Answered: dropping no longer cancels.
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// Takes an admitted request off the in-flight map when it ends: answered, cancelled, or
/// dropped half-way with its POST (a read served in place); its id is free again.
struct Inflight<'a>(&'a Peer, RequestId);

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        self.0.inner.inflight.lock().remove(&self.1);
    }
}

/// Counts one incoming request in `unanswered` until its response is queued (or it is
/// dropped unanswered), and wakes [`Peer::idle`] when the count drops to zero.
struct Unanswered(Peer);

impl Unanswered {
    fn count(peer: &Peer) -> Self {
        peer.inner.unanswered.fetch_add(1, Ordering::AcqRel);
        Self(peer.clone())
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if self.0.inner.unanswered.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.inner.idle.notify_waiters();
        }
    }
}
