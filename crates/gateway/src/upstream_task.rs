//! Calls the upstream runs as tasks of its own.
//!
//! The gateway creates the upstream task (`tools/call` with `task`), then follows it with
//! `tasks/result`, which blocks until the upstream task ends and meanwhile carries the
//! upstream's requests for input (each tagged with the upstream task id, which routes it
//! to this call, where it becomes our task's `input_required`). Its exact outcome becomes
//! ours. Cancelling our task cancels the upstream one (`tasks/cancel`).

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{ErrorObject, codes, methods};
use mcp_tasks_server::ToolContext;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::conn::{CallError, Conn};
use crate::error::unavailable;
use crate::lane::{LaneInner, strip_related_task};

/// Cancels the upstream task when our task is cancelled (the call future is dropped with
/// its cancellation token fired); a drop for any other reason (shutdown) leaves the
/// upstream task alone.
struct CancelUpstream {
    lane: Arc<LaneInner>,
    conn: Arc<Conn>,
    task_id: String,
    /// Our task, whose note is forgotten when it is cancelled.
    ours: Option<String>,
    cancel: CancellationToken,
    armed: bool,
}

impl Drop for CancelUpstream {
    fn drop(&mut self) {
        if !self.armed || !self.cancel.is_cancelled() {
            return;
        }
        if let Some(ours) = &self.ours {
            self.lane.forget_task(ours);
        }
        if self.conn.peer.is_closed() {
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
pub fn forgotten(upstream_task_id: &str, why: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!(
            "{}: the upstream server no longer knows its task {upstream_task_id} ({why}); the task's outcome is lost",
            crate::error::UNAVAILABLE
        ),
    )
}

fn is_terminal(task: &Value) -> bool {
    task.get("status")
        .and_then(Value::as_str)
        .and_then(TaskStatus::parse)
        .is_some_and(TaskStatus::is_terminal)
}

/// Run the call as an upstream task and return its exact outcome.
pub(crate) async fn run(
    lane: &Arc<LaneInner>,
    conn: Arc<Conn>,
    mut params: Value,
    task_field: Option<Value>,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let mut routes = lane.register_call(cx, false);
    if let Some(obj) = params.as_object_mut() {
        obj.insert(
            "task".into(),
            task_field
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({})),
        );
    }
    let created = match conn.call(methods::TOOLS_CALL, Some(params)).await {
        Ok(v) => v,
        Err(CallError::Upstream(e)) => return Err(e),
        Err(CallError::Lost(d)) => {
            return Err(unavailable(format!(
                "{} during the call",
                lane.lost_reason(&conn, d.as_deref()).await
            )));
        }
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
    lane.register_task(&routes, &upstream_id, cx);
    if let Some(ours) = cx.task_id() {
        lane.note_task(ours, &upstream_id, &conn);
    }
    let mut guard = CancelUpstream {
        lane: Arc::clone(lane),
        conn: Arc::clone(&conn),
        task_id: upstream_id.clone(),
        ours: cx.task_id().map(str::to_owned),
        cancel: cx.cancellation().clone(),
        armed: true,
    };
    let out = follow(lane, conn, &upstream_id, &mut guard).await;
    guard.armed = false;
    if let Some(ours) = cx.task_id() {
        lane.forget_task(ours);
    }
    routes.linger();
    out
}

/// Follow an upstream task again, for a task resumed after a gateway restart.
pub(crate) async fn resume(
    lane: &Arc<LaneInner>,
    conn: Arc<Conn>,
    upstream_id: &str,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let mut routes = lane.register_call(cx, false);
    lane.register_task(&routes, upstream_id, cx);
    let mut guard = CancelUpstream {
        lane: Arc::clone(lane),
        conn: Arc::clone(&conn),
        task_id: upstream_id.to_owned(),
        ours: cx.task_id().map(str::to_owned),
        cancel: cx.cancellation().clone(),
        armed: true,
    };
    // The upstream may have forgotten the task while the gateway was down.
    if let Err(CallError::Upstream(e)) = conn
        .call(methods::TASKS_GET, Some(json!({ "taskId": upstream_id })))
        .await
    {
        guard.armed = false;
        return Err(forgotten(
            upstream_id,
            &format!(
                "the gateway restarted, then it answered tasks/get with: {}",
                e.message
            ),
        ));
    }
    let out = follow(lane, conn, upstream_id, &mut guard).await;
    guard.armed = false;
    routes.linger();
    out
}

async fn follow(
    lane: &Arc<LaneInner>,
    mut conn: Arc<Conn>,
    upstream_id: &str,
    guard: &mut CancelUpstream,
) -> Result<Value, ErrorObject> {
    let id = json!({ "taskId": upstream_id });
    loop {
        let lost = match conn.call(methods::TASKS_RESULT, Some(id.clone())).await {
            Ok(mut v) => {
                strip_related_task(&mut v);
                return Ok(v);
            }
            Err(CallError::Upstream(e)) => {
                // Either the task's own error outcome, or the upstream does not know the
                // task (-32602 both, possibly): tasks/get tells them apart.
                match conn.call(methods::TASKS_GET, Some(id.clone())).await {
                    Ok(t) if is_terminal(&t) => return Err(e),
                    Ok(_) => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                    Err(CallError::Upstream(ge)) => {
                        return Err(forgotten(upstream_id, &ge.message));
                    }
                    Err(CallError::Lost(d)) => d,
                }
            }
            Err(CallError::Lost(d)) => d,
        };
        let why = lane.lost_reason(&conn, lost.as_deref()).await;
        tracing::warn!(upstream_task = %upstream_id, reason = %why, "lost the upstream while following its task");
        if !conn.peer.is_closed() {
            // The connection lives on (HTTP): ask again in a moment.
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        // The connection is gone: wait for the next one and ask it about the task.
        let Some(next) = lane.next_conn(conn.generation).await else {
            return Err(unavailable(format!("{why}; the gateway session ended")));
        };
        conn = next;
        guard.conn = Arc::clone(&conn);
        match conn.call(methods::TASKS_GET, Some(id.clone())).await {
            Ok(_) | Err(CallError::Lost(_)) => {}
            Err(CallError::Upstream(e)) => {
                return Err(forgotten(
                    upstream_id,
                    &format!("{why}, then it answered tasks/get with: {}", e.message),
                ));
            }
        }
    }
}
