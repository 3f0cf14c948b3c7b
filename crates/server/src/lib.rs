//! The receiver of mcp-tasks: an MCP server (2025-11-25, and 2026-07-28 with the tasks
//! extension) whose tools run as tasks.
//!
//! * [`tool`]: the public API to serve your own tools ([`Tool`], [`ToolContext`]);
//! * [`Server`]: tools + the task engine + configuration, shared by every session, made
//!   by [`Server::builder`] ([`builder`]) which opens the store and starts the engine;
//! * [`Server::serve`] over a [`Transport`] (stdio, byte streams, or with feature `http`
//!   Streamable HTTP): serving a server until a shutdown signal, with graceful shutdown;
//! * [`session`]: one connection's lifecycle and dispatch, one file per protocol method
//!   under `handlers`; a request carrying the 2026-07-28 `_meta` is served statelessly
//!   by the `modern` module instead (`docs/adr/0005-two-generations.md`).
//!
//! ```no_run
//! use mcp_tasks_server::{Server, Tool, Transport};
//! use mcp_tasks_proto::CallToolResult;
//! use mcp_tasks_proto::mcp::TaskSupport;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let hello = Tool::new("hello", "Greets", json!({"type": "object"}), |_args, _cx| async move {
//!     Ok(CallToolResult::text("hello"))
//! })
//! .task_support(TaskSupport::Optional);
//! let server = Server::builder().tool(hello).store_url("memory").build().await?;
//! server
//!     .serve(Transport::Stdio, async {
//!         let _ = tokio::signal::ctrl_c().await;
//!     })
//!     .await?;
//! server.shutdown().await;
//! # Ok(()) }
//! ```

pub mod builder;
pub mod catalog;
pub mod extension;
mod handlers;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub mod http_metrics;
pub mod logging;
mod modern;
mod questions;
#[cfg(feature = "http")]
mod replicas;
mod serve;
pub mod session;
pub mod tool;
mod tool_error;
#[cfg(feature = "schemars")]
mod typed;
#[cfg(feature = "http")]
pub mod ui;
mod validate;

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::{Guard, Metrics, Requester, TaskEngine};
use mcp_tasks_rpc::Peer;
use mcp_tasks_rpc::stdio::LineIo;

pub use builder::{BuildError, ServerBuilder};
pub use catalog::complete::MAX_COMPLETION_VALUES;
pub use catalog::prompt::{GetPromptResult, Prompt, PromptContext, PromptMessage, Role};
pub use catalog::resource::{ReadRequest, Resource, ResourceTemplate};
pub use catalog::{Catalog, MAX_SUBSCRIBED_URI_BYTES, MAX_SUBSCRIPTIONS_PER_SESSION};
pub use extension::{
    ExtensionFactory, Fallback, MethodNotFound, ServerTools, SessionParts, ToolSource,
};
pub use handlers::initialize::MAX_INITIALIZE_KEPT_BYTES;
/// The status a task gets from its tool's result (a gateway resuming an upstream task).
pub use handlers::tools_call::classify;
#[cfg(feature = "http")]
pub use http::HttpOptions;
pub use logging::{LogLevel, LogThreshold};
pub use mcp_tasks_proto::{CallToolResult, ContentBlock, ResourceContents};
/// The longest 2026-07-28 `requestState` a server issues or accepts (see the tool docs).
pub use modern::mrtr::{
    MAX_PARKED, MAX_PARKED_BYTES, MAX_PARKED_BYTES_PER_REQUESTER, MAX_PARKED_PER_REQUESTER,
    PARK_TTL, STATE_TTL,
};
pub use modern::mrtr_state::MAX_REQUEST_STATE_BYTES;
pub use questions::{Elicitation, Sampled, Sampling};
#[cfg(feature = "schemars")]
pub use schemars;
pub use serve::Transport;
pub use session::Session;
pub use tool::{Tool, ToolContext, ToolHandler};
pub use tool_error::ToolError;
#[cfg(feature = "schemars")]
pub use typed::object_schema_for;

/// Configuration of a server: [`ServerConfig::default`], then the `with_*` setters (or
/// the setters of [`ServerBuilder`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// Instructions for the model, if any.
    pub instructions: Option<String>,
    /// Bound of one stdio line.
    pub max_line_bytes: usize,
    /// Once the stdio input has ended, how long the requests in flight may still answer
    /// (their responses are written) before they are cancelled and the session closes.
    pub shutdown_grace: Duration,
    /// How long a 2026-07-28 call of an `optional` tool (by a client with the tasks
    /// extension) runs directly before it becomes a task (`--task-after`).
    pub task_after: Duration,
}

/// What a task still running when the server stops is failed with (at the end of a stdio
/// input, or after the shutdown grace period on SIGTERM).
pub const SHUTDOWN_MESSAGE: &str = "The server shut down before the task finished";

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: "mcp-tasks".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            max_line_bytes: mcp_tasks_rpc::stdio::DEFAULT_MAX_LINE,
            shutdown_grace: Duration::from_secs(10),
            task_after: Duration::from_secs(1),
        }
    }
}

impl ServerConfig {
    /// `serverInfo.name` and `serverInfo.version`.
    #[must_use]
    pub fn with_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Instructions for the model.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    mcp_tasks_proto::setters! {
        /// See [`Self::max_line_bytes`].
        pub fn with_max_line_bytes(max_line_bytes: usize);
        /// See [`Self::shutdown_grace`].
        pub fn with_shutdown_grace(shutdown_grace: Duration);
        /// See [`Self::task_after`].
        pub fn with_task_after(task_after: Duration);
    }
}

/// The background work of a built server's engine (sweeper, lease renewal): stopped when
/// the server is shut down or its state dropped.
#[derive(Default)]
struct Background {
    handle: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Background {
    fn take(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.handle.lock().take()
    }
}

/// What every session of a server shares.
pub struct ServerState {
    /// Configuration.
    pub config: ServerConfig,
    /// Tools by name, in listing order (shared: a call takes its tool without copying its
    /// schema).
    pub tools: Vec<Arc<Tool>>,
    /// Resources, prompts, completions and logging.
    pub catalog: Catalog,
    /// The task engine; `None` when tasks are turned off (`--no-tasks`).
    pub engine: Option<TaskEngine>,
    /// Makes the tool source and fallback of each session (a gateway); `None` for a plain
    /// server (its own tools, -32601 for anything else).
    pub extension: Option<Arc<dyn ExtensionFactory>>,
    /// The server's metrics (`GET /metrics`): its own registry, shared with its engine.
    pub metrics: Metrics,
    /// The rate limits, the watch for suspicious patterns and the audit trail, shared with
    /// its engine.
    pub guard: Guard,
    /// Where tasks are kept, for logs (`memory`, `sqlite:PATH`, `custom`, `none`).
    store_description: String,
    background: Background,
    /// 2026-07-28 direct calls waiting for the client's answers (multi round-trip).
    pub(crate) parked: modern::mrtr::Parked,
    /// `_meta["io.modelcontextprotocol/serverInfo"]` of every 2026-07-28 result, made once.
    pub(crate) server_info: serde_json::Value,
    /// The same as JSON text, for answers written without a `Value` tree.
    pub(crate) server_info_text: Box<serde_json::value::RawValue>,
    /// Sessions shared with the other replicas on the store's database (PostgreSQL).
    #[cfg(feature = "http")]
    pub(crate) shared_sessions: std::sync::OnceLock<replicas::Directory>,
}

impl Drop for ServerState {
    fn drop(&mut self) {
        if let Some(handle) = self.background.take() {
            if let Some(engine) = &self.engine {
                engine.shutdown();
            }
            handle.abort();
        }
    }
}

impl ServerState {
    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A server: tools, the task engine and configuration. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    state: Arc<ServerState>,
}

mcp_tasks_proto::debug_non_exhaustive!(Server, |s| { tools: s.state.tools.len() });

impl Server {
    /// A [`ServerBuilder`]: the one way to make a server (its store, engine and
    /// background work are taken care of).
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    fn assemble(
        config: ServerConfig,
        (tools, catalog): (Vec<Tool>, Catalog),
        engine: Option<TaskEngine>,
        extension: Option<Arc<dyn ExtensionFactory>>,
        store_description: String,
        guard: Option<Guard>,
    ) -> Self {
        // One registry per server, shared with its engine (which may have made it).
        let metrics = engine
            .as_ref()
            .map_or_else(Metrics::new, |e| e.metrics().clone());
        metrics.set_tools(tools.iter().map(|t| t.name.clone()));
        let tools: Vec<Arc<Tool>> = tools.into_iter().map(Arc::new).collect();
        // The engine's guard when there is an engine (it was given its guard already).
        let guard = match (&engine, guard) {
            (Some(e), _) => e.guard().clone(),
            (None, g) => {
                let g = g.unwrap_or_default();
                g.set_metrics(metrics.clone());
                g
            }
        };
        if let Some(ext) = &extension {
            ext.set_metrics(&metrics);
        }
        let server_info = modern::server_info_meta(&config);
        // A `Value` always serializes (`null` were it ever to fail).
        let server_info_text = serde_json::value::to_raw_value(&server_info).unwrap_or_default();
        Self {
            state: Arc::new(ServerState {
                server_info,
                server_info_text,
                config,
                tools,
                catalog,
                engine,
                metrics,
                guard,
                extension,
                store_description,
                background: Background::default(),
                parked: modern::mrtr::Parked::default(),
                #[cfg(feature = "http")]
                shared_sessions: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Start the engine's background work, owned by this server (see [`Self::shutdown`]).
    fn start_background(&self) {
        if let Some(engine) = self.engine() {
            let handle = engine.start_background();
            *self.state.background.handle.lock() = Some(handle);
        }
    }

    /// Tell the 2025-11-25 sessions that subscribed to `uri` (`resources/subscribe`) that
    /// the resource changed: each gets `notifications/resources/updated`.
    ///
    /// Spec (2025-11-25, resources): "When a resource changes, servers that declared the
    /// `listChanged` capability" ... "Update Notification:
    /// `notifications/resources/updated`" with the `uri` of the resource.
    pub fn resource_updated(&self, uri: &str) {
        // No subscriber: nothing to do (the error says only that).
        let _ = self.state.catalog.updates.send(Arc::from(uri));
    }

    /// Where tasks are kept, for logs: `memory`, `sqlite:PATH`, `custom` (a store given
    /// to [`ServerBuilder::store`]), `none` (tasks off).
    pub fn store_description(&self) -> &str {
        &self.state.store_description
    }

    /// Stop the engine: no new task is accepted, local work is cancelled, and the
    /// background work (sweeper, lease renewal) of a built server ends (waited for up to
    /// one second). Tasks still running are not failed here: see
    /// [`Self::fail_running_tasks`] (which [`Self::serve`] calls after the grace period).
    pub async fn shutdown(&self) {
        if let Some(engine) = self.engine() {
            engine.shutdown();
        }
        if let Some(handle) = self.state.background.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), handle).await;
        }
    }

    /// Whether the background work of a built server still runs.
    #[cfg(test)]
    fn background_running(&self) -> bool {
        self.state
            .background
            .handle
            .lock()
            .as_ref()
            .is_some_and(|h| !h.is_finished())
    }

    /// A handle that says when the background work has ended.
    #[cfg(test)]
    fn background_probe(&self) -> tokio::task::AbortHandle {
        self.state
            .background
            .handle
            .lock()
            .as_ref()
            .map(tokio::task::JoinHandle::abort_handle)
            .expect("a built server with tasks on has background work")
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
    /// receiver can identify the requester (and so declares `tasks.list`). A requester
    /// without [`Requester::session`] is given a fresh, unguessable one.
    pub fn session(&self, mut requester: Requester, can_list: bool) -> Arc<Session> {
        if requester.session.is_none() {
            requester.session = Some(mcp_tasks_core::engine::new_task_id());
        }
        Arc::new(Session::new(Arc::clone(&self.state), requester, can_list))
    }

    /// Fail every task this process still runs with [`SHUTDOWN_MESSAGE`] and stop its
    /// work; returns how many there were.
    pub async fn fail_running_tasks(&self) -> usize {
        let Some(engine) = self.engine() else {
            return 0;
        };
        let running = engine.running_count();
        if running > 0 {
            tracing::warn!(
                tasks = running,
                "failing the tasks still running: {SHUTDOWN_MESSAGE}"
            );
            engine.fail_running(SHUTDOWN_MESSAGE).await;
        }
        running
    }

    /// Serve one client on `reader` and `writer` (newline-delimited JSON-RPC; the local
    /// peer sees its whole store) until the input ends: see [`Server::serve`].
    async fn serve_lines<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let session = self.session(Requester::local(), true);
        let (peer, outbound) = Peer::new(session);
        let reader = tokio::io::BufReader::with_capacity(64 * 1024, reader);
        let grace = self.state.config.shutdown_grace;
        let after_input = {
            let peer = peer.clone();
            async move {
                self.fail_running_tasks().await;
                if tokio::time::timeout(grace, peer.idle()).await.is_err() {
                    tracing::info!(
                        requests = peer.inflight(),
                        "input ended: requests still in flight after the shutdown grace are cancelled"
                    );
                }
            }
        };
        let io = LineIo::new(reader, writer).max_line(self.state.config.max_line_bytes);
        let served = mcp_tasks_rpc::stdio::serve_then(peer, outbound, io, after_input).await;
        self.fail_running_tasks().await;
        served
    }
}
