//! `tasks/list`.

use mcp_tasks_core::serve;
use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::Value;

use crate::handlers::tasks_off;
use crate::session::Session;

/// Serve `tasks/list`: one page, with an opaque signed `nextCursor` when more remain (see
/// [`serve::list`]).
///
/// Spec: "Receivers SHOULD use cursor-based pagination to limit the number of tasks
/// returned in a single response." and "Invalid or nonexistent cursor in tasks/list:
/// -32602".
pub async fn handle(session: &Session, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_LIST))?;
    if !session.can_list {
        return Err(ErrorObject::method_not_found(
            "`tasks/list`: this server cannot identify requesters, so it does not list tasks",
        ));
    }
    serve::list(engine, &session.requester, params).await
}
