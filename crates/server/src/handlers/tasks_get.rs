//! `tasks/get`.

use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::Value;

use crate::handlers::{task_id_param, tasks_off};
use crate::session::Session;

/// Serve `tasks/get`: the task as it is now.
///
/// Spec: "Receivers MUST include the actual `ttl` duration (or `null` for unlimited) in
/// `tasks/get` responses." Unknown, foreign and malformed ids are -32602; so is an expired
/// task ("Task has expired").
pub async fn handle(session: &Session, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_GET))?;
    let id = task_id_param(params)?;
    let task = engine
        .get(id, &session.requester)
        .await
        .map_err(|e| e.to_rpc("Failed to retrieve task"))?;
    serde_json::to_value(task).map_err(ErrorObject::internal)
}
