//! One file per protocol method.

pub mod initialize;
pub mod tasks_cancel;
pub mod tasks_get;
pub mod tasks_list;
pub mod tasks_result;
pub mod tools_call;
pub mod tools_list;

use mcp_tasks_proto::ErrorObject;
use serde_json::Value;

/// The `taskId` param of `tasks/get`, `tasks/result` and `tasks/cancel`.
///
/// Spec: "the `taskId` parameter in the request MUST be used as the source of truth for
/// identifying the target task. ... receivers MUST ignore [related-task] metadata if
/// present in favor of the RPC method parameter." So `_meta` is not read here.
pub(crate) fn task_id_param(params: Option<&Value>) -> Result<&str, ErrorObject> {
    let Some(params) = params else {
        return Err(ErrorObject::invalid_params(
            "missing params; `taskId` is required",
        ));
    };
    match params.get("taskId") {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ErrorObject::invalid_params(format!(
            "`taskId` must be a string, got {other}"
        ))),
        None => Err(ErrorObject::invalid_params("`taskId` is required")),
    }
}

/// -32601 for a `tasks/*` method when tasks are off for the session.
pub(crate) fn tasks_off(method: &str) -> ErrorObject {
    ErrorObject::method_not_found(format!("`{method}`: tasks are not enabled on this session"))
}
