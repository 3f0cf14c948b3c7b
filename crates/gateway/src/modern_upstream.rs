//! The reverse bridge: a 2026-07-28 ("modern") upstream behind the gateway
//! (`--upstream-protocol modern`; docs/adr/0005-two-generations.md).
//!
//! The connection to such an upstream is the client's: it opens with `server/discover`
//! instead of `initialize`/`notifications/initialized`, and stamps the modern `_meta`
//! (protocol version, the session's client capabilities plus the tasks extension, client
//! info) on every request ([`Connection::start`]). Results that are `complete` lose
//! `resultType` and the `serverInfo` of their `_meta` on the way down, which makes them
//! legacy results.
//!
//! A `tools/call` ([`call_tool`]) may be answered three ways: `complete` (the result),
//! `input_required` (the client's rounds, [`run_rounds`]: each input request is relayed
//! to the downstream client through the [`ToolContext`], for a legacy task as a request on
//! `tasks/result`, and the call is retried with `inputResponses` and `requestState`), or
//! `task` (the upstream task is followed with `tasks/get` at its `pollIntervalMs`, each
//! new `inputRequests` entry relayed once and answered with `tasks/update`, by the
//! client's task following [`follow_polled`] with [`FollowPolicy::RELAY`]; cancelled with
//! `tasks/cancel` when the call is).

use std::sync::Arc;

use mcp_tasks_client::rounds::{Answered, RoundTrips, RoundsError, run_rounds};
use mcp_tasks_proto::modern::ResultType;
use mcp_tasks_proto::{ErrorObject, codes, methods};
use mcp_tasks_server::ToolContext;
use serde_json::{Map, Value, json};

use mcp_tasks_client::connection::{Connection, ConnectionTasks};

use crate::lane::{LaneInner, Waiter};
use crate::upstream_call::{Call, CallError, Relay, call_error, relay_all};
use crate::upstream_task::CancelUpstream;

/// Most `input_required` rounds of one plain call answered: an upstream that asks again
/// and again without end gets an error after this many (the client's bound, the same
/// number).
const MAX_INPUT_ROUNDS: u32 = mcp_tasks_client::DEFAULT_MAX_INPUT_ROUNDS;

use mcp_tasks_client::connection::strip_complete;
use mcp_tasks_client::follow::{FollowPolicy, follow_polled};
use mcp_tasks_client::{ClientError, TaskDetail, TaskDetailExt};

/// A modern `tools/call` upstream, followed to its outcome: the final result, or the
/// JSON-RPC error the call (or its upstream task) ended with, or the error the lane
/// failed it with meanwhile.
pub(crate) async fn call_tool(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    params: Value,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let routes = lane.register_call(cx, true);
    routes
        .unless_failed(call_rounds(lane, conn, params, cx, routes.waiter()))
        .await
}

/// The rounds of the call ([`run_rounds`], with [`UpstreamRounds`]), and the upstream task
/// it may create followed ([`follow`]).
async fn call_rounds(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    params: Value,
    cx: &ToolContext,
    waiter: &Arc<Waiter>,
) -> Result<Value, ErrorObject> {
    let Value::Object(params) = params else {
        return Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            "tools/call params are not an object",
        ));
    };
    let rounds = UpstreamRounds {
        lane,
        conn: &conn,
        cx,
        waiter,
    };
    match run_rounds(&rounds, params, MAX_INPUT_ROUNDS).await {
        Ok(Answered::Complete(v)) => Ok(v),
        Ok(Answered::Task(v)) => follow(lane, Arc::clone(&conn), &v, cx).await,
        Err(RoundsError::Peer(e)) => Err(e),
        Err(RoundsError::TooMany(n)) => Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the upstream asked for input more than {n} times in one tools/call"),
        )),
        Err(RoundsError::UnknownResult(t)) => Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the upstream answered tools/call with the unknown resultType `{t}`"),
        )),
    }
}

/// The rounds of one upstream `tools/call`: each sent as a [`Creating`] on behalf of the
/// call's [`Waiter`], each question relayed to the downstream client ([`relay_all`]).
struct UpstreamRounds<'a> {
    lane: &'a Arc<LaneInner>,
    conn: &'a Arc<Connection>,
    cx: &'a ToolContext,
    waiter: &'a Arc<Waiter>,
}

#[async_trait::async_trait]
impl RoundTrips for UpstreamRounds<'_> {
    type Error = ErrorObject;

    async fn send(&self, params: Value) -> Result<Value, ErrorObject> {
        let mut creating = Creating::start(self.conn, params, self.cx, self.waiter);
        match creating.answer().await {
            Ok(v) => Ok(v),
            Err(e) => Err(call_error(self.lane, self.conn, e).await),
        }
    }

    async fn answer(
        &self,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, ErrorObject> {
        relay_all(self.cx, requests).await.map_err(|(_, e)| e)
    }
}

/// An upstream `tools/call` in flight, run apart from the call that awaits it, so that
/// it outlives that call being cancelled: the task it creates is then cancelled upstream
/// as soon as its id is known (`tasks/cancel`), not left running unseen. Dropped for any
/// other reason (the call was not cancelled) the request is abandoned (over modern HTTP
/// its POST is dropped, which cancels it).
struct Creating {
    conn: Arc<Connection>,
    call: Option<tokio::task::JoinHandle<Result<Value, CallError>>>,
    cancel: tokio_util::sync::CancellationToken,
}

impl Creating {
    fn start(
        conn: &Arc<Connection>,
        params: Value,
        cx: &ToolContext,
        waiter: &Arc<Waiter>,
    ) -> Self {
        let c = Arc::clone(conn);
        let w = Arc::clone(waiter);
        let call =
            tokio::spawn(async move { c.call_for(methods::TOOLS_CALL, Some(params), &w).await });
        Self {
            conn: Arc::clone(conn),
            call: Some(call),
            cancel: cx.cancellation().clone(),
        }
    }

    /// The upstream's answer.
    async fn answer(&mut self) -> Result<Value, CallError> {
        let Some(call) = self.call.as_mut() else {
            return Err(CallError::Lost(None));
        };
        let r = call.await;
        self.call = None;
        r.unwrap_or_else(|e| {
            Err(CallError::Failed(ErrorObject::internal(format!(
                "the upstream tools/call failed: {e}"
            ))))
        })
    }
}

impl Drop for Creating {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        if !self.cancel.is_cancelled() {
            call.abort();
            return;
        }
        let conn = Arc::clone(&self.conn);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let Ok(Ok(v)) = call.await else { return };
                if ResultType::of(&v) != ResultType::Task {
                    return;
                }
                let Some(task_id) = v.get("taskId").and_then(Value::as_str) else {
                    return;
                };
                match conn
                    .call(methods::TASKS_CANCEL, Some(json!({ "taskId": task_id })))
                    .await
                {
                    Ok(_) => tracing::info!(upstream_task = %task_id, "upstream task cancelled (created after its call was cancelled)"),
                    Err(e) => tracing::warn!(upstream_task = %task_id, error = ?e, "upstream task cancel failed"),
                }
            });
        }
    }
}

/// Follow the upstream task that `created` (a `CreateTaskResult`) announces.
///
/// Spec (SEP-2663): "Requestors poll `tasks/get` ... respecting `pollIntervalMs`"; input
/// requests "are answered with `tasks/update`"; `completed` "This includes tool calls that
/// returned results with `isError: true`"; `failed`: "The task will include the `error`
/// field with the JSON-RPC error details".
async fn follow(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    created: &Value,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let Some(task_id) = created.get("taskId").and_then(Value::as_str) else {
        return Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the upstream created a task without a taskId: {created}"),
        ));
    };
    tracing::debug!(upstream_task = %task_id, "following a modern upstream task");
    // Noted, so that a gateway restart follows it again
    // ([`crate::upstream_task::resume`]).
    if let Some(ours) = cx.task_id() {
        lane.note_task(ours, task_id, &conn).await;
    }
    let out = poll(lane, &conn, task_id, created.clone(), cx).await;
    if let Some(ours) = cx.task_id() {
        lane.forget_task(ours).await;
    }
    out
}

/// Poll the upstream task `task_id`, last seen as `task`, to its outcome: the client's
/// task following ([`follow_polled`]) with [`FollowPolicy::RELAY`]; cancelled upstream
/// when the call is meanwhile ([`CancelUpstream`]).
///
/// A task resumed after a gateway restart is polled so too
/// ([`crate::upstream_task::resume`]): its input requests are relayed again, as the
/// answers given before the restart went with the old connection's memory, and an
/// `inputRequests` entry still listed is one the upstream still waits for.
pub(crate) async fn poll(
    lane: &Arc<LaneInner>,
    conn: &Arc<Connection>,
    task_id: &str,
    task: Value,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let _cancel = CancelUpstream::new(lane, conn, task_id, cx);
    let relay = Relay(cx);
    let peer = ConnectionTasks {
        conn,
        answers: &relay,
    };
    let seen = TaskDetail::parse(&task).ok();
    match follow_polled(&peer, task_id, seen, FollowPolicy::RELAY).await {
        Ok(Ok(mut r)) => {
            strip_complete(&mut r);
            Ok(r)
        }
        Ok(Err(e)) | Err(ClientError::Unanswered { error: e, .. }) => Err(e),
        Err(e) => Err(call_error(lane, conn, CallError::of_client(e)).await),
    }
}
