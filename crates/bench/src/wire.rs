//! The shapes the bench sends and checks, per protocol revision: the `tools/call` that creates
//! a task, the `CreateTaskResult` it answers, and the task `tasks/get` returns.
//!
//! 2025-11-25: the client asks for a task (`params.task`), the task is nested
//! (`{"task": {...}}`, `pollInterval`), and the result comes from `tasks/result`.
//! 2026-07-28 with the tasks extension (SEP-2663): the server decides, the
//! `CreateTaskResult` is flat with `resultType: "task"` (`pollIntervalMs`), and `tasks/get`
//! carries the result inline once the task is `completed`.

use mcp_tasks_proto::CallToolResult;
use serde_json::{Value, json};

use mcp_tasks_proto::Revision;

/// The task statuses of both eras.
const STATUSES: [&str; 5] = [
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
];

/// The params of the `tools/call` of `tool` with `{ms}` that creates a task.
///
/// Modern: no `task` field; the server decides (SEP-2663: "the server decides per
/// request"), and the TTL is the server's (`ttl_ms` is not sent).
pub(crate) fn create_params(revision: Revision, tool: &str, ms: u64, ttl_ms: Option<u64>) -> Value {
    if revision.tasks_are_extension() {
        return json!({ "name": tool, "arguments": { "ms": ms } });
    }
    let task = match ttl_ms {
        Some(ttl) => json!({ "ttl": ttl }),
        None => json!({}),
    };
    json!({ "name": tool, "arguments": { "ms": ms }, "task": task })
}

/// The id and poll interval (ms) of the task a `tools/call` created.
///
/// Spec (SEP-2663): "Servers MUST set `resultType` to `"task"` when returning a
/// `CreateTaskResult`".
pub(crate) fn created_task(
    revision: Revision,
    result: &Value,
) -> Result<(String, Option<u64>), String> {
    let (task, interval_key) = if revision.tasks_are_extension() {
        match result.get("resultType").and_then(Value::as_str) {
            Some("task") => {}
            Some("complete") => {
                return Err(format!(
                    "the server ran the call directly instead of as a task (give a tool whose taskSupport is `required`, e.g. `serve --tool-task-support sleep=required`, or a --work-ms longer than the server's --task-after): {result}"
                ));
            }
            _ => {
                return Err(format!(
                    "CreateTaskResult without `resultType: \"task\"`: {result}"
                ));
            }
        }
        (result, "pollIntervalMs")
    } else {
        (
            result
                .get("task")
                .ok_or_else(|| format!("CreateTaskResult without `task`: {result}"))?,
            "pollInterval",
        )
    };
    let id = task
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("task without `taskId`: {task}"))?;
    if task.get("status").and_then(Value::as_str).is_none() {
        return Err(format!("task without `status`: {task}"));
    }
    Ok((
        id.to_owned(),
        task.get(interval_key).and_then(Value::as_u64),
    ))
}

/// The status of a `tasks/get` result for `id`.
///
/// Spec (SEP-2663): "The `resultType` field MUST be set to `"complete"` on this object".
pub(crate) fn task_status<'a>(
    revision: Revision,
    result: &'a Value,
    id: &str,
) -> Result<&'a str, String> {
    if result.get("taskId").and_then(Value::as_str) != Some(id) {
        return Err(format!("tasks/get answered for another task: {result}"));
    }
    if revision.tasks_are_extension()
        && result.get("resultType").and_then(Value::as_str) != Some("complete")
    {
        return Err(format!(
            "tasks/get result without `resultType: \"complete\"`: {result}"
        ));
    }
    match result.get("status").and_then(Value::as_str) {
        Some(s) if STATUSES.contains(&s) => Ok(s),
        _ => Err(format!(
            "tasks/get result without a valid `status`: {result}"
        )),
    }
}

/// The poll interval a `tasks/get` result suggests, in ms.
pub(crate) fn poll_interval(revision: Revision, result: &Value) -> Option<u64> {
    let key = if revision.tasks_are_extension() {
        "pollIntervalMs"
    } else {
        "pollInterval"
    };
    result.get(key).and_then(Value::as_u64)
}

/// When a terminal task completed, by its server's clock: its `lastUpdatedAt`.
pub(crate) fn completed_at(task: &Value) -> Result<std::time::SystemTime, String> {
    if task.get("status").and_then(Value::as_str) != Some("completed") {
        return Err(format!(
            "the task is not completed after its result: {task}"
        ));
    }
    let at = task
        .get("lastUpdatedAt")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("a task without `lastUpdatedAt`: {task}"))?;
    humantime::parse_rfc3339(at).map_err(|e| format!("`lastUpdatedAt` {at:?}: {e}"))
}

/// Check a `CallToolResult` (from `tasks/result`, or inline in a modern `tasks/get`).
pub(crate) fn tool_result_ok(result: &Value) -> Result<(), String> {
    match CallToolResult::from_value(result) {
        Err(e) => Err(format!(
            "the result is not a CallToolResult ({e}): {result}"
        )),
        Ok(r) if r.is_error => Err(format!("the tool failed: {result}")),
        Ok(_) => Ok(()),
    }
}

/// The inline result of a modern `tasks/get` of a `completed` task, checked.
///
/// Spec (SEP-2663): a completed `DetailedTask` carries "`result`: the final result of the
/// request".
pub(crate) fn inline_result_ok(result: &Value) -> Result<(), String> {
    match result.get("result") {
        Some(r) => tool_result_ok(r),
        None => Err(format!(
            "a completed task's tasks/get carries no `result`: {result}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A completed task's `lastUpdatedAt`, to the millisecond; no completion time from a
    /// task that is not completed or has none.
    #[test]
    fn completed_at_reads_the_terminal_update() {
        let t = json!({"taskId": "a", "status": "completed",
                       "lastUpdatedAt": "2026-12-06T11:30:00.125Z"});
        let at = completed_at(&t).unwrap();
        let ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        assert_eq!(ms, 1_796_556_600_125);
        let working = json!({"taskId": "a", "status": "working",
                             "lastUpdatedAt": "2026-12-06T11:30:00Z"});
        assert!(completed_at(&working).is_err());
        assert!(completed_at(&json!({"taskId": "a", "status": "completed"})).is_err());
    }

    #[test]
    fn legacy_shapes() {
        let p = create_params(Revision::V2025_11_25, "sleep", 5, Some(1000));
        assert_eq!(
            p,
            json!({"name": "sleep", "arguments": {"ms": 5}, "task": {"ttl": 1000}})
        );
        let r = json!({"task": {"taskId": "a", "status": "working", "pollInterval": 50}});
        assert_eq!(
            created_task(Revision::V2025_11_25, &r),
            Ok(("a".into(), Some(50)))
        );
        assert!(created_task(Revision::V2025_11_25, &json!({"content": []})).is_err());
        let g = json!({"taskId": "a", "status": "completed"});
        assert_eq!(task_status(Revision::V2025_11_25, &g, "a"), Ok("completed"));
        assert!(task_status(Revision::V2025_11_25, &g, "b").is_err());
    }

    #[test]
    fn modern_shapes() {
        let p = create_params(Revision::V2026_07_28, "sleep", 5, Some(1000));
        assert_eq!(p, json!({"name": "sleep", "arguments": {"ms": 5}}));
        let r =
            json!({"resultType": "task", "taskId": "a", "status": "working", "pollIntervalMs": 50});
        assert_eq!(
            created_task(Revision::V2026_07_28, &r),
            Ok(("a".into(), Some(50)))
        );
        let direct = json!({"resultType": "complete", "content": []});
        let e = created_task(Revision::V2026_07_28, &direct).unwrap_err();
        assert!(e.contains("directly"), "{e}");
        assert!(
            created_task(
                Revision::V2026_07_28,
                &json!({"taskId": "a", "status": "working"})
            )
            .is_err()
        );
        let g = json!({"resultType": "complete", "taskId": "a", "status": "completed",
            "pollIntervalMs": 20, "result": {"content": [{"type": "text", "text": "slept 5"}]}});
        assert_eq!(task_status(Revision::V2026_07_28, &g, "a"), Ok("completed"));
        assert_eq!(poll_interval(Revision::V2026_07_28, &g), Some(20));
        assert_eq!(inline_result_ok(&g), Ok(()));
        let no_type = json!({"taskId": "a", "status": "completed"});
        assert!(task_status(Revision::V2026_07_28, &no_type, "a").is_err());
        assert!(inline_result_ok(&no_type).is_err());
        let failed_tool = json!({"result": {"content": [], "isError": true}});
        assert!(inline_result_ok(&failed_tool).is_err());
    }
}
