//! One file per protocol method.

pub mod initialize;
pub mod tasks_cancel;
pub mod tasks_get;
pub mod tasks_list;
pub mod tasks_result;
pub mod tools_call;
pub mod tools_list;

use mcp_tasks_proto::ErrorObject;

/// -32601 for a `tasks/*` method when tasks are off for the session.
pub(crate) fn tasks_off(method: &str) -> ErrorObject {
    ErrorObject::method_not_found(format!("`{method}`: tasks are not enabled on this session"))
}
