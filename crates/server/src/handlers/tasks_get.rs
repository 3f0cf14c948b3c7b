//! `tasks/get`.

use mcp_tasks_core::serve;
use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::Value;

use crate::handlers::tasks_off;
use crate::session::Session;

/// Serve `tasks/get`: the task as it is now (see [`serve::get`]).
///
/// Spec: "Receivers MUST include the actual `ttl` duration (or `null` for unlimited) in
/// `tasks/get` responses." Unknown, foreign and malformed ids are -32602; so is an expired
/// task ("Task has expired").
pub async fn handle(session: &Session, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_GET))?;
    serve::get(engine, &session.requester, params).await
}
