//! The tasks extension (SEP-2663) on the existing engine and store: task creation for
//! `tools/call`, `tasks/get` with the inline payload, `tasks/update`, `tasks/cancel`.
//!
//! A tool that asks the client during a task (`ToolContext::elicit`, `sample`) goes through
//! the engine's relay as in 2025-11-25: the task moves to `input_required` and the request
//! waits in the running task's queue. Here that queue is read by `tasks/get` as
//! `inputRequests` and answered by `tasks/update`, instead of travelling on a
//! `tasks/result` stream. The queue lives in the process running the task (see
//! `docs/adr/0005-two-generations.md`); on PostgreSQL the other replicas read and answer it
//! through the store's mailbox (`docs/adr/0006-replicas.md`). Not yet: `--task-after` for `optional` tools,
//! `subscriptions/listen`.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::engine::{TaskRun, TaskSpec};
use mcp_tasks_core::{EngineError, Outcome, OutcomeKind, RequestorChannel, TaskEngine, serve};
use mcp_tasks_proto::mcp::{TaskStatus, progress_token};
use mcp_tasks_proto::meta::strip_related_task;
use mcp_tasks_proto::modern::tasks::{
    AckResult, CreateTaskResult, DetailedTask, GetTaskResult, Task, UpdateTaskParams,
};
use mcp_tasks_proto::modern::{self, TASKS_EXTENSION};
use mcp_tasks_proto::{ErrorObject, RequestId, methods};
use serde::Deserialize;
use serde_json::{Map, Value, json};

// How a modern task's result maps to its stored terminal status: as a 2025-11-25 task's
// does (an `isError` result is `failed`, with a status message), so that one task reads
// by each era's rules, whichever era created it. This era reads such a task `completed`
// with its result (`read`).
//
// Spec (SEP-2663): "`completed`: The request completed successfully and results are
// available in the `result` field. This includes tool calls that returned results with
// `isError: true`." Spec (tasks, 2025-11-25): "For tool calls specifically, this
// includes cases where the tool call result has `isError` set to `true`" (of `failed`).
// A JSON-RPC error of the handler ends the task `failed` in both (the engine's path for
// an `Err`).
use super::tool_call::ToolCall;
use super::{ModernRequest, Reply};
use crate::handlers::tools_call::classify;
use crate::session::Session;
use crate::tool::ToolContext;

/// The requestor of a modern task, as the engine sees it (the task's *origin*): there is
/// no connection to push anything to (status travels by `tasks/get`; notifications only on
/// `subscriptions/listen`, not served yet). The task's own requests do not come here: the
/// engine queues them for `tasks/get`.
///
/// Spec (SEP-2663): "`notifications/progress` and `notifications/message` notifications
/// MUST NOT be sent on the `subscriptions/listen` stream for a task, and are not
/// supported on tasks in general in this specification."
pub(super) struct Unreachable;

#[async_trait]
impl RequestorChannel for Unreachable {
    async fn request(&self, method: &str, _params: Value) -> Result<Value, ErrorObject> {
        Err(ErrorObject::internal(format!(
            "`{method}` cannot be sent to a 2026-07-28 client outside of a task's inputRequests"
        )))
    }

    async fn notify(&self, _method: &str, _params: Value) {}
}

/// The task of the 2026-07-28 `tools/call` of `session` with `params` (whether it runs
/// as a task from the start or a running handler becomes one): no per-request `task`
/// field in this era, so the server's default TTL applies; its origin is [`Unreachable`].
pub(super) fn tools_call_spec(session: &Session, params: Value) -> TaskSpec {
    TaskSpec {
        requester: session.requester.clone(),
        method: methods::TOOLS_CALL.to_owned(),
        params,
        task_field: json!({}),
        origin: Arc::new(Unreachable),
        classify,
    }
}

/// Run `tool` as a task and answer with the flat `CreateTaskResult`, once the task is
/// stored.
///
/// Spec (SEP-2663): "A server MUST NOT return `CreateTaskResult` until the task is durably
/// created — that is, until a `tasks/get` for the returned `taskId` would resolve."
/// (`TaskEngine::create` returns once the store holds the record.) "Servers MUST set
/// `resultType` to `"task"` when returning a `CreateTaskResult`".
///
/// # Errors
/// What the engine refused (limits, shutting down, store failure).
pub(super) async fn create(
    session: &Session,
    engine: &TaskEngine,
    call: ToolCall<'_>,
) -> Result<Value, ErrorObject> {
    let token = progress_token(Some(&call.params));
    let handler = Arc::clone(&call.tool.handler);
    let caps = Arc::new(call.caps);
    let log = call.log;
    let spec = tools_call_spec(session, call.params.clone());
    let runner = Box::new(move |run: TaskRun| {
        let cx = ToolContext::new(run.channel, token, run.cancel, caps, Some(run.task_id))
            .with_request_params(call.params)
            .with_log_threshold(log)
            .in_revision(mcp_tasks_proto::Revision::V2026_07_28);
        Box::pin(async move { handler.call(call.args, cx).await.map(Value::from) })
            as futures::future::BoxFuture<'static, _>
    });
    created(engine.create_stateless(spec, runner).await)
}

/// The flat `CreateTaskResult` of a task the engine created, or the error for what it
/// refused.
///
/// # Errors
/// What the engine refused (limits, shutting down, store failure).
pub(super) fn created(
    rec: Result<mcp_tasks_core::TaskRecord, EngineError>,
) -> Result<Value, ErrorObject> {
    let rec = rec.map_err(|e| serve::create_error(&e))?;
    let result = CreateTaskResult::new(Task::from(&rec.to_wire()));
    serde_json::to_value(result).map_err(ErrorObject::internal)
}

/// Serve `tasks/get`, `tasks/update` or `tasks/cancel`.
///
/// Spec (SEP-2663, Protocol Errors): "Servers MUST return this error [-32021] for
/// non-declaring clients issuing `tasks/get`, `tasks/update`, and `tasks/cancel`
/// requests"; "Invalid or nonexistent `taskId`: `-32602`". Tasks are bound as in
/// 2025-11-25: with authentication to the principal, without it the task id (a UUID v4
/// from the OS CSPRNG) is the capability. A task created in either era is visible in
/// both.
///
/// # Errors
/// The JSON-RPC error to answer with.
pub(super) async fn handle(
    req: ModernRequest<'_>,
    params: Option<&Value>,
) -> Result<Reply, ErrorObject> {
    let (session, method, meta) = (req.session, req.method, req.meta);
    if !meta.client_capabilities.has_tasks_extension() {
        return Err(modern::missing_tasks_extension(&format!(
            "`{method}` needs the `{TASKS_EXTENSION}` extension in `clientCapabilities.extensions`"
        )));
    }
    let Some(engine) = session.state.engine.as_ref() else {
        return Err(ErrorObject::method_not_found(format!(
            "`{method}`: tasks are not enabled on this server"
        )));
    };
    let who = &session.requester;
    let task_id = serve::task_id_param(params)?;
    let result = match method {
        methods::TASKS_GET if req.text => {
            let (detailed, stored) = read(engine, who, task_id, true).await?;
            return super::get_text::write(
                detailed,
                stored.as_ref(),
                &session.state.server_info_text,
            )
            .map(Reply::Text);
        }
        methods::TASKS_GET => get_value(get(engine, who, task_id, true).await?)?,
        methods::TASKS_CANCEL => {
            // Spec: "The server MUST acknowledge the request with an empty result" and the
            // task "MAY ultimately reach a terminal status other than `cancelled` if the
            // work finished before cancellation could take effect": a terminal task is
            // acknowledged too.
            match engine.cancel(task_id, who).await {
                Ok(_) | Err(EngineError::AlreadyTerminal(_)) => json!(AckResult::default()),
                Err(e) => return Err(e.to_rpc("Failed to cancel task")),
            }
        }
        _ => {
            let update = update_params(params)?;
            // Spec: "Servers SHOULD return a JSON-RPC error if the `taskId` does not
            // correspond to a known task."
            engine
                .get(task_id, who)
                .await
                .map_err(|e| e.to_rpc("Failed to update task"))?;
            // A task keeps the binding of the era that created it: a 2025-11-25 session's
            // questions are answered on its `tasks/result`, not by whoever knows the id.
            let bound = engine
                .may_answer_statelessly(task_id, who)
                .await
                .map_err(|e| e.to_rpc("Failed to update task"))?;
            if !bound {
                return Err(ErrorObject::invalid_params(format!(
                    "task {task_id} was created by a 2025-11-25 session: its input requests are answered on that session's tasks/result"
                )));
            }
            answer(engine, task_id, update).await?;
            json!(AckResult::default())
        }
    };
    Ok(Reply::Value(result))
}

/// The params of `tasks/update`, or -32602 naming the field at fault.
///
/// Spec (SEP-2663, "Error Handling"): "Servers SHOULD provide informative error messages
/// to describe the cause of errors". `inputResponses` is required and is a map of
/// `inputRequests` keys to responses, each an object (the client's result for that
/// request).
fn update_params(params: Option<&Value>) -> Result<UpdateTaskParams, ErrorObject> {
    let p = params.unwrap_or(&Value::Null);
    match p.get("inputResponses") {
        None | Some(Value::Object(_)) => {}
        Some(other) => {
            return Err(ErrorObject::invalid_params(format!(
                "`inputResponses` must be an object mapping inputRequests keys to responses, not {}",
                json_kind(other)
            )));
        }
    }
    let update = UpdateTaskParams::deserialize(p)
        .map_err(|e| ErrorObject::invalid_params(format!("tasks/update: {e}")))?;
    update.check().map_err(ErrorObject::invalid_params)?;
    Ok(update)
}

/// What kind of JSON value `v` is, for error messages (never the value itself).
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The `DetailedTask` of `task_id`.
///
/// Spec (SEP-2663, `tasks/get`): "If the status is `completed`, the server MUST return a
/// `Task` object with status `completed` and a `result` field"; "If the status is
/// `failed`, the server MUST return a `Task` object with status `failed` and the error
/// that occurred during execution"; "The `resultType` field MUST be set to `"complete"`".
/// A task created in 2025-11-25 that ended `failed` with an `isError` result reads as
/// `completed` with that result here, the extension's reading of the same outcome. A
/// 2025-11-25 task waiting for input (on its `tasks/result` stream) reads as
/// `input_required` with the requests it waits on, like a 2026-07-28 task.
///
/// `poll`: a client's `tasks/get` ([`TaskEngine::poll`]: the `poll` rate limit and the
/// audit of a terminal task's retrieval apply), not a subscription's push.
pub(super) async fn get(
    engine: &TaskEngine,
    who: &mcp_tasks_core::Requester,
    task_id: &str,
    poll: bool,
) -> Result<GetTaskResult, ErrorObject> {
    let (mut detailed, stored) = read(engine, who, task_id, poll).await?;
    if let Some(result) = stored {
        inline_value(&mut detailed, &result);
    }
    Ok(GetTaskResult::new(detailed))
}

/// What [`get`] answers, but a completed task's result still as stored (`Some`, `result`
/// not set yet): one store read, the record with its outcome, which a terminal task's
/// answer carries inline.
///
/// # Errors
/// Not found, expired, rate-limited, a store failure.
pub(super) async fn read(
    engine: &TaskEngine,
    who: &mcp_tasks_core::Requester,
    task_id: &str,
    poll: bool,
) -> Result<(DetailedTask, Option<Outcome>), ErrorObject> {
    let (task, outcome) = engine
        .get_with_stored_outcome(task_id, who, poll)
        .await
        .map_err(|e| e.to_rpc("Failed to retrieve task"))?;
    let mut detailed = DetailedTask::bare(Task::from(&task));
    match task.status {
        TaskStatus::Completed | TaskStatus::Failed => {
            // Terminal: the stored outcome, at once.
            match outcome {
                Some(result) if result.kind == OutcomeKind::Result => {
                    detailed.task.status = TaskStatus::Completed;
                    return Ok((detailed, Some(result)));
                }
                Some(error) => {
                    detailed.task.status = TaskStatus::Failed;
                    // Whichever era's tool failed it: the codes this era may carry.
                    detailed.error = error.decode().err().map(modern::valid_error);
                }
                None => {
                    return Err(EngineError::InvalidParams(format!(
                        "task {task_id} has not finished"
                    ))
                    .to_rpc("Failed to retrieve task"));
                }
            }
        }
        TaskStatus::InputRequired => {
            detailed.input_requests = Some(input_requests(engine, task_id).await?);
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    Ok((detailed, None))
}

/// Put the stored result of a completed task inline in `detailed`, as a value: without
/// the related-task `_meta` (the extension's inline result has none) and stamped
/// ([`stamp_complete`]). A stored result that does not parse ends the answer `failed`
/// with -32603, as its `tasks/result` would.
pub(super) fn inline_value(detailed: &mut DetailedTask, stored: &Outcome) {
    match stored.decode() {
        Ok(mut v) => {
            strip_related_task(&mut v);
            stamp_complete(&mut v);
            detailed.result = Some(v);
        }
        Err(e) => {
            detailed.task.status = TaskStatus::Failed;
            detailed.error = Some(e);
        }
    }
}

/// `result` as the JSON of the answer, the inline payload moved in rather than copied.
///
/// `serde_json::to_value` of the whole result would copy the payload (a deep copy of a
/// tree that can be large) and drop the original; the rest is converted and the payload
/// put in its place. Same JSON as `to_value(result)` (test
/// `the_answer_of_a_get_is_to_value_of_its_result`).
///
/// # Errors
/// -32603 when the result cannot be converted (it can: every field is JSON already).
pub(super) fn get_value(mut result: GetTaskResult) -> Result<Value, ErrorObject> {
    let payload = result.task.result.take();
    let mut value = serde_json::to_value(result).map_err(ErrorObject::internal)?;
    if let (Some(payload), Some(obj)) = (payload, value.as_object_mut()) {
        obj.insert("result".to_owned(), payload);
    }
    Ok(value)
}

/// Give the inline `result` of a completed task the `resultType` every 2026-07-28 result
/// carries, unless it has one.
///
/// Spec (SEP-2663, `CompletedTask.result`): "The structure matches the result type of the
/// original request. For example, a CallToolRequest task would return the CallToolResult
/// structure", and the 2026-07-28 `CallToolResult` requires `resultType` (schema:
/// `"required": ["content", "resultType"]`). The stored outcome is era-neutral (a
/// 2025-11-25 task stores the same result), so the field is added when it is read here.
/// The extension's reference requester (`@modelcontextprotocol/ext-tasks` 0.2.2) refuses
/// an inline result without it ("Protocol value failed schema validation").
pub(super) fn stamp_complete(result: &mut Value) {
    if let Some(map) = result.as_object_mut() {
        map.entry("resultType")
            .or_insert_with(|| Value::String("complete".to_owned()));
    }
}

/// The `inputRequests` of a running task: every request it waits on, keyed by the relay's
/// request id, without the 2025-11-25 related-task `_meta`.
///
/// Spec (SEP-2663): "The `inputRequests` field MUST contain all outstanding requests from
/// the server to the client that need to be fulfilled before the task can proceed" and
/// "Each request key in `inputRequests` MUST be unique over the lifetime of a single task"
/// (the relay numbers a task's requests and adds 122 random bits). A task running on
/// another replica: its requests as that replica wrote them to the store's mailbox
/// (`docs/adr/0006-replicas.md`).
///
/// # Errors
/// -32603 when the store fails.
async fn input_requests(
    engine: &TaskEngine,
    task_id: &str,
) -> Result<Map<String, Value>, ErrorObject> {
    Ok(engine
        .inputs_anywhere(task_id)
        .await
        .map_err(|e| e.to_rpc("Failed to retrieve task"))?
        .into_iter()
        .map(|(id, method, mut params)| {
            strip_related_task(&mut params);
            (key_of(&id), json!({ "method": method, "params": params }))
        })
        .collect())
}

/// The `inputRequests` key of a relayed request id.
fn key_of(id: &RequestId) -> String {
    match id {
        RequestId::String(s) => s.clone(),
        RequestId::Number(n) => n.to_string(),
    }
}

/// Hand each answer of `update` to the request it answers, checked first so that a
/// malformed entry changes nothing.
///
/// Spec (SEP-2663): "A server SHOULD ignore any `inputResponses` responses mapped to a key
/// that is not currently outstanding for the task" and "MAY accept a partial set of
/// responses" (the task stays `input_required` until every request is answered). Spec
/// (MRTR): "Servers SHOULD validate that the data provided by the client is a valid
/// `InputResponses` object": an answer to an `elicitation/create` needs an `action` of
/// `accept`, `decline` or `cancel`.
///
/// The caller has checked that the requester may see the task and may answer its
/// requests ([`TaskEngine::may_answer_statelessly`]: its principal with authentication;
/// without, the task id is the capability of a task created in this era, while a task a
/// 2025-11-25 session created keeps that session's binding). A task running on another
/// replica gets its answers through the store's mailbox.
async fn answer(
    engine: &TaskEngine,
    task_id: &str,
    update: UpdateTaskParams,
) -> Result<(), ErrorObject> {
    let pending = engine
        .inputs_anywhere(task_id)
        .await
        .map_err(|e| e.to_rpc("Failed to update task"))?;
    let mut answers = Vec::new();
    for (key, response) in update.input_responses {
        let Some((id, method, _)) = pending.iter().find(|(id, _, _)| key_of(id) == key) else {
            continue;
        };
        if method == methods::ELICITATION_CREATE {
            let action = response.get("action").and_then(Value::as_str);
            if !matches!(action, Some("accept" | "decline" | "cancel")) {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses[{key:?}] answers an elicitation/create: it needs `action` \"accept\", \"decline\" or \"cancel\""
                )));
            }
        }
        answers.push((id.clone(), response));
    }
    for (id, response) in answers {
        engine
            .answer_anywhere(&id, response)
            .await
            .map_err(|e| e.to_rpc("Failed to update task"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moving the payload in gives the JSON `to_value` of the whole result gives: with a
    /// payload, an error, input requests, `_meta`, or none of them.
    #[test]
    fn the_answer_of_a_get_is_to_value_of_its_result() {
        let task = json!({"taskId": "t-1", "status": "completed", "createdAt": "2026-12-04T13:00:00Z",
            "lastUpdatedAt": "2026-12-04T13:00:01Z", "ttlMs": 60000, "pollIntervalMs": 1000});
        let payloads = [
            json!({"task": task, "result": {"content": [{"type": "text", "text": "a\"b"}], "resultType": "complete", "_meta": {"k": 1}}}),
            json!({"task": task, "result": {"z": null}, "_meta": {"m": [1, 2]}}),
            json!({"task": task, "result": [1, "x"]}),
            json!({"task": task, "error": {"code": -32603, "message": "boom"}}),
            json!({"task": task}),
        ];
        for p in payloads {
            let mut fields = p["task"].as_object().unwrap().clone();
            for k in ["result", "error"] {
                if let Some(v) = p.get(k) {
                    fields.insert(k.to_owned(), v.clone());
                }
            }
            let detailed: DetailedTask = serde_json::from_value(Value::Object(fields)).unwrap();
            let mut r = GetTaskResult::new(detailed);
            r.meta = p.get("_meta").and_then(Value::as_object).cloned();
            let expected = serde_json::to_value(&r).unwrap();
            let got = get_value(r).unwrap();
            assert_eq!(got, expected, "{p}");
            assert_eq!(got.to_string(), expected.to_string(), "{p}");
        }
    }
}
