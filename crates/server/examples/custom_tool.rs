//! Serve your own tool over stdio, runnable as a plain call or as a task.
//!
//! ```sh
//! cargo run -p mcp-tasks-server --example custom_tool
//! ```
//! then speak MCP on stdin/stdout (e.g. from the MCP Inspector, or a host config
//! `{"command": "cargo", "args": ["run", "-q", "-p", "mcp-tasks-server", "--example", "custom_tool"]}`).

use std::time::Duration;

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, codes};
use mcp_tasks_server::{CallToolResult, Server, Tool, Transport};
use serde_json::{Value, json};

/// Counts to `n`, one step every 100 ms, reporting progress; asks the user whether to go
/// on half-way (elicitation). As a task, the question moves the task to `input_required`
/// and travels on the requestor's `tasks/result` — the handler does not know or care.
fn count_tool() -> Tool {
    Tool::new(
        "count",
        "Count to `n`, asking half-way whether to go on.",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}),
        |args: Value, cx| async move {
            let n = args.get("n").and_then(Value::as_u64).ok_or_else(|| ErrorObject::invalid_params("`n` must be a positive integer"))?;
            for i in 1..=n {
                if i == n / 2 + 1 {
                    let answer = cx
                        .elicit_raw(json!({
                            "mode": "form",
                            "message": format!("Counted to {}. Go on?", i - 1),
                            "requestedSchema": {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]},
                        }))
                        .await?;
                    if answer["content"]["go"] != json!(true) {
                        return Ok(CallToolResult::text(format!("stopped at {}", i - 1)));
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = cx.cancellation().cancelled() => return Err(ErrorObject::new(codes::TASK_CANCELLED, "cancelled").into()),
                }
                #[allow(clippy::cast_precision_loss)]
                cx.progress(i as f64, Some(n as f64), None).await;
            }
            Ok(CallToolResult::text(format!("counted to {n}")))
        },
    )
    .task_support(TaskSupport::Optional)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Tasks in memory; the builder starts the engine and its sweeper, stopped by
    // `shutdown` (or when the server is dropped).
    let server = Server::builder()
        .tool(count_tool())
        .store_url("memory")
        .build()
        .await?;
    server
        .serve(Transport::Stdio, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    server.shutdown().await;
    Ok(())
}
