//! The built-in demo tools of `mcp-tasks serve`.
//!
//! | tool | arguments | task support |
//! |---|---|---|
//! | `sleep` | `ms` | optional |
//! | `fail` | `message` | optional |
//! | `error` | `message`, `code?` | optional |
//! | `ask` | `question` | required |
//! | `summarize` | `text` | optional |
//! | `progress` | `steps`, `ms` | optional |
//! | `echo` | `text` | none |

use std::time::Duration;

use mcp_tasks_proto::CallToolResult;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, codes};
use serde_json::{Value, json};

use crate::tool::{Tool, ToolContext};

/// Longest `sleep`/`progress` interval accepted: one day.
const MAX_MS: u64 = 86_400_000;

fn u64_arg(args: &Value, name: &str, max: u64) -> Result<u64, ErrorObject> {
    match args.get(name) {
        Some(v) => v.as_u64().filter(|n| *n <= max).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "`{name}` must be an integer from 0 to {max}, got {v}"
            ))
        }),
        None => Err(ErrorObject::invalid_params(format!("`{name}` is required"))),
    }
}

fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ErrorObject> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(ErrorObject::invalid_params(format!(
            "`{name}` must be a string, got {v}"
        ))),
        None => Err(ErrorObject::invalid_params(format!("`{name}` is required"))),
    }
}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": props, "required": required })
}

async fn sleep_or_cancel(cx: &ToolContext, ms: u64) -> Result<(), ErrorObject> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(()),
        () = cx.cancellation().cancelled() => Err(ErrorObject::new(codes::TASK_CANCELLED, "cancelled")),
    }
}

/// `sleep {ms}`: waits, returns `slept <ms>`; stops early when cancelled.
pub fn sleep() -> Tool {
    Tool::new(
        "sleep",
        "Wait for `ms` milliseconds, then return `slept <ms>`. Stops early when cancelled.",
        schema(
            json!({ "ms": { "type": "integer", "minimum": 0, "maximum": MAX_MS } }),
            &["ms"],
        ),
        |args, cx| async move {
            let ms = u64_arg(&args, "ms", MAX_MS)?;
            sleep_or_cancel(&cx, ms).await?;
            Ok(CallToolResult::text(format!("slept {ms}")))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// `fail {message}`: a tool result with `isError: true`.
pub fn fail() -> Tool {
    Tool::new(
        "fail",
        "Return a tool result with isError: true and `message` as its text.",
        schema(json!({ "message": { "type": "string" } }), &["message"]),
        |args, _cx| async move { Ok(CallToolResult::error(str_arg(&args, "message")?)) },
    )
    .task_support(TaskSupport::Optional)
}

/// `error {message, code?}`: fails with the JSON-RPC error `{code, message}`.
pub fn error() -> Tool {
    Tool::new(
        "error",
        "Fail with the JSON-RPC error {code (default -32603), message}.",
        schema(
            json!({ "message": { "type": "string" }, "code": { "type": "integer" } }),
            &["message"],
        ),
        |args, _cx| async move {
            let message = str_arg(&args, "message")?.to_owned();
            let code = match args.get("code") {
                None | Some(Value::Null) => codes::INTERNAL_ERROR,
                Some(v) => v.as_i64().ok_or_else(|| {
                    ErrorObject::invalid_params(format!("`code` must be an integer, got {v}"))
                })?,
            };
            Err(ErrorObject::new(code, message))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// `ask {question}`: asks the user through `elicitation/create` (form mode).
pub fn ask() -> Tool {
    Tool::new(
        "ask",
        "Ask the user `question` (elicitation, form mode) and return the answer, or (decline) / (cancel).",
        schema(json!({ "question": { "type": "string" } }), &["question"]),
        |args, cx| async move {
            let question = str_arg(&args, "question")?;
            let params = json!({
                "mode": "form",
                "message": question,
                "requestedSchema": {
                    "type": "object",
                    "properties": { "answer": { "type": "string" } },
                    "required": ["answer"],
                },
            });
            let r = cx.elicit(params).await?;
            let text = match r.get("action").and_then(Value::as_str) {
                Some("accept") => match r.get("content").and_then(|c| c.get("answer")) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => return Err(ErrorObject::invalid_params("the elicitation was accepted without an `answer`")),
                },
                Some("decline") => "(decline)".into(),
                Some("cancel") => "(cancel)".into(),
                _ => return Err(ErrorObject::invalid_params(format!("malformed elicitation result: {r}"))),
            };
            Ok(CallToolResult::text(text))
        },
    )
    .task_support(TaskSupport::Required)
}

/// `summarize {text}`: asks the client's model for a one-line summary.
pub fn summarize() -> Tool {
    Tool::new(
        "summarize",
        "Ask the client's model (sampling) for a one-line summary of `text`.",
        schema(json!({ "text": { "type": "string" } }), &["text"]),
        |args, cx| async move {
            let text = str_arg(&args, "text")?;
            let params = json!({
                "messages": [{
                    "role": "user",
                    "content": { "type": "text", "text": format!("Summarize the following text in one line:\n\n{text}") },
                }],
                "maxTokens": 200,
            });
            let r = cx.sample(params).await?;
            let content = r.get("content");
            let block = match content {
                Some(Value::Array(blocks)) => blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("text")),
                other => other,
            };
            let summary = block
                .and_then(|b| b.get("text"))
                .and_then(Value::as_str)
                .ok_or_else(|| ErrorObject::invalid_params(format!("the sampling result has no text content: {r}")))?;
            Ok(CallToolResult::text(summary))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// `progress {steps, ms}`: every `ms`, progress `{progress: i, total: steps}`.
pub fn progress() -> Tool {
    Tool::new(
        "progress",
        "Report progress `steps` times, every `ms` milliseconds, then return `done <steps>`.",
        schema(
            json!({ "steps": { "type": "integer", "minimum": 0, "maximum": 100_000 }, "ms": { "type": "integer", "minimum": 0 } }),
            &["steps", "ms"],
        ),
        |args, cx| async move {
            let steps = u64_arg(&args, "steps", 100_000)?;
            let ms = u64_arg(&args, "ms", MAX_MS)?;
            for i in 1..=steps {
                sleep_or_cancel(&cx, ms).await?;
                #[allow(clippy::cast_precision_loss)]
                cx.progress(i as f64, Some(steps as f64), None).await;
            }
            Ok(CallToolResult::text(format!("done {steps}")))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// `echo {text}`: returns the text. Lists no `execution` (never a task).
pub fn echo() -> Tool {
    Tool::new(
        "echo",
        "Return `text`.",
        schema(json!({ "text": { "type": "string" } }), &["text"]),
        |args, _cx| async move { Ok(CallToolResult::text(str_arg(&args, "text")?)) },
    )
}

/// All demo tools, in listing order.
pub fn all() -> Vec<Tool> {
    vec![
        sleep(),
        fail(),
        error(),
        ask(),
        summarize(),
        progress(),
        echo(),
    ]
}
