//! A typed tool, a resource and a prompt served over stdio; the tool runs as a plain call
//! or as a task, tasks kept in SQLite. `mcp-tasks-sdk` is the only dependency.

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

/// The arguments of the `summarize` prompt (prompt arguments are strings).
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct Summarize {
    /// The report to summarize.
    report: String,
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
            cx.log(LogLevel::Info, Some("render"), "rendered").await;
            Ok(format!("rendered {} ({} pages)", a.report, a.pages))
        },
    )
    .task_support(TaskSupport::Optional);
    // `resources/list` and `resources/read`.
    let styles = Resource::text(
        "report://styles",
        "styles",
        "text/css",
        "h1 { color: navy }",
    )
    .description("The style sheet reports are rendered with");
    // `prompts/list` and `prompts/get`; `report` completes from a list.
    let summarize = Prompt::typed(
        "summarize",
        "Summarize a report",
        |a: Summarize| async move {
            let ask = format!("Summarize the report {} in three sentences.", a.report);
            Ok(vec![PromptMessage::user(ContentBlock::text(ask))])
        },
    )
    .complete("report", |typed, _| async move {
        ["Q1", "Q2", "Q3", "Q4"]
            .into_iter()
            .filter(|r| r.starts_with(&typed))
            .map(str::to_owned)
            .collect()
    });
    let server = Server::builder()
        .tool(render)
        .resource(styles)
        .prompt(summarize)
        .logging()
        .store_url("sqlite:tasks.db")
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
