//! Routing what the upstream sends to the call it belongs to (progress, relayed
//! requests, upstream tasks), and what the downstream sends to the upstream.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::meta::{progress_token_key as token_key, related_task, strip_related_task};
use mcp_tasks_proto::{ErrorObject, RequestId, methods};
use mcp_tasks_rpc::{Peer, Route};
use mcp_tasks_server::ToolContext;
use serde_json::{Value, json};

use super::supervise::TOOLS_LIST_CHANGED;
use super::waiter::Waiter;
use super::{EARLY_NOTIFICATION_BYTES, EARLY_NOTIFICATIONS, EARLY_REQUESTS, LaneInner, json_len};
use mcp_tasks_client::connection::Connection;

use crate::error::unavailable;
use crate::notes::{Note, UpstreamSession};
use crate::upstream_call::{Call, CallError};

/// Removes a call's routes when the call ends (or is dropped).
pub(crate) struct RouteGuard {
    lane: Arc<LaneInner>,
    id: u64,
    linger: bool,
    waiter: Arc<Waiter>,
}

impl RouteGuard {
    /// The call's [`Waiter`].
    pub(crate) fn waiter(&self) -> &Arc<Waiter> {
        &self.waiter
    }

    /// [`Waiter::unless_failed`].
    pub(crate) async fn unless_failed<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, ErrorObject>>,
    ) -> Result<T, ErrorObject> {
        self.waiter.unless_failed(work).await
    }

    /// Keep the call's progress route a moment after it ends: over HTTP the upstream's
    /// last progress notifications travel on another stream than its answer and may
    /// arrive after it.
    pub(crate) fn linger(&mut self) {
        self.linger = true;
    }
}

fn remove_routes(lane: &LaneInner, id: u64) {
    let mut r = lane.routes.lock();
    r.progress.retain(|_, (i, _)| *i != id);
    r.tasks.retain(|_, (i, _)| *i != id);
    r.calls.retain(|(i, _)| *i != id);
    r.waiting.retain(|(i, _, _)| *i != id);
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if self.linger
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            // Only its progress lingers: the call no longer waits for anything.
            self.lane
                .routes
                .lock()
                .waiting
                .retain(|(i, _, _)| *i != self.id);
            let lane = Arc::clone(&self.lane);
            let id = self.id;
            rt.spawn(async move {
                tokio::time::sleep(ROUTE_LINGER).await;
                remove_routes(&lane, id);
            });
            return;
        }
        remove_routes(&self.lane, self.id);
    }
}

/// The error of each call waiting on a lane of 2026-07-28 clients when the upstream
/// sent `method` that could not be attributed to one of the `waiting` calls.
pub(crate) fn unattributed(method: &str, waiting: usize) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "the upstream sent `{method}` naming no task (no related-task `_meta`, not on the response stream of one call) while {waiting} calls waited on the same upstream connection: the gateway cannot tell which one asked, so it refused the request and fails every one of them rather than pass off a result that may rest on a refused question"
        ),
    )
}

/// Ask the requestor of the call `cx` what the upstream asked (elicitation and sampling
/// checked against its capabilities).
async fn ask(cx: &ToolContext, method: &str, params: Value) -> Result<Value, ErrorObject> {
    match method {
        methods::ELICITATION_CREATE => cx.elicit_raw(params).await,
        methods::SAMPLING_CREATE_MESSAGE => cx.sample_raw(params).await,
        _ => cx.request(method, params).await,
    }
}

/// How long a finished call's progress route stays (see [`RouteGuard::linger`]).
const ROUTE_LINGER: Duration = Duration::from_millis(1000);

impl LaneInner {
    /// The downstream session is ready for messages (it sent `notifications/initialized`):
    /// the notifications kept until now are passed on (in order, before any later one).
    pub(crate) fn set_downstream(&self, peer: Option<Peer>) {
        let ready = peer.is_some();
        self.downstream.send_replace(peer);
        if !ready || self.early.lock().queue.is_none() {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        tokio::spawn(async move { me.flush_early().await });
    }

    /// Pass the kept notifications on; the queue goes (`None`) only once it is empty, so
    /// that a notification arriving meanwhile queues behind them.
    pub(super) async fn flush_early(&self) {
        loop {
            let Some(peer) = self.downstream.borrow().clone() else {
                return;
            };
            let batch: Vec<_> = {
                let mut early = self.early.lock();
                let Some(queue) = early.queue.as_mut() else {
                    return;
                };
                if queue.is_empty() {
                    early.queue = None;
                    early.bytes = 0;
                    return;
                }
                let batch = queue.drain(..).collect();
                early.bytes = 0;
                batch
            };
            for (method, params, _) in batch {
                peer.notify(&method, params, Route::Standalone).await;
            }
        }
    }

    /// Keep a notification for the downstream until it is ready; `false` when it is
    /// ready (the caller sends it).
    pub(super) fn keep_early(&self, method: &str, params: &mut Option<Value>) -> bool {
        let mut early = self.early.lock();
        let early = &mut *early;
        let Some(queue) = early.queue.as_mut() else {
            return false;
        };
        let size = method.len() + json_len(params.as_ref());
        queue.push_back((method.to_owned(), params.take(), size));
        early.bytes += size;
        while queue.len() > EARLY_NOTIFICATIONS
            || (early.bytes > EARLY_NOTIFICATION_BYTES && !queue.is_empty())
        {
            let Some((_, _, n)) = queue.pop_front() else {
                break;
            };
            early.bytes -= n;
            if early.dropped == 0 {
                tracing::warn!(upstream = %self.describe(), kept = EARLY_NOTIFICATIONS, bytes = EARLY_NOTIFICATION_BYTES, "the upstream sends notifications before the client is ready; the oldest are dropped");
            }
            early.dropped += 1;
        }
        true
    }

    pub(super) async fn downstream(&self, wait: Duration) -> Option<Peer> {
        let mut rx = self.downstream.subscribe();
        let found = async {
            loop {
                if let Some(p) = rx.borrow_and_update().clone() {
                    return Some(p);
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        };
        tokio::time::timeout(wait, found).await.ok().flatten()
    }

    /// Register a call's routes: its progress token and, for a plain call, the call
    /// itself (so that a request the upstream sends during it reaches its requestor).
    pub(crate) fn register_call(self: &Arc<Self>, cx: &ToolContext, plain: bool) -> RouteGuard {
        let mut r = self.routes.lock();
        r.next += 1;
        let id = r.next;
        if let Some(key) = cx.request_params().and_then(token_key) {
            r.progress.insert(key, (id, Some(cx.clone())));
        }
        if plain {
            r.calls.push((id, cx.clone()));
        }
        let waiter = Arc::new(Waiter::new());
        r.waiting.push((id, cx.clone(), Arc::clone(&waiter)));
        RouteGuard {
            lane: Arc::clone(self),
            id,
            linger: false,
            waiter,
        }
    }

    /// Register the progress token of a forwarded request, so that its progress reaches
    /// the client; progress for no live request is dropped (a cancelled call's tool may
    /// go on reporting).
    pub(super) fn register_forwarded(
        self: &Arc<Self>,
        params: Option<&Value>,
    ) -> Option<RouteGuard> {
        let key = params.and_then(token_key)?;
        let mut r = self.routes.lock();
        r.next += 1;
        let id = r.next;
        r.progress.insert(key, (id, None));
        Some(RouteGuard {
            lane: Arc::clone(self),
            id,
            linger: false,
            waiter: Arc::new(Waiter::new()),
        })
    }

    /// Note durably that our task `task_id` is backed by `upstream_task_id`, created on
    /// `conn` (whose session is noted too), so that a restarted gateway follows it again.
    pub(crate) async fn note_task(&self, task_id: &str, upstream_task_id: &str, conn: &Connection) {
        if let Some(notes) = &self.notes {
            let note = Note {
                upstream_task_id: upstream_task_id.to_owned(),
                upstream: self.connector.identity(),
                init_params: self.init_params.lock().clone(),
                upstream_session: UpstreamSession::of(conn),
            };
            notes.put(task_id, &note).await;
        }
    }

    /// Forget the note of `task_id` (its upstream task has ended or was cancelled).
    pub(crate) async fn forget_task(&self, task_id: &str) {
        if let Some(notes) = &self.notes {
            notes.remove(task_id).await;
        }
    }

    /// [`Self::forget_task`] from where nothing can wait (a drop): on the runtime.
    pub(crate) fn forget_task_later(self: &Arc<Self>, task_id: &str) {
        if self.notes.is_none() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (lane, id) = (Arc::clone(self), task_id.to_owned());
            rt.spawn(async move { lane.forget_task(&id).await });
        }
    }

    /// Tie an upstream task id to the call that created it.
    pub(crate) fn register_task(
        &self,
        guard: &RouteGuard,
        upstream_task_id: &str,
        cx: &ToolContext,
    ) {
        self.routes
            .lock()
            .tasks
            .insert(upstream_task_id.to_owned(), (guard.id, cx.clone()));
    }

    /// The call a message from the upstream belongs to: by its related-task id, else the
    /// only plain call in flight.
    pub(super) fn route_of(&self, params: &Value) -> Option<ToolContext> {
        let r = self.routes.lock();
        if let Some(t) = related_task(params) {
            return r.tasks.get(t).map(|(_, cx)| cx.clone());
        }
        match r.calls.as_slice() {
            [(_, cx)] => Some(cx.clone()),
            _ => None,
        }
    }

    /// The one call waiting on this lane, plain or running as an upstream task, if exactly
    /// one is; else every call waiting (none, or several).
    fn only_waiter(&self) -> Result<ToolContext, Vec<Arc<Waiter>>> {
        match self.routes.lock().waiting.as_slice() {
            [(_, cx, _)] => Ok(cx.clone()),
            other => Err(other.iter().map(|(_, _, w)| Arc::clone(w)).collect()),
        }
    }

    /// The call whose request `id` (upstream) carried, on its response stream, what the
    /// upstream sent.
    fn call_of_stream(&self, id: &RequestId) -> Option<ToolContext> {
        self.routes
            .lock()
            .waiting
            .iter()
            .find(|(_, _, w)| w.sent(id))
            .map(|(_, cx, _)| cx.clone())
    }

    /// A request from the upstream (elicitation, sampling, roots, ping, ...).
    ///
    /// During a call it goes to that call's requestor: as a task, the task moves to
    /// `input_required` and the request travels on `tasks/result` with the downstream
    /// task's related-task `_meta`; the answer comes back here. The call is the one whose
    /// request upstream carried it on its response stream (`stream_of`: Streamable HTTP;
    /// spec, "These messages SHOULD relate to the originating client request"), else the
    /// task its related-task `_meta` names, else the only plain call in flight. Otherwise
    /// it goes to the client of the session as it is.
    ///
    /// A lane of 2026-07-28 clients has no client to send it to: a request still
    /// unattributed (FastMCP 3 sends its task's elicitation without related-task `_meta`)
    /// goes to the one call or task waiting on the lane when there is exactly one.
    /// Otherwise it is refused, and every call waiting on the lane then fails with a
    /// message saying why ([`unattributed`]): the gateway cannot tell which of them asked,
    /// and a result the upstream builds on the refused question must not pass for a
    /// success.
    pub(crate) async fn on_upstream_request(
        &self,
        method: String,
        params: Option<Value>,
        stream_of: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        tracing::debug!(method = %method, stream_of = ?stream_of, "upstream request");
        let target = stream_of
            .as_ref()
            .and_then(|id| self.call_of_stream(id))
            .or_else(|| params.as_ref().and_then(|p| self.route_of(p)));
        if let Some(cx) = target {
            let mut params = params.unwrap_or_else(|| json!({}));
            strip_related_task(&mut params);
            tracing::debug!(method = %method, task = ?cx.task_id(), "upstream request relayed to its call's requestor");
            return ask(&cx, &method, params).await;
        }
        let mut params = params;
        if let Some(p) = params.as_mut()
            && related_task(p).is_some()
        {
            strip_related_task(p);
        }
        if self.has_no_client() {
            let waiting = match self.only_waiter() {
                Ok(cx) => {
                    let params = params.unwrap_or_else(|| json!({}));
                    tracing::debug!(method = %method, task = ?cx.task_id(), "an upstream request without related-task meta relayed to the one call waiting on the lane");
                    return ask(&cx, &method, params).await;
                }
                Err(waiters) => waiters,
            };
            if !waiting.is_empty() {
                let failure = unattributed(&method, waiting.len());
                for w in &waiting {
                    w.fail(failure.clone());
                }
            }
            let waiting = waiting.len();
            tracing::warn!(method = %method, waiting, "an upstream request outside a single call of a 2026-07-28 client refused: no client to send it to; the calls waiting on the lane fail");
            return Err(ErrorObject::new(
                mcp_tasks_proto::codes::METHOD_NOT_FOUND,
                format!(
                    "`{method}` cannot be relayed: it names no task (no related-task `_meta`) and {waiting} calls of the gateway's 2026-07-28 clients wait on this upstream, so it belongs to no single one"
                ),
            ));
        }
        let ready = self.downstream.borrow().clone();
        let peer = match ready {
            Some(peer) => peer,
            None => {
                // Wait for the client to be ready, but only so many requests at once.
                let Ok(_waiting) = self.early_requests.try_acquire() else {
                    tracing::warn!(method = %method, "an upstream request before the client is ready refused: {EARLY_REQUESTS} already wait");
                    return Err(unavailable(format!(
                        "the client is not ready for requests yet and {EARLY_REQUESTS} already wait"
                    )));
                };
                let Some(peer) = self.downstream(Duration::from_secs(30)).await else {
                    return Err(unavailable("no client is connected to the gateway session"));
                };
                peer
            }
        };
        peer.request(&method, params, Route::Standalone)
            .await
            .map_err(mcp_tasks_rpc::PeerError::into_error_object)
    }

    /// A notification from the upstream: progress goes to its call (with the original
    /// token); `notifications/tasks/status` stays here (upstream task ids mean nothing
    /// downstream); a changed tool list is read again before it is passed on; everything
    /// else is passed on unchanged.
    pub(crate) async fn on_upstream_notification(&self, method: String, params: Option<Value>) {
        match method.as_str() {
            methods::TASK_STATUS | methods::CANCELLED => return,
            methods::PROGRESS => {
                let target = params.as_ref().and_then(|p| {
                    let key = p.get("progressToken").map(Value::to_string)?;
                    self.routes
                        .lock()
                        .progress
                        .get(&key)
                        .map(|(_, cx)| cx.clone())
                });
                match (target, params.clone()) {
                    (Some(Some(cx)), Some(mut p)) => {
                        strip_related_task(&mut p);
                        cx.notify(&method, p).await;
                        return;
                    }
                    (Some(None), _) => {}
                    _ => {
                        tracing::debug!("progress for no live request dropped");
                        return;
                    }
                }
            }
            TOOLS_LIST_CHANGED => {
                // One refresh at a time: a change announced during one is read by one
                // more, not by a task per notification.
                {
                    let mut r = self.refreshing.lock();
                    if r.is_some() {
                        *r = Some(true);
                        return;
                    }
                    *r = Some(false);
                }
                if let Some(me) = self.me.upgrade() {
                    tokio::spawn(async move {
                        loop {
                            if let Some(conn) = me.conn() {
                                me.refresh_tools(&conn).await;
                            }
                            me.forward_down(method.clone(), params.clone()).await;
                            let mut r = me.refreshing.lock();
                            if *r == Some(true) {
                                *r = Some(false);
                                continue;
                            }
                            *r = None;
                            break;
                        }
                    });
                }
                return;
            }
            _ => {
                if let Some(p) = &params
                    && related_task(p).is_some()
                    && let Some(cx) = self.route_of(p)
                {
                    let mut p = p.clone();
                    strip_related_task(&mut p);
                    cx.notify(&method, p).await;
                    return;
                }
            }
        }
        self.forward_down(method, params).await;
    }

    /// Pass a notification to the downstream client unchanged; while the session is not
    /// ready yet it is kept (bounded: [`EARLY_NOTIFICATIONS`], [`EARLY_NOTIFICATION_BYTES`],
    /// the oldest dropped) and passed on once it is.
    pub(super) async fn forward_down(&self, method: String, mut params: Option<Value>) {
        if self.keep_early(&method, &mut params) {
            return;
        }
        let ready = self.downstream.borrow().clone();
        match ready {
            Some(peer) => peer.notify(&method, params, Route::Standalone).await,
            None => tracing::debug!(method = %method, "notification dropped: the client has gone"),
        }
    }

    /// Forward a downstream request the gateway does not interpret; the upstream's answer
    /// (result or error) comes back unchanged.
    pub(crate) async fn forward_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let me = self.me.upgrade().ok_or_else(super::ended)?;
        let (_lease, conn) = me.lease_and_conn()?;
        let _routes = me.register_forwarded(params.as_ref());
        match conn.call(method, params).await {
            Ok(v) => Ok(v),
            Err(CallError::Upstream(e) | CallError::Failed(e)) => Err(e),
            Err(CallError::Lost(d)) => Err(unavailable(format!(
                "{} before answering `{method}`",
                self.lost_reason(&conn, d.as_deref()).await
            ))),
        }
    }

    /// Forward a downstream notification the gateway does not interpret.
    pub(crate) async fn forward_notification(&self, method: &str, params: Option<Value>) {
        if let Some(conn) = self.conn() {
            conn.notify(method, params).await;
        } else {
            tracing::debug!(method, "notification dropped: the upstream is not up");
        }
    }
}
