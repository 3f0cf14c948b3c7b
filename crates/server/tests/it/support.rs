//! A server in process: two tools of its own (`echo`, and `sleep`, which may run as a
//! task), a memory store, and the requestor's end of the pipe.

use std::time::Duration;

use mcp_tasks_proto::CallToolResult;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, codes};
use mcp_tasks_server::{Server, ServerConfig, Tool};
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};

/// `echo {text}`: the text back.
fn echo() -> Tool {
    Tool::new(
        "echo",
        "Returns its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args: Value, _cx| async move {
            let text = args["text"].as_str().unwrap_or_default().to_owned();
            Ok(CallToolResult::text(text))
        },
    )
}

/// `sleep {ms}`: "slept MS" after that long; may run as a task.
fn sleep() -> Tool {
    Tool::new(
        "sleep",
        "Sleeps.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        |args: Value, _cx| async move {
            let ms = args["ms"].as_u64().ok_or_else(|| {
                ErrorObject::new(codes::INVALID_PARAMS, "`ms` must be an integer")
            })?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(CallToolResult::text(format!("slept {ms}")))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// A server with `config`, serving the other end of the returned pipe.
pub(crate) async fn serve(config: ServerConfig) -> Wire {
    let server = Server::builder()
        .config(config)
        .tools([echo(), sleep()])
        .with_policy(|p| p.poll_interval_ms = 50)
        .build()
        .await
        .expect("a server with tasks in memory");
    wire_to(server)
}

/// `server` serving the other end of the returned pipe, until the test ends.
pub(crate) fn wire_to(server: Server) -> Wire {
    let (wire, (reader, writer)) = Wire::pair();
    tokio::spawn(async move {
        server
            .serve(
                mcp_tasks_server::Transport::io(reader, writer),
                std::future::pending(),
            )
            .await
    });
    wire
}

/// A server with the default configuration.
pub(crate) async fn server() -> Wire {
    serve(ServerConfig::default()).await
}

/// The text of a `CallToolResult`.
pub(crate) fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}
