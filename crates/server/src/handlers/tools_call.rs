//! `tools/call`, plain or task-augmented.

use std::sync::Arc;

use mcp_tasks_core::engine::{TaskRun, TaskSpec};
use mcp_tasks_core::{RequestorChannel, serve};
use mcp_tasks_proto::mcp::{
    CallToolParams, MODEL_IMMEDIATE_RESPONSE_META, Task, TaskStatus, TaskSupport, progress_token,
};
use mcp_tasks_proto::{CallToolResult, ErrorObject, methods};
use mcp_tasks_rpc::RequestContext;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::modern::Reply;
use crate::session::{Negotiated, PeerChannel, RequestChannel, Session};
use crate::tool::{Tool, ToolContext};

/// Decides the terminal status of a `CallToolResult`.
///
/// Spec: "For tool calls specifically, this includes cases where the tool call result has
/// `isError` set to `true`." and "The `tasks/get` response SHOULD include a
/// `statusMessage` field with diagnostic information about the failure."
pub fn classify(result: &Value) -> (TaskStatus, Option<String>) {
    // Only a true `isError` fails the task, whether or not the rest parses as a
    // `CallToolResult` (parsed, its `isError` is that same value): the result is parsed
    // (a copy of all its content) only then, for the message.
    if result.get("isError") != Some(&Value::Bool(true)) {
        return (TaskStatus::Completed, None);
    }
    let parsed = CallToolResult::from_value(result);
    let text = parsed
        .as_ref()
        .ok()
        .and_then(CallToolResult::first_text)
        .unwrap_or("the tool reported an error");
    (
        TaskStatus::Failed,
        Some(format!("Tool execution failed: {text}")),
    )
}

/// Serve `tools/call`.
///
/// Spec (tool-level negotiation): "If `execution.taskSupport` is not present or
/// `"forbidden"`, clients MUST NOT attempt to invoke the tool as a task. Servers SHOULD
/// return a `-32601` (Method not found) error if a client attempts to do so." and "If
/// `execution.taskSupport` is `"required"`, clients MUST invoke the tool as a task.
/// Servers MUST return a `-32601` (Method not found) error if a client does not attempt
/// to do so." Without the tasks capability, "Receivers that do not declare the task
/// capability for a request type MUST process requests of that type normally, ignoring
/// any task-augmentation metadata if present."
///
/// Arguments are checked before a task exists, and a call with bad arguments is
/// answered at once with the `isError` result, task-augmented or not: no task is
/// created for it. Spec (tools page): input validation errors are "Tool Execution
/// Errors: Reported in tool results with `isError: true`", and "Tool execution errors
/// contain actionable feedback that language models can use to self-correct and retry
/// with adjusted parameters". Schema (`CallToolResult.isError`): "Otherwise, the LLM
/// would not be able to see that an error occurred and self-correct." That feedback
/// belongs in the reply to the call, not behind a task that was doomed before it
/// started (a requestor would have to poll it, then fetch `tasks/result`, to learn that
/// a field was out of range); a `CallToolResult` is a valid answer to a task-augmented
/// `tools/call`, the one a receiver gives when it does not run the call as a task.
/// `text`: the answer is wanted as JSON text (then a created task's is written without a
/// `Value` tree).
pub(crate) async fn handle(
    session: &Session,
    cx: &RequestContext,
    negotiated: &Negotiated,
    params: Option<Value>,
    text: bool,
) -> Result<Reply, ErrorObject> {
    let (params_value, call, args, tool) = parse(session.tool_source(), params)?;
    let engine = session.tasks();
    let support = tool.effective_task_support();
    let token = progress_token(Some(&params_value));
    let as_task = engine.is_some() && call.task.is_some();
    if as_task && support == TaskSupport::Forbidden {
        return Err(ErrorObject::method_not_found(format!(
            "tool `{}` does not support task-augmented execution (execution.taskSupport is forbidden)",
            tool.name
        )));
    }
    if engine.is_some() && !as_task && support == TaskSupport::Required {
        return Err(ErrorObject::method_not_found(format!(
            "tool `{}` requires task-augmented execution: call it with a `task` field (execution.taskSupport is required)",
            tool.name
        )));
    }
    // Bad arguments: the isError result at once, no task (see the doc comment).
    if let Err(rejected) = tool.check_arguments(&args) {
        return Ok(Reply::Value(rejected.to_value()));
    }

    match (engine, &call.task) {
        (Some(engine), Some(task_field)) => {
            let origin: Arc<dyn RequestorChannel> = Arc::new(PeerChannel(cx.peer.clone()));
            let handler = Arc::clone(&tool.handler);
            let checked = tool.result_checker();
            let caps = Arc::clone(&negotiated.client_capabilities);
            let log = session.log_threshold.clone();
            let spec = TaskSpec {
                requester: session.requester.clone(),
                method: methods::TOOLS_CALL.to_owned(),
                params: params_value.clone(),
                task_field: task_field.clone(),
                origin,
                classify,
            };
            let runner = Box::new(move |run: TaskRun| {
                let cx = ToolContext::new(run.channel, token, run.cancel, caps, Some(run.task_id))
                    .with_request_params(params_value)
                    .with_log_threshold(log);
                Box::pin(async move { checked(handler.call(args, cx).await).map(Value::from) })
                    as futures::future::BoxFuture<'static, _>
            });
            let rec = engine
                .create(spec, runner)
                .await
                .map_err(|e| serve::create_error(&e))?;
            let immediate = format!(
                "Started `{}` as task {}; it runs in the background. Poll tasks/get or call tasks/result for its outcome.",
                tool.name, rec.task.task_id
            );
            Created {
                task: rec.to_wire(),
                immediate: &immediate,
            }
            .reply(text)
        }
        _ => {
            let channel: Arc<dyn RequestorChannel> = Arc::new(RequestChannel(cx.clone()));
            let tcx = ToolContext::new(
                channel,
                token,
                cx.cancel.clone(),
                Arc::clone(&negotiated.client_capabilities),
                None,
            )
            .with_request_params(params_value)
            .with_log_threshold(session.log_threshold.clone());
            tool.check_result(tool.handler.call(args, tcx).await)
                .map(|r| Reply::Value(Value::from(r)))
        }
    }
}

/// The `CreateTaskResult` of a task-augmented `tools/call`: the task and, in `_meta`, the
/// immediate response for the model.
///
/// Spec: "Receivers that accept a task-augmented request MUST return a `CreateTaskResult`
/// as the response."
struct Created<'a> {
    task: Task,
    immediate: &'a str,
}

impl Created<'_> {
    /// As text (written from the fields) or as a value.
    ///
    /// # Errors
    /// -32603 when it cannot be serialized (it always can).
    fn reply(&self, text: bool) -> Result<Reply, ErrorObject> {
        if text {
            serde_json::to_string(self).map(Reply::Text)
        } else {
            serde_json::to_value(self).map(Reply::Value)
        }
        .map_err(ErrorObject::internal)
    }
}

impl Serialize for Created<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// `_meta`: the immediate response.
        struct Meta<'a>(&'a str);
        impl Serialize for Meta<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(MODEL_IMMEDIATE_RESPONSE_META, self.0)?;
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("task", &self.task)?;
        m.serialize_entry("_meta", &Meta(self.immediate))?;
        m.end()
    }
}

/// The params of a `tools/call` (either era), parsed: the params as sent, the call (without
/// its `arguments`), the arguments (`{}` when absent or null) and the tool it names.
///
/// # Errors
/// -32602 for params that are not an object with `name`, arguments that are not an
/// object, or an unknown tool.
pub(crate) fn parse(
    tools: &dyn crate::extension::ToolSource,
    params: Option<Value>,
) -> Result<(Value, CallToolParams, Value, Arc<Tool>), ErrorObject> {
    let params_value = params.unwrap_or(Value::Null);
    if !params_value.is_object() {
        return Err(ErrorObject::invalid_params(
            "`params` must be an object with `name`",
        ));
    }
    // Read from the params in place, and move the arguments out of the parsed call: one
    // copy of a large argument less than a clone of the params and of the arguments.
    let mut call = CallToolParams::deserialize(&params_value)
        .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
    let args = match call.arguments.take() {
        None | Some(Value::Null) => json!({}),
        Some(a @ Value::Object(_)) => a,
        Some(_) => return Err(ErrorObject::invalid_params("`arguments` must be an object")),
    };
    let Some(tool) = tools.tool(&call.name) else {
        return Err(ErrorObject::invalid_params(format!(
            "Unknown tool: `{}`",
            call.name
        )));
    };
    Ok((params_value, call, args, tool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Only a true `isError` fails a task, parsed or not; its first text is the message.
    #[test]
    fn only_a_true_is_error_fails_the_task() {
        let failed = |why: &str| {
            (
                TaskStatus::Failed,
                Some(format!("Tool execution failed: {why}")),
            )
        };
        for (result, expected) in [
            (json!({"content": []}), (TaskStatus::Completed, None)),
            (
                json!({"content": [], "isError": false}),
                (TaskStatus::Completed, None),
            ),
            (json!({"isError": "true"}), (TaskStatus::Completed, None)),
            (json!("not an object"), (TaskStatus::Completed, None)),
            (
                json!({"content": [{"type": "text", "text": "bad input"}], "isError": true}),
                failed("bad input"),
            ),
            (
                json!({"content": "not a list", "isError": true}),
                failed("the tool reported an error"),
            ),
        ] {
            assert_eq!(classify(&result), expected, "{result}");
        }
    }

    /// A created task's answer, as text and as a value: the task and the immediate
    /// response in `_meta`, the same both ways.
    #[test]
    fn a_created_task_is_answered_the_same_as_text_and_as_a_value() {
        let task = json!({"taskId": "t-1", "status": "working", "statusMessage": "a \"q\"",
            "createdAt": "2026-12-06T17:00:00.000Z", "lastUpdatedAt": "2026-12-06T17:00:00.000Z",
            "ttl": 60000, "pollInterval": 1000});
        let created = Created {
            task: serde_json::from_value(task.clone()).unwrap(),
            immediate: "Started `sleep` as task t-1",
        };
        let expected = json!({"task": task,
            "_meta": {MODEL_IMMEDIATE_RESPONSE_META: "Started `sleep` as task t-1"}});
        let Ok(Reply::Text(text)) = created.reply(true) else {
            panic!("text wanted")
        };
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), expected);
        let Ok(Reply::Value(value)) = created.reply(false) else {
            panic!("a value wanted")
        };
        assert_eq!(value, expected);
    }
}
