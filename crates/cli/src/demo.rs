//! The built-in demo tools of `mcp-tasks serve`.
//!
//! | tool | arguments | task support |
//! |---|---|---|
//! | `sleep` | `ms` (0..=86 400 000) | optional |
//! | `fail` | `message` | optional |
//! | `error` | `message`, `code?` | optional |
//! | `ask` | `question` | required |
//! | `summarize` | `text` | optional |
//! | `progress` | `steps` (0..=100 000), `ms` (0..=86 400 000) | optional |
//! | `echo` | `text` | none |
//!
//! Each is a [`Tool::typed`]: the input schema comes from the argument struct, bounds
//! from its `#[schemars(range(...))]` attributes, and the session checks the arguments
//! against it before the tool runs. Bad arguments give a `CallToolResult` with
//! `isError: true` naming the field and the bound (`ms: 86400001 is greater than the
//! maximum of 86400000`), as a plain call and as a task call alike (no task is created).

use std::time::Duration;

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, codes};
use mcp_tasks_server::{CallToolResult, Tool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Longest `sleep`/`progress` interval accepted: one day.
pub(crate) const MAX_MS: u64 = 86_400_000;

async fn sleep_or_cancel(cx: &ToolContext, ms: u64) -> Result<(), ErrorObject> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(()),
        () = cx.cancellation().cancelled() => Err(ErrorObject::new(codes::TASK_CANCELLED, "cancelled")),
    }
}

/// A tool (task support optional) that waits `ms(args)` milliseconds, stopping early
/// when cancelled, then answers with `then(args)`.
fn after_wait<A, R>(
    name: &str,
    description: &str,
    ms: fn(&A) -> u64,
    then: fn(A) -> Result<R, ErrorObject>,
) -> Tool
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    R: Into<CallToolResult> + 'static,
{
    Tool::typed(name, description, move |a: A, cx| async move {
        sleep_or_cancel(&cx, ms(&a)).await?;
        Ok(then(a)?)
    })
    .task_support(TaskSupport::Optional)
}

/// Arguments of `sleep`.
#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// Milliseconds to wait (at most one day).
    #[schemars(range(max = MAX_MS))]
    ms: u64,
}

/// `sleep {ms}`: waits, returns `slept <ms>`; stops early when cancelled.
pub(crate) fn sleep() -> Tool {
    after_wait(
        "sleep",
        "Wait for `ms` milliseconds, then return `slept <ms>`. Stops early when cancelled.",
        |a: &SleepArgs| a.ms,
        |a| Ok(format!("slept {}", a.ms)),
    )
}

/// Arguments of `fail`.
#[derive(Deserialize, JsonSchema)]
struct FailArgs {
    /// The text of the error result.
    message: String,
    /// Milliseconds to wait first (default 0, at most one day): a failing call that
    /// outlives `--task-after`.
    #[serde(default)]
    #[schemars(range(max = MAX_MS))]
    ms: u64,
}

/// `fail {message, ms?}`: a tool result with `isError: true`, after `ms`.
pub(crate) fn fail() -> Tool {
    after_wait(
        "fail",
        "Wait `ms` milliseconds (default 0), then return a tool result with isError: true and `message` as its text.",
        |a: &FailArgs| a.ms,
        |a| Ok(CallToolResult::error(a.message)),
    )
}

/// Arguments of `error`.
#[derive(Deserialize, JsonSchema)]
struct ErrorArgs {
    /// The message of the JSON-RPC error.
    message: String,
    /// Its code (default -32603).
    #[serde(default)]
    code: Option<i64>,
    /// Milliseconds to wait first (default 0, at most one day).
    #[serde(default)]
    #[schemars(range(max = MAX_MS))]
    ms: u64,
}

/// `error {message, code?, ms?}`: fails with the JSON-RPC error `{code, message}`, after
/// `ms`.
pub(crate) fn error() -> Tool {
    after_wait(
        "error",
        "Wait `ms` milliseconds (default 0), then fail with the JSON-RPC error {code (default -32603), message}.",
        |a: &ErrorArgs| a.ms,
        |a| {
            Err::<CallToolResult, _>(ErrorObject::new(
                a.code.unwrap_or(codes::INTERNAL_ERROR),
                a.message,
            ))
        },
    )
}

/// Arguments of `ask`.
#[derive(Deserialize, JsonSchema)]
struct AskArgs {
    /// What to ask the user.
    question: String,
}

/// `ask {question}`: asks the user through `elicitation/create` (form mode).
pub(crate) fn ask() -> Tool {
    Tool::typed(
        "ask",
        "Ask the user `question` (elicitation, form mode) and return the answer, or (decline) / (cancel).",
        |a: AskArgs, cx| async move {
            let r = cx
                .elicit_raw(json!({
                    "mode": "form",
                    "message": a.question,
                    "requestedSchema": {
                        "type": "object",
                        "properties": { "answer": { "type": "string" } },
                        "required": ["answer"],
                    },
                }))
                .await?;
            let text = match r.get("action").and_then(Value::as_str) {
                Some("accept") => match r.get("content").and_then(|c| c.get("answer")) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => return Err(ToolError::invalid_params("the elicitation was accepted without an `answer`")),
                },
                Some("decline") => "(decline)".into(),
                Some("cancel") => "(cancel)".into(),
                _ => return Err(ToolError::invalid_params(format!("malformed elicitation result: {r}"))),
            };
            Ok(text)
        },
    )
    .task_support(TaskSupport::Required)
}

/// Arguments of `summarize` and `echo`.
#[derive(Deserialize, JsonSchema)]
struct TextArgs {
    /// The text.
    text: String,
}

/// `summarize {text}`: asks the client's model for a one-line summary.
pub(crate) fn summarize() -> Tool {
    Tool::typed(
        "summarize",
        "Ask the client's model (sampling) for a one-line summary of `text`.",
        |a: TextArgs, cx| async move {
            let params = json!({
                "messages": [{
                    "role": "user",
                    "content": { "type": "text", "text": format!("Summarize the following text in one line:\n\n{}", a.text) },
                }],
                "maxTokens": 200,
            });
            let r = cx.sample_raw(params).await?;
            let content = r.get("content");
            let block = match content {
                Some(Value::Array(blocks)) => blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("text")),
                other => other,
            };
            let summary = block
                .and_then(|b| b.get("text"))
                .and_then(Value::as_str)
                .ok_or_else(|| ErrorObject::invalid_params(format!("the sampling result has no text content: {r}")))?;
            Ok(summary.to_owned())
        },
    )
    .task_support(TaskSupport::Optional)
}

/// Arguments of `progress`.
#[derive(Deserialize, JsonSchema)]
struct ProgressArgs {
    /// How many progress notifications.
    #[schemars(range(max = 100_000))]
    steps: u64,
    /// Milliseconds between two of them (at most one day).
    #[schemars(range(max = MAX_MS))]
    ms: u64,
}

/// `progress {steps, ms}`: every `ms`, progress `{progress: i, total: steps}`.
pub(crate) fn progress() -> Tool {
    Tool::typed(
        "progress",
        "Report progress `steps` times, every `ms` milliseconds, then return `done <steps>`.",
        |a: ProgressArgs, cx| async move {
            for i in 1..=a.steps {
                sleep_or_cancel(&cx, a.ms).await?;
                #[allow(clippy::cast_precision_loss)]
                cx.progress(i as f64, Some(a.steps as f64), None).await;
            }
            Ok(format!("done {}", a.steps))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// `echo {text}`: returns the text. Lists no `execution` (never a task).
pub(crate) fn echo() -> Tool {
    Tool::typed("echo", "Return `text`.", |a: TextArgs, _cx| async move {
        Ok(a.text)
    })
}

/// All demo tools, in listing order.
pub(crate) fn all() -> Vec<Tool> {
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
