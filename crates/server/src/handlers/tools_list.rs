//! `tools/list`.

use mcp_tasks_proto::ErrorObject;
use serde_json::{Value, json};

use crate::session::Session;

/// Serve `tools/list`: every tool of the session's [`crate::extension::ToolSource`], on
/// one page, with `execution.taskSupport` only when tasks are on.
///
/// Spec: "tools indicate their support for tasks through `execution.taskSupport`".
pub(crate) fn handle(session: &Session, params: Option<&Value>) -> Result<Value, ErrorObject> {
    if let Some(c) = params.and_then(|p| p.get("cursor")) {
        if !c.is_string() && !c.is_null() {
            return Err(ErrorObject::invalid_params("`cursor` must be a string"));
        }
        if c.is_string() {
            // All tools fit on one page, so no cursor is ever issued.
            return Err(ErrorObject::invalid_params("Invalid cursor"));
        }
    }
    Ok(json!({ "tools": session.tool_listing() }))
}
