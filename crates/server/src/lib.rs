//! The receiver of mcp-tasks: an MCP 2025-11-25 server whose tools run as tasks.
//!
//! * [`tool`]: the public API to serve your own tools ([`Tool`], [`ToolContext`]);
//! * [`Server`]: tools + the task engine + configuration, shared by every session;
//! * [`session`]: one connection's lifecycle and dispatch, one file per protocol method
//!   under [`handlers`];
//! * [`demo`]: the built-in demo tools of `mcp-tasks serve`.
//!
//! ```no_run
//! use mcp_tasks_server::{Server, ServerConfig, Tool};
//! use mcp_tasks_proto::mcp::{TaskSupport, text_result};
//! use serde_json::json;
//!
//! # async fn run() -> std::io::Result<()> {
//! let hello = Tool::new("hello", "Greets", json!({"type": "object"}), |_args, _cx| async move {
//!     Ok(text_result("hello", false))
//! })
//! .task_support(TaskSupport::Optional);
//! let server = Server::new(ServerConfig::default(), vec![hello], None);
//! server.serve_stdio(tokio::io::stdin(), tokio::io::stdout()).await
//! # }
//! ```

pub mod demo;
pub mod extension;
pub mod handlers;
pub mod session;
pub mod tool;

use std::sync::Arc;

use mcp_tasks_core::{Requester, TaskEngine};
use mcp_tasks_rpc::Peer;

pub use extension::{ExtensionFactory, SessionExtension};
pub use session::Session;
pub use tool::{Tool, ToolContext, ToolHandler};

/// Configuration of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// Instructions for the model, if any.
    pub instructions: Option<String>,
    /// Bound of one stdio line.
    pub max_line_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: "mcp-tasks".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            max_line_bytes: mcp_tasks_rpc::stdio::DEFAULT_MAX_LINE,
        }
    }
}

/// What every session of a server shares.
pub struct ServerState {
    /// Configuration.
    pub config: ServerConfig,
    /// Tools by name, in listing order.
    pub tools: Vec<Tool>,
    /// The task engine; `None` when tasks are turned off (`--no-tasks`).
    pub engine: Option<TaskEngine>,
    /// Makes each session's extension (a gateway); `None` for a plain server.
    pub extension: Option<Arc<dyn ExtensionFactory>>,
}

impl ServerState {
    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A server: tools, the task engine and configuration. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    state: Arc<ServerState>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("tools", &self.state.tools.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with these tools; `engine` `None` turns tasks off.
    pub fn new(config: ServerConfig, tools: Vec<Tool>, engine: Option<TaskEngine>) -> Self {
        Self {
            state: Arc::new(ServerState {
                config,
                tools,
                engine,
                extension: None,
            }),
        }
    }

    /// A server whose sessions are each extended by what `extension` makes (a gateway in
    /// front of an upstream server): see [`extension`].
    pub fn with_extension(
        config: ServerConfig,
        tools: Vec<Tool>,
        engine: Option<TaskEngine>,
        extension: Arc<dyn ExtensionFactory>,
    ) -> Self {
        Self {
            state: Arc::new(ServerState {
                config,
                tools,
                engine,
                extension: Some(extension),
            }),
        }
    }

    /// The shared state.
    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// The task engine, if tasks are on.
    pub fn engine(&self) -> Option<&TaskEngine> {
        self.state.engine.as_ref()
    }

    /// A new session for a connection of `requester`. `can_list` says whether the
    /// receiver can identify the requester (and so declares `tasks.list`). Fills in
    /// `requester.session` (when unset) with a fresh unguessable id.
    pub fn session(&self, mut requester: Requester, can_list: bool) -> Arc<Session> {
        if requester.session.is_none() {
            requester.session = Some(mcp_tasks_core::engine::new_task_id());
        }
        Arc::new(Session::new(Arc::clone(&self.state), requester, can_list))
    }

    /// Serve one stdio connection (the local peer sees its whole store) until the input
    /// ends.
    ///
    /// # Errors
    /// I/O errors of the streams.
    pub async fn serve_stdio<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let session = self.session(Requester::local(), true);
        let (peer, outbound) = Peer::new(session);
        let reader = tokio::io::BufReader::with_capacity(64 * 1024, reader);
        mcp_tasks_rpc::stdio::serve(
            peer,
            outbound,
            reader,
            writer,
            self.state.config.max_line_bytes,
        )
        .await
    }
}
