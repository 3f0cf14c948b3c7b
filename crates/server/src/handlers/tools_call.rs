//! `tools/call`, plain or task-augmented.

use std::sync::Arc;

use mcp_tasks_core::engine::{TaskRun, TaskSpec};
use mcp_tasks_core::{RequestorChannel, serve};
use mcp_tasks_proto::mcp::{
    CallToolParams, MODEL_IMMEDIATE_RESPONSE_META, TaskSupport, progress_token,
};
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::RequestContext;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::session::{Negotiated, PeerChannel, RequestChannel, Session};
use crate::tool::ToolContext;

/// Decides the terminal status of a `CallToolResult`.
///
/// Spec: "For tool calls specifically, this includes cases where the tool call result has
/// `isError` set to `true`." and "The `tasks/get` response SHOULD include a
/// `statusMessage` field with diagnostic information about the failure."
pub fn classify(result: &Value) -> (mcp_tasks_proto::mcp::TaskStatus, Option<String>) {
    use mcp_tasks_proto::mcp::TaskStatus;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find_map(|b| b.get("text").and_then(Value::as_str)))
            .unwrap_or("the tool reported an error");
        (
            TaskStatus::Failed,
            Some(format!("Tool execution failed: {text}")),
        )
    } else {
        (TaskStatus::Completed, None)
    }
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
pub async fn handle(
    session: &Session,
    cx: &RequestContext,
    negotiated: &Negotiated,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
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
    let Some(tool) = session.tool(&call.name) else {
        return Err(ErrorObject::invalid_params(format!(
            "Unknown tool: `{}`",
            call.name
        )));
    };
    let engine = session.tasks();
    let support = tool.effective_task_support();
    let token = progress_token(Some(&params_value));

    match (engine, &call.task) {
        (Some(engine), Some(task_field)) => {
            if support == TaskSupport::Forbidden {
                return Err(ErrorObject::method_not_found(format!(
                    "tool `{}` does not support task-augmented execution (execution.taskSupport is forbidden)",
                    tool.name
                )));
            }
            let origin: Arc<dyn RequestorChannel> = Arc::new(PeerChannel(cx.peer.clone()));
            let handler = Arc::clone(&tool.handler);
            let caps = Arc::clone(&negotiated.client_capabilities);
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
                    .with_request_params(params_value);
                Box::pin(async move { handler.call(args, cx).await })
                    as futures::future::BoxFuture<'static, _>
            });
            let rec = engine
                .create(spec, runner)
                .await
                .map_err(|e| serve::create_error(&e))?;
            let mut result = serve::create_task_result(&rec)?;
            let immediate = format!(
                "Started `{}` as task {}; it runs in the background. Poll tasks/get or call tasks/result for its outcome.",
                tool.name, rec.task_id
            );
            result["_meta"] = json!({ MODEL_IMMEDIATE_RESPONSE_META: immediate });
            Ok(result)
        }
        (engine, _) => {
            if engine.is_some() && support == TaskSupport::Required {
                return Err(ErrorObject::method_not_found(format!(
                    "tool `{}` requires task-augmented execution: call it with a `task` field (execution.taskSupport is required)",
                    tool.name
                )));
            }
            let channel: Arc<dyn RequestorChannel> = Arc::new(RequestChannel(cx.clone()));
            let tcx = ToolContext::new(
                channel,
                token,
                cx.cancel.clone(),
                Arc::clone(&negotiated.client_capabilities),
                None,
            )
            .with_request_params(params_value);
            tool.handler.call(args, tcx).await
        }
    }
}
