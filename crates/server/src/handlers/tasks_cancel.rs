//! `tasks/cancel`.

use mcp_tasks_core::serve;
use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::Value;

use crate::handlers::tasks_off;
use crate::session::Session;

/// Serve `tasks/cancel`: the task is `cancelled` (and its work stopped) before the reply
/// (see [`serve::cancel`]).
///
/// Spec: "Receivers MUST reject cancellation requests for tasks already in a terminal
/// status (`completed`, `failed`, or `cancelled`) with error code `-32602`".
pub async fn handle(session: &Session, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_CANCEL))?;
    serve::cancel(engine, &session.requester, params).await
}
