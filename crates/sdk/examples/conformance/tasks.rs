//! The fixtures of the tasks extension's scenarios (`tasks-*`): a sync-only tool, tools
//! that may run as tasks (slow, failing, asking for input), ones that always do, and one
//! that gathers its input by `input_required` rounds before its task (`test_tool_with_task`).

use std::time::Duration;

use mcp_tasks_sdk::prelude::*;
use mcp_tasks_sdk::serde_json::{Value, json};
use mcp_tasks_sdk::tokio;

use crate::content::NoArgs;

/// The arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

/// The arguments of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct SlowArgs {
    /// How long to compute, in seconds (0 to 600).
    #[schemars(range(max = 600))]
    seconds: u64,
    /// A label, echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

/// The arguments of `confirm_delete`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct DeleteArgs {
    /// The file to delete.
    filename: String,
}

/// A yes/no `elicitation/create` form.
fn confirm(message: String) -> Value {
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"]
        }
    })
}

/// Whether an `ElicitResult` accepted.
fn accepted(answer: &Value) -> bool {
    answer["action"] == "accept"
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        Tool::typed(
            "greet",
            "Returns a greeting at once (never a task)",
            |a: GreetArgs, _cx| async move { Ok(format!("Hello, {}!", a.name)) },
        ),
        Tool::typed(
            "slow_compute",
            "Sleeps `seconds`, then answers (a task when it takes long)",
            |a: SlowArgs, cx: ToolContext| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(a.seconds)) => {}
                    () = cx.cancellation().cancelled() => {
                        return Ok(CallToolResult::error("cancelled"));
                    }
                }
                let label = a.label.unwrap_or_default();
                Ok(CallToolResult::text(format!(
                    "computed {label} in {}s",
                    a.seconds
                )))
            },
        )
        .task_support(TaskSupport::Optional),
        Tool::typed(
            "failing_job",
            "Reports a tool execution error after about a second (always a task)",
            |_: NoArgs, _cx| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(CallToolResult::error("the job failed (on purpose)"))
            },
        )
        .task_support(TaskSupport::Required),
        Tool::typed(
            "protocol_error_job",
            "Fails with a protocol error (not a tool result)",
            |_: NoArgs, _cx| async move {
                tokio::time::sleep(Duration::from_millis(1200)).await;
                Err::<CallToolResult, _>(ToolError::rpc(ErrorObject::internal(
                    "the job crashed (on purpose)",
                )))
            },
        )
        .task_support(TaskSupport::Optional),
        Tool::typed(
            "confirm_delete",
            "Asks the client to confirm, then deletes (nothing, really)",
            |a: DeleteArgs, cx: ToolContext| async move {
                let answer = cx
                    .elicit_raw(confirm(format!("Delete {}?", a.filename)))
                    .await?;
                Ok(if accepted(&answer) {
                    format!("Deleted {}", a.filename)
                } else {
                    format!("Kept {}", a.filename)
                })
            },
        )
        .task_support(TaskSupport::Required),
        Tool::typed(
            "multi_input",
            "Asks two questions at once",
            |_: NoArgs, cx: ToolContext| async move {
                let (first, second) = tokio::try_join!(
                    cx.elicit_raw(confirm("First question?".into())),
                    cx.elicit_raw(confirm("Second question?".into())),
                )?;
                Ok(format!(
                    "first: {}, second: {}",
                    first["action"].as_str().unwrap_or("?"),
                    second["action"].as_str().unwrap_or("?")
                ))
            },
        )
        .task_support(TaskSupport::Required),
        Tool::typed(
            "test_tool_with_task",
            "Asks for a name (input rounds before the task), then greets in a task",
            |_: NoArgs, cx: ToolContext| async move {
                // 2026-07-28: an `input_required` round of the call itself; 2025-11-25:
                // the task's own question.
                let answer = cx
                    .ask(
                        "user_name",
                        "elicitation/create",
                        json!({
                            "message": "What is your name?",
                            "requestedSchema": {"type": "object",
                                "properties": {"name": {"type": "string"}}, "required": ["name"]}
                        }),
                    )
                    .await?;
                let name = answer.pointer("/content/name").and_then(Value::as_str);
                let greeting = format!("Hello, {}!", name.unwrap_or("friend"));
                // The input is in: the rest runs as a task (the reply is its
                // `CreateTaskResult`).
                cx.start_task().await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(greeting)
            },
        )
        .task_after_input(),
    ]
}
