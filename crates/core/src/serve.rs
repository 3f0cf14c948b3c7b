//! Serving `tasks/*` from a [`TaskEngine`]: what every receiver answers the same way,
//! whichever side of the connection it is on (the server for task-augmented `tools/call`,
//! the client for task-augmented `elicitation/create` and `sampling/createMessage`).
//!
//! Each function reads the raw `params`, asks the engine on behalf of `who`, and returns
//! the JSON-RPC result or error exactly as it goes on the wire. The caller decides
//! whether tasks are on at all (and answers -32601 when they are not).

use std::sync::Arc;

use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::{Value, json};

use crate::channel::RequestSender;
use crate::engine::{Requester, TaskEngine};
use crate::error::EngineError;
use crate::record::TaskRecord;

/// The `taskId` param of `tasks/get`, `tasks/result` and `tasks/cancel`.
///
/// Spec: "the `taskId` parameter in the request MUST be used as the source of truth for
/// identifying the target task. ... receivers MUST ignore [related-task] metadata if
/// present in favor of the RPC method parameter." So `_meta` is not read here.
///
/// # Errors
/// -32602 when `taskId` is missing or not a string.
pub fn task_id_param(params: Option<&Value>) -> Result<&str, ErrorObject> {
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

/// The `CreateTaskResult` for a task just created: `{"task": Task}`.
///
/// Spec: "Receivers that accept a task-augmented request MUST return a
/// `CreateTaskResult` as the response."
///
/// # Errors
/// -32603 if the task cannot be serialized (it always can).
pub fn create_task_result(rec: &TaskRecord) -> Result<Value, ErrorObject> {
    let task = serde_json::to_value(rec.to_wire()).map_err(ErrorObject::internal)?;
    Ok(json!({ "task": task }))
}

/// The JSON-RPC error for a task the engine would not create: a malformed `task` field
/// is -32602 as it is, anything else says what failed.
pub fn create_error(e: &EngineError) -> ErrorObject {
    match e {
        EngineError::InvalidParams(_) => e.to_rpc(""),
        other => other.to_rpc("Failed to create task"),
    }
}

/// Serve `tasks/list`: one page, with an opaque signed `nextCursor` when more remain.
///
/// Spec: "Receivers SHOULD use cursor-based pagination to limit the number of tasks
/// returned in a single response." and "Invalid or nonexistent cursor in tasks/list:
/// -32602".
///
/// # Errors
/// The JSON-RPC error to answer with.
async fn list(
    engine: &TaskEngine,
    who: &Requester,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    let page = list_page(engine, who, params).await?;
    serde_json::to_value(page).map_err(ErrorObject::internal)
}

/// [`dispatch`] of `tasks/list` with the page written as JSON text: what a transport that
/// sends the answer at once asks for. A page of tasks built as a `Value` tree only to be
/// serialized again cost more than writing it (docs/performance.md, "The creation's answer,
/// trimmed"). The same value as [`dispatch`]'s (test `the_text_of_a_list_is_its_value`).
///
/// # Errors
/// As [`dispatch`] for `tasks/list`.
pub async fn list_text(
    engine: &TaskEngine,
    who: &Requester,
    params: Option<&Value>,
) -> Result<String, ErrorObject> {
    let page = list_page(engine, who, params).await?;
    serde_json::to_string(&page).map_err(ErrorObject::internal)
}

/// One `tasks/list` page: `{"tasks": [...], "nextCursor": ...}`, the cursor only when
/// more remain.
#[derive(serde::Serialize)]
struct ListPage {
    tasks: Vec<mcp_tasks_proto::mcp::Task>,
    #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// The page `tasks/list` with `params` answers `who`.
async fn list_page(
    engine: &TaskEngine,
    who: &Requester,
    params: Option<&Value>,
) -> Result<ListPage, ErrorObject> {
    let cursor = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => return Err(ErrorObject::invalid_params("`cursor` must be a string")),
    };
    let (tasks, next_cursor) = engine
        .list(cursor, who)
        .await
        .map_err(|e| e.to_rpc("Failed to list tasks"))?;
    Ok(ListPage { tasks, next_cursor })
}

/// Serve `tasks/result`: block until the task is terminal, then return exactly what the
/// wrapped request would have returned (its result with related-task `_meta`, or its
/// JSON-RPC error). While it waits, the task's requests for input travel on `sender`.
///
/// Spec: "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
/// return that same JSON-RPC error."
///
/// # Errors
/// The task's own JSON-RPC error, or the error of the request (an unknown task).
async fn result(
    engine: &TaskEngine,
    who: &Requester,
    params: Option<&Value>,
    sender: Option<Arc<dyn RequestSender>>,
) -> Result<Value, ErrorObject> {
    let id = task_id_param(params)?;
    match engine.result(id, who, sender).await {
        Ok(outcome) => outcome,
        Err(e) => Err(e.to_rpc("Failed to retrieve task")),
    }
}

/// Whether `method` is one of the `tasks/*` requests a receiver serves ([`dispatch`]).
pub fn is_tasks_method(method: &str) -> bool {
    matches!(
        method,
        methods::TASKS_GET | methods::TASKS_RESULT | methods::TASKS_LIST | methods::TASKS_CANCEL
    )
}

/// Serve one `tasks/*` request for `who`: the one dispatch every receiver uses, the
/// server for its task-augmented `tools/call` and the client for its task-augmented
/// `elicitation/create` and `sampling/createMessage`. `sender` is called for
/// `tasks/result` only: where the task's requests for input travel while it waits
/// (`None`: they stay queued).
///
/// * `tasks/get`, the task as it is now. Spec: "Receivers MUST include the actual `ttl`
///   duration (or `null` for unlimited) in `tasks/get` responses." Unknown, foreign and
///   malformed ids are -32602; so is an expired task ("Task has expired"). A poll sooner
///   than the task's `pollInterval` may be refused by the `poll` rate limit
///   ([`TaskEngine::poll`]).
/// * `tasks/cancel`, the task `cancelled` (and its work stopped) before the reply. Spec:
///   "Receivers MUST reject cancellation requests for tasks already in a terminal status
///   (`completed`, `failed`, or `cancelled`) with error code `-32602`".
/// * `tasks/list`, one page with an opaque signed `nextCursor` when more remain.
/// * `tasks/result`, blocking until the task is terminal, then exactly what the wrapped
///   request would have returned.
///
/// # Errors
/// The JSON-RPC error to answer with; -32601 for a method that is not `tasks/*`.
pub async fn dispatch(
    engine: &TaskEngine,
    who: &Requester,
    method: &str,
    params: Option<&Value>,
    sender: impl FnOnce() -> Option<Arc<dyn RequestSender>>,
) -> Result<Value, ErrorObject> {
    let task = match method {
        methods::TASKS_LIST => return list(engine, who, params).await,
        methods::TASKS_RESULT => return result(engine, who, params, sender()).await,
        methods::TASKS_GET => poll(engine, who, params).await?,
        methods::TASKS_CANCEL => engine
            .cancel(task_id_param(params)?, who)
            .await
            .map_err(|e| e.to_rpc("Failed to cancel task"))?,
        other => return Err(ErrorObject::method_not_found(format!("`{other}`"))),
    };
    serde_json::to_value(task).map_err(ErrorObject::internal)
}

/// [`dispatch`] of `tasks/get` with the task written as JSON text: what a transport that
/// sends the answer at once asks for (a 2025-11-25 `tasks/get` answered as JSON over
/// Streamable HTTP). `tasks/get` is the most frequent request; building the task as a
/// `Value` tree only to serialize it again cost about an eighth of it (docs/performance.md,
/// "The get, trimmed"). The same fields and values as [`dispatch`]'s (test
/// `the_text_of_a_get_is_its_value`), in the struct's order rather than sorted.
///
/// # Errors
/// As [`dispatch`] for `tasks/get`.
pub async fn get_text(
    engine: &TaskEngine,
    who: &Requester,
    params: Option<&Value>,
) -> Result<String, ErrorObject> {
    let task = poll(engine, who, params).await?;
    serde_json::to_string(&task).map_err(ErrorObject::internal)
}

/// The task a `tasks/get` names, as [`dispatch`] and [`get_text`] answer it.
async fn poll(
    engine: &TaskEngine,
    who: &Requester,
    params: Option<&Value>,
) -> Result<mcp_tasks_proto::mcp::Task, ErrorObject> {
    engine
        .poll(task_id_param(params)?, who)
        .await
        .map_err(|e| e.to_rpc("Failed to retrieve task"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_read_from_params_only() {
        assert_eq!(task_id_param(Some(&json!({"taskId": "a"}))).unwrap(), "a");
        assert_eq!(task_id_param(None).unwrap_err().code, -32602);
        assert_eq!(
            task_id_param(Some(&json!({"taskId": 1}))).unwrap_err().code,
            -32602
        );
        let only_meta = json!({"_meta": {"io.modelcontextprotocol/related-task": {"taskId": "a"}}});
        assert_eq!(task_id_param(Some(&only_meta)).unwrap_err().code, -32602);
    }
}
