//! A typed tool served over stdio, as a plain call or as a task; tasks kept in SQLite.
//! `mcp-tasks-sdk` is the only dependency.

use std::time::Duration;

use mcp_tasks_sdk::prelude::*;
use mcp_tasks_sdk::tokio;

/// The arguments of `render`: their JSON Schema, bounds included, is the input schema.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct Render {
    /// The report to render.
    report: String,
    /// How many pages, 1 to 100.
    #[schemars(range(min = 1, max = 100))]
    pages: u32,
}

#[tokio::main(crate = "mcp_tasks_sdk::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let render = Tool::typed(
        "render",
        "Renders a report",
        |a: Render, cx: ToolContext| async move {
            for page in 1..=a.pages {
                tokio::time::sleep(Duration::from_millis(100)).await;
                cx.progress(f64::from(page), Some(f64::from(a.pages)), None)
                    .await;
            }
            Ok(format!("rendered {} ({} pages)", a.report, a.pages))
        },
    )
    .task_support(TaskSupport::Optional);
    let server = Server::builder()
        .tool(render)
        .store_url("sqlite:tasks.db")
        .build()
        .await?;
    mcp_tasks_sdk::serve_stdio(&server, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    server.shutdown().await;
    Ok(())
}
