//! `tasks/cancel`.

use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::Value;

use crate::handlers::{task_id_param, tasks_off};
use crate::session::Session;

/// Serve `tasks/cancel`: the task is `cancelled` (and its work stopped) before the reply.
///
/// Spec: "Receivers MUST reject cancellation requests for tasks already in a terminal
/// status (`completed`, `failed`, or `cancelled`) with error code `-32602`".
pub async fn handle(session: &Session, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_CANCEL))?;
    let id = task_id_param(params)?;
    let task = engine
        .cancel(id, &session.requester)
        .await
        .map_err(|e| e.to_rpc("Failed to cancel task"))?;
    serde_json::to_value(task).map_err(ErrorObject::internal)
}
