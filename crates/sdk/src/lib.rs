//! Serve your own tools as MCP tasks (2025-11-25, and 2026-07-28 with the tasks extension),
//! with one dependency.
//!
//! This crate re-exports what a tool author needs from the crates of mcp-tasks: typed
//! tools ([`Tool::typed`]) and their errors ([`ToolError`]), typed questions to the client
//! ([`ToolContext::elicit`], [`ToolContext::sample`]), the server builder
//! ([`Server::builder`]), serving with [`Server::serve`] over stdio or Streamable HTTP
//! ([`Transport`]; HTTP with feature `http`), the task
//! stores ([`MemoryStore`], [`SqliteStore`] with feature `sqlite`, `PgStore` with feature
//! `postgres`), and the crates your
//! own code names in derives and macros: [`schemars`], [`serde`], [`serde_json`] and
//! [`tokio`].
//!
//! # Derives and macros through this crate
//!
//! A derive finds its crate by name (`::serde`, `::schemars`), which is not in scope when
//! this crate is your only dependency. Name the re-exported path instead:
//!
//! * `#[serde(crate = "mcp_tasks_sdk::serde")]` beside `#[derive(Deserialize)]`;
//! * `#[schemars(crate = "mcp_tasks_sdk::schemars")]` beside `#[derive(JsonSchema)]`;
//! * `#[mcp_tasks_sdk::tokio::main(crate = "mcp_tasks_sdk::tokio")]` for `main`.
//!
//! (With `serde`, `schemars` and `tokio` as dependencies of your own, the plain derives
//! work too: the types are the same.)
//!
//! # A typed tool, served as a task
//!
//! The arguments are a Rust type; its JSON Schema (bounds and defaults included) is the
//! tool's `inputSchema`, and arguments that break it are an `isError` result naming the
//! field and the bound, before the handler runs and before any task is created. With
//! [`TaskSupport::Optional`] a client may call the tool plainly or as a task (the handler
//! cannot tell the difference); [`TaskSupport::Required`] accepts task calls only.
//!
//! The handler fails with a [`ToolError`]: `?` on an ordinary error (`std::io::Error`, a
//! parse error) answers the call with an `isError` result carrying the error's text, which
//! the model reads; [`ToolError::rpc`] (or [`ToolError::invalid_params`]) answers it with a
//! JSON-RPC error instead, when that is what you mean.
//!
//! ```
//! use std::time::Duration;
//!
//! use mcp_tasks_sdk::schemars::JsonSchema;
//! use mcp_tasks_sdk::serde::Deserialize;
//! use mcp_tasks_sdk::{Server, TaskSupport, Tool, ToolError, Transport, tokio};
//!
//! /// The arguments of `render`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "mcp_tasks_sdk::serde")]
//! #[schemars(crate = "mcp_tasks_sdk::schemars")]
//! struct Render {
//!     /// The report to render.
//!     report: String,
//!     /// Pages, 1 to 100.
//!     #[schemars(range(min = 1, max = 100))]
//!     pages: u32,
//! }
//!
//! fn render() -> Tool {
//!     Tool::typed("render", "Renders a report", |a: Render, cx| async move {
//!         if a.report.contains('/') {
//!             return Err(ToolError::invalid_params("`report` is a name, not a path"));
//!         }
//!         cx.progress(0.0, Some(f64::from(a.pages)), Some("rendering")).await;
//!         tokio::time::sleep(Duration::from_millis(50)).await;
//!         Ok(format!("rendered {} ({} pages)", a.report, a.pages))
//!     })
//!     .task_support(TaskSupport::Optional)
//! }
//!
//! #[tokio::main(crate = "mcp_tasks_sdk::tokio")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Tasks in memory here; `.store_url("sqlite:tasks.db")` keeps them across restarts.
//! let server = Server::builder().tool(render()).store_url("memory").build().await?;
//! # let (client_io, server_io) = tokio::io::duplex(1 << 16);
//! # let (reader, writer) = tokio::io::split(server_io);
//! # let serving = { let server = server.clone(); tokio::spawn(async move { server.serve(mcp_tasks_server::Transport::io(reader, writer), std::future::pending()).await }) };
//! # let (cr, cw) = tokio::io::split(client_io);
//! # // A 2025-11-25 client, so that the call is a task whatever its length (in the
//! # // 2026-07-28 era the server decides, and 50 ms answers directly).
//! # let mut config = mcp_tasks_client::ClientConfig::default();
//! # config.protocol = mcp_tasks_client::Revision::V2025_11_25.into();
//! # let client = mcp_tasks_client::Client::connect_io(tokio::io::BufReader::new(cr), cw, config).await?;
//! # let args = mcp_tasks_sdk::serde_json::json!({"report": "Q3", "pages": 12});
//! # let task = client.call_tool_as_task("render", args, &Default::default()).await?;
//! # let result = task.result().await?;
//! # assert_eq!(result.text(), "rendered Q3 (12 pages)");
//! # let bad = client.call_tool("render", mcp_tasks_sdk::serde_json::json!({"report": "Q3", "pages": 0})).await?;
//! # assert!(bad.is_error() && bad.text().contains("pages"), "{}", bad.text());
//! # client.close().await;
//! # let _ = serving.await;
//! # if false {
//! // Serve one client on stdin/stdout until its input ends or Ctrl-C
//! // (`Transport::http(listener, HttpOptions::new())` for Streamable HTTP).
//! server
//!     .serve(Transport::Stdio, async {
//!         let _ = tokio::signal::ctrl_c().await;
//!     })
//!     .await?;
//! # }
//! server.shutdown().await;
//! Ok(())
//! }
//! ```
//!
//! # Asking the client
//!
//! [`ToolContext::elicit`] asks the user, through the client, for a Rust type: the
//! requested schema is derived from it and the answer parsed into it, or the user declined
//! or cancelled ([`Elicitation`]). [`ToolContext::sample`] asks the client's model for a
//! message ([`Sampling`] in, [`Sampled`] out).
//!
//! ```no_run
//! use mcp_tasks_sdk::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "mcp_tasks_sdk::serde")]
//! #[schemars(crate = "mcp_tasks_sdk::schemars")]
//! struct Confirm {
//!     /// Delete the file?
//!     confirm: bool,
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "mcp_tasks_sdk::serde")]
//! #[schemars(crate = "mcp_tasks_sdk::schemars")]
//! struct Delete {
//!     /// The file to delete.
//!     path: String,
//! }
//!
//! let delete = Tool::typed("delete", "Deletes a file", |a: Delete, cx| async move {
//!     match cx.elicit::<Confirm>(format!("Delete {}?", a.path)).await? {
//!         Elicitation::Accepted(Confirm { confirm: true }) => {
//!             std::fs::remove_file(&a.path)?;
//!             let note = cx.sample(Sampling::prompt(format!("A haiku on losing {}", a.path), 60)).await?;
//!             Ok(format!("deleted {}\n{}", a.path, note.text()))
//!         }
//!         _ => Ok(format!("kept {}", a.path)),
//!     }
//! });
//! # let _ = delete;
//! ```
//!
//! `examples/forecast.rs` serves a typed tool over stdio or Streamable HTTP:
//! `cargo run -p mcp-tasks-sdk --example forecast -- --listen 127.0.0.1:8080`.

#[doc(inline)]
pub use mcp_tasks_server::{
    BuildError, CallToolResult, ContentBlock, Elicitation, GetPromptResult, LogLevel,
    MAX_COMPLETION_VALUES, MAX_SUBSCRIPTIONS_PER_SESSION, Prompt, PromptContext, PromptMessage,
    ReadRequest, Resource, ResourceContents, ResourceTemplate, Role, SHUTDOWN_MESSAGE, Sampled,
    Sampling, Server, ServerBuilder, ServerConfig, Tool, ToolContext, ToolError, ToolHandler,
    Transport, object_schema_for,
};

/// Serving over Streamable HTTP ([`Transport::http`]): its [`HttpOptions`].
#[cfg(feature = "http")]
pub mod http {
    pub use mcp_tasks_server::http::{
        BearerTokens, HttpConfig, HttpOptions, OriginPolicy, ReplyMode, reply_mode,
    };
}
#[cfg(feature = "http")]
#[doc(inline)]
pub use mcp_tasks_server::http::HttpOptions;

#[doc(inline)]
pub use mcp_tasks_proto::mcp::TaskSupport;
#[doc(inline)]
pub use mcp_tasks_proto::{ErrorObject, codes};

#[doc(inline)]
pub use mcp_tasks_core::{Clock, MemoryStore, Policy, SystemClock, TaskStore};
#[cfg(feature = "postgres")]
#[doc(inline)]
pub use mcp_tasks_store_postgres::{PgConfig, PgOptions, PgStore};
#[cfg(feature = "sqlite")]
#[doc(inline)]
pub use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};

pub use schemars;
pub use serde;
pub use serde_json;
pub use tokio;

/// The usual imports: `use mcp_tasks_sdk::prelude::*;`.
pub mod prelude {
    pub use crate::schemars::JsonSchema;
    pub use crate::serde::Deserialize;
    pub use crate::{
        CallToolResult, ContentBlock, Elicitation, ErrorObject, GetPromptResult, LogLevel, Prompt,
        PromptMessage, Resource, ResourceContents, ResourceTemplate, Sampled, Sampling, Server,
        TaskSupport, Tool, ToolContext, ToolError, Transport,
    };
}
