//! Calls the upstream runs as tasks of its own.
//!
//! The gateway creates the upstream task (`tools/call` with `task`), then follows it with
//! `tasks/result`, which blocks until the upstream task ends and meanwhile carries the
//! upstream's requests for input (each tagged with the upstream task id, which routes it
//! to this call, where it becomes our task's `input_required`). Its exact outcome becomes
//! ours. Cancelling our task cancels the upstream one (`tasks/cancel`).
//!
//! Deviating upstreams are followed all the same:
//! * one that answers `tasks/result` with an error before its task has ended (FastMCP 3:
//!   -32602 "Task not completed yet") is polled with `tasks/get` at the task's
//!   `pollInterval` until the task is terminal (or waits for input), and then asked for
//!   the result again (the client's [`follow_result`], settling with [`settle`] and
//!   [`FollowPolicy::RELAY`]); a lost connection is the gateway's to wait out
//!   ([`UpstreamResult`]);
//! * the final status is the upstream's (`tasks/get` after the result): a task that ended
//!   `failed` is ours `failed` too (its result gets `isError: true` if it lacks it), and a
//!   result that is not a `CallToolResult` (Python `mcp` 1.30 sends only `{_meta}` for a
//!   failed task) becomes a JSON-RPC error that says what the upstream sent.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{CallToolResult, ErrorObject, codes, methods};
use mcp_tasks_server::ToolContext;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use mcp_tasks_client::connection::{Connection, ConnectionTasks};

use crate::error::unavailable;
use crate::upstream_call::{Call, CallError, Relay, call_error};
use mcp_tasks_client::follow::result::{Next, ResultAsker, follow_result};
use mcp_tasks_client::follow::{FollowPolicy, settle};
use mcp_tasks_client::{ClientError, TaskDetail};
use mcp_tasks_proto::meta::strip_related_task;
use parking_lot::Mutex;

use crate::lane::{LaneInner, RouteGuard, Waiter};

/// Cancels the upstream task when our task is cancelled (the call future is dropped with
/// its cancellation token fired) or failed by the lane ([`Self::or_failed`]); a drop for
/// any other reason (shutdown) leaves the upstream task alone.
pub(crate) struct CancelUpstream {
    lane: Arc<LaneInner>,
    conn: Arc<Connection>,
    task_id: String,
    /// Our task, whose note is forgotten when it is cancelled.
    ours: Option<String>,
    cancel: CancellationToken,
    armed: bool,
    /// The call, failed by the lane when the upstream asked what the gateway could not
    /// attribute.
    waiter: Option<Arc<Waiter>>,
}

impl CancelUpstream {
    /// Armed: cancelling `cx` cancels `upstream_id` on `conn`.
    pub(crate) fn new(
        lane: &Arc<LaneInner>,
        conn: &Arc<Connection>,
        upstream_id: &str,
        cx: &ToolContext,
    ) -> Self {
        Self {
            lane: Arc::clone(lane),
            conn: Arc::clone(conn),
            task_id: upstream_id.to_owned(),
            ours: cx.task_id().map(str::to_owned),
            cancel: cx.cancellation().clone(),
            armed: true,
            waiter: None,
        }
    }

    /// Cancel the upstream task too when `waiter`'s call is failed.
    pub(crate) fn or_failed(mut self, waiter: &Arc<Waiter>) -> Self {
        self.waiter = Some(Arc::clone(waiter));
        self
    }
}

impl Drop for CancelUpstream {
    fn drop(&mut self) {
        let failed = self.waiter.as_ref().is_some_and(|w| w.is_failed());
        if !self.armed || !(self.cancel.is_cancelled() || failed) {
            return;
        }
        if let Some(ours) = &self.ours {
            self.lane.forget_task_later(ours);
        }
        if self.conn.is_closed() {
            return;
        }
        let conn = Arc::clone(&self.conn);
        let task_id = self.task_id.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                match conn
                    .call(methods::TASKS_CANCEL, Some(json!({ "taskId": task_id })))
                    .await
                {
                    Ok(_) => tracing::info!(upstream_task = %task_id, "upstream task cancelled"),
                    Err(e) => tracing::warn!(upstream_task = %task_id, error = ?e, "upstream task cancel failed"),
                }
            });
        }
    }
}

/// The error a task ends with when the upstream has forgotten its task.
pub(crate) fn forgotten(upstream_task_id: &str, why: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!(
            "{}: the upstream server no longer knows its task {upstream_task_id} ({why}); the task's outcome is lost",
            crate::error::UNAVAILABLE
        ),
    )
}

/// Run the call as an upstream task and return its exact outcome; or the error it is
/// failed with meanwhile (an upstream question the gateway could not attribute: the
/// upstream task is then cancelled).
pub(crate) async fn run(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    params: Value,
    task_field: Option<Value>,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let mut routes = lane.register_call(cx, false);
    let waiter = Arc::clone(routes.waiter());
    let out = waiter
        .unless_failed(run_task(lane, conn, params, task_field, cx, &mut routes))
        .await;
    if out.is_err()
        && let Some(ours) = cx.task_id()
    {
        lane.forget_task(ours).await;
    }
    out
}

async fn run_task(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    mut params: Value,
    task_field: Option<Value>,
    cx: &ToolContext,
    routes: &mut RouteGuard,
) -> Result<Value, ErrorObject> {
    if let Some(obj) = params.as_object_mut() {
        obj.insert(
            "task".into(),
            task_field
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({})),
        );
    }
    let created = match conn
        .call_for(methods::TOOLS_CALL, Some(params), routes.waiter())
        .await
    {
        Ok(v) => v,
        Err(e) => return Err(call_error(lane, &conn, e).await),
    };
    let Some(upstream_id) = created
        .pointer("/task/taskId")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        // The upstream answered the call directly: that is its outcome.
        return Ok(created);
    };
    tracing::info!(task = ?cx.task_id(), upstream_task = %upstream_id, "upstream task created");
    lane.register_task(routes, &upstream_id, cx);
    if let Some(ours) = cx.task_id() {
        lane.note_task(ours, &upstream_id, &conn).await;
    }
    let mut guard = CancelUpstream::new(lane, &conn, &upstream_id, cx).or_failed(routes.waiter());
    let out = follow(lane, conn, &upstream_id, &mut guard, routes.waiter(), cx).await;
    guard.armed = false;
    if let Some(ours) = cx.task_id() {
        lane.forget_task(ours).await;
    }
    routes.linger();
    out
}

/// Follow an upstream task again, for a task resumed after a gateway restart (a
/// 2026-07-28 one is polled instead, [`crate::modern_upstream::poll`]).
pub(crate) async fn resume(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    upstream_id: &str,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let mut routes = lane.register_call(cx, false);
    lane.register_task(&routes, upstream_id, cx);
    let waiter = Arc::clone(routes.waiter());
    waiter
        .unless_failed(resume_task(lane, conn, upstream_id, cx, &mut routes))
        .await
}

/// [`forgotten`] by an upstream that answered `tasks/get` with `e` after a gateway
/// restart.
pub(crate) fn forgotten_after_restart(upstream_id: &str, e: &ErrorObject) -> ErrorObject {
    forgotten(
        upstream_id,
        &format!(
            "the gateway restarted, then it answered tasks/get with: {}",
            e.message
        ),
    )
}

async fn resume_task(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    upstream_id: &str,
    cx: &ToolContext,
    routes: &mut RouteGuard,
) -> Result<Value, ErrorObject> {
    let mut guard = CancelUpstream::new(lane, &conn, upstream_id, cx).or_failed(routes.waiter());
    // The upstream may have forgotten the task while the gateway was down.
    if let Err(CallError::Upstream(e)) = conn
        .call(methods::TASKS_GET, Some(json!({ "taskId": upstream_id })))
        .await
    {
        guard.armed = false;
        return Err(forgotten_after_restart(upstream_id, &e));
    }
    let out = follow(lane, conn, upstream_id, &mut guard, routes.waiter(), cx).await;
    guard.armed = false;
    routes.linger();
    out
}

/// The upstream task's status.
fn status_of(task: &Value) -> Option<TaskStatus> {
    task.get("status")
        .and_then(Value::as_str)
        .and_then(TaskStatus::parse)
}

/// At most this much of an invalid payload is quoted in the error.
const QUOTE_BYTES: usize = 300;

/// What is wrong with `v` as a `CallToolResult`, if anything.
fn not_a_call_tool_result(v: &Value) -> Option<String> {
    CallToolResult::from_value(v).err().map(|e| e.to_string())
}

/// An upstream's `tools/call` outcome as our tool's result: a result that is not a valid
/// `CallToolResult` becomes a JSON-RPC error quoting what the upstream sent.
pub(crate) fn into_call_tool_result(v: Value) -> Result<CallToolResult, ErrorObject> {
    CallToolResult::from_value(&v).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!(
                "the upstream's tools/call result is not a valid CallToolResult ({e}): the upstream sent {}",
                quote(&v)
            ),
        )
    })
}

fn quote(v: &Value) -> String {
    let mut text = v.to_string();
    if text.len() > QUOTE_BYTES {
        let mut end = QUOTE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// The outcome of an upstream task from its `tasks/result` answer `v`, with the upstream's
/// final status (`terminal`, or read now with `tasks/get`).
async fn finish(
    conn: &Connection,
    id: &Value,
    upstream_id: &str,
    mut v: Value,
    terminal: Option<TaskStatus>,
) -> Result<Value, ErrorObject> {
    let status = match terminal {
        Some(t) => Some(t),
        None => conn
            .call(methods::TASKS_GET, Some(id.clone()))
            .await
            .ok()
            .as_ref()
            .and_then(status_of),
    };
    if let Some(why) = not_a_call_tool_result(&v) {
        let ended = status.map_or_else(String::new, |s| format!(" ended `{}` and", s.as_str()));
        return Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!(
                "the upstream task {upstream_id}{ended} its tasks/result is not a valid CallToolResult ({why}): the upstream sent {}",
                quote(&v)
            ),
        ));
    }
    strip_related_task(&mut v);
    match status {
        Some(TaskStatus::Failed) if v.get("isError") != Some(&Value::Bool(true)) => {
            tracing::info!(upstream_task = %upstream_id, "the upstream task failed although its result has no isError: ours fails too");
            v["isError"] = Value::Bool(true);
        }
        Some(TaskStatus::Cancelled) => {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the upstream task {upstream_id} was cancelled by the upstream server"),
            ));
        }
        _ => {}
    }
    Ok(v)
}

/// Follow the upstream task `upstream_id`, created on `conn`, with `tasks/result` (the
/// client's [`follow_result`] with [`UpstreamResult`]), and make its outcome ours
/// ([`finish`]).
async fn follow(
    lane: &Arc<LaneInner>,
    conn: Arc<Connection>,
    upstream_id: &str,
    guard: &mut CancelUpstream,
    waiter: &Arc<Waiter>,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    guard.conn = conn;
    let asker = UpstreamResult {
        lane,
        guard: Mutex::new(guard),
        waiter,
        cx,
    };
    let end = follow_result(&asker, upstream_id).await?;
    let conn = asker.conn();
    match end.outcome {
        Ok(v) => {
            finish(
                &conn,
                &json!({ "taskId": upstream_id }),
                upstream_id,
                v,
                end.terminal,
            )
            .await
        }
        Err(e) => Err(e),
    }
}

/// The `tasks/result` of an upstream task, asked on the lane's connection on behalf of
/// the call `waiter` (what the upstream sends on its response stream is the call's).
/// An early answer is settled with the upstream's questions relayed ([`Relay`]); a lost
/// connection is waited out: asked again in a moment while it lives on (HTTP), else on
/// the lane's next connection, once that still knows the task.
struct UpstreamResult<'a> {
    lane: &'a Arc<LaneInner>,
    /// Holds the connection followed on now, to which a cancel goes too.
    guard: Mutex<&'a mut CancelUpstream>,
    waiter: &'a Arc<Waiter>,
    cx: &'a ToolContext,
}

impl UpstreamResult<'_> {
    /// The connection followed on now.
    fn conn(&self) -> Arc<Connection> {
        Arc::clone(&self.guard.lock().conn)
    }
}

#[async_trait::async_trait]
impl ResultAsker for UpstreamResult<'_> {
    type Error = ErrorObject;
    type Lost = Option<String>;

    async fn result(&self, task_id: &str) -> Result<Value, ClientError> {
        let conn = self.conn();
        let post = self.waiter.post();
        conn.request_recorded(
            methods::TASKS_RESULT,
            Some(json!({ "taskId": task_id })),
            post.sink(),
        )
        .await
    }

    /// The task's own error outcome, an answer given before the task ended (FastMCP 3:
    /// -32602 "Task not completed yet"), a timeout, or a task the upstream does not know:
    /// an answer, which `tasks/get` tells apart.
    fn answer_of(&self, e: ClientError) -> Result<ErrorObject, Option<String>> {
        match CallError::of_client(e) {
            CallError::Upstream(e) | CallError::Failed(e) => Ok(e),
            CallError::Lost(d) => Err(d),
        }
    }

    async fn settle(&self, task_id: &str) -> Result<TaskDetail, ClientError> {
        let conn = self.conn();
        let relay = Relay(self.cx);
        let peer = ConnectionTasks {
            conn: &conn,
            answers: &relay,
        };
        settle(&peer, task_id, FollowPolicy::RELAY).await
    }

    async fn lost(&self, task_id: &str, lost: Option<String>) -> Next<ErrorObject> {
        let conn = self.conn();
        let why = self.lane.lost_reason(&conn, lost.as_deref()).await;
        tracing::warn!(upstream_task = %task_id, reason = %why, "lost the upstream while following its task");
        if !conn.is_closed() {
            // The connection lives on (HTTP): ask again in a moment.
            tokio::time::sleep(Duration::from_secs(1)).await;
            return Next::Again;
        }
        // The connection is gone: wait for the next one and ask it about the task.
        let Some(next) = self.lane.next_conn(conn.generation()).await else {
            return Next::Stop(unavailable(format!("{why}; the gateway session ended")));
        };
        self.guard.lock().conn = Arc::clone(&next);
        match next
            .call(methods::TASKS_GET, Some(json!({ "taskId": task_id })))
            .await
        {
            Ok(_) | Err(CallError::Lost(_) | CallError::Failed(_)) => Next::Again,
            Err(CallError::Upstream(e)) => Next::Stop(forgotten(
                task_id,
                &format!("{why}, then it answered tasks/get with: {}", e.message),
            )),
        }
    }

    async fn unsettled(
        &self,
        task_id: &str,
        e: ClientError,
        _answer: ErrorObject,
    ) -> Next<ErrorObject> {
        match CallError::of_client(e) {
            CallError::Upstream(ge) => Next::Stop(forgotten(task_id, &ge.message)),
            CallError::Failed(fe) => Next::Stop(fe),
            CallError::Lost(d) => self.lost(task_id, d).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_tool_results_are_checked() {
        assert_eq!(not_a_call_tool_result(&json!({"content": []})), None);
        assert!(into_call_tool_result(json!({"content": [{"type": "text"}]})).is_err());
        assert!(into_call_tool_result(json!({"content": [{"type": "new", "x": 1}]})).is_ok());
        assert_eq!(
            not_a_call_tool_result(
                &json!({"content": [{"type": "text", "text": "x"}], "isError": true, "structuredContent": {}})
            ),
            None
        );
        assert!(
            not_a_call_tool_result(&json!({"_meta": {"k": 1}}))
                .is_some_and(|why| why.contains("`content`"))
        );
        assert!(not_a_call_tool_result(&json!({"content": [{}]})).is_some());
        assert!(not_a_call_tool_result(&json!({"content": [], "isError": "yes"})).is_some());
        assert!(not_a_call_tool_result(&json!([])).is_some());
        let long = json!({ "x": "é".repeat(400) });
        assert!(quote(&long).len() <= QUOTE_BYTES + 3);
    }
}
