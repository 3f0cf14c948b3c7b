//! [`ServerBuilder`]: a server with its store opened, its engine started and its
//! background work running, in the one order that is right.
//!
//! ```no_run
//! use mcp_tasks_server::{Server, Tool};
//! use mcp_tasks_proto::CallToolResult;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let hello = Tool::new("hello", "Greets", serde_json::json!({"type": "object"}), |_, _| async {
//!     Ok(CallToolResult::text("hello"))
//! });
//! let server = Server::builder()
//!     .tool(hello)
//!     .store_url("memory")
//!     .build()
//!     .await?;
//! // ... serve it, then:
//! server.shutdown().await;
//! # Ok(()) }
//! ```

#[cfg(feature = "sqlite")]
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::{
    Clock, EngineError, Guard, Instrumented, MemoryStore, Metrics, Policy, StoreError, SystemClock,
    TaskEngine, TaskStore,
};
use mcp_tasks_proto::logged::redact_url;

use crate::catalog::Catalog;
use crate::catalog::prompt::Prompt;
use crate::catalog::resource::{Resource, ResourceTemplate};
use crate::extension::ExtensionFactory;
use crate::tool::Tool;
use crate::{Server, ServerConfig};

/// Why [`ServerBuilder::build`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The store URL names no store this build knows.
    #[error(
        "unknown store `{}` (expected `memory`, `sqlite:PATH[?synchronous=normal]`{sqlite} or \
         `postgres://USER@HOST:PORT/DB[?pool=N&statement_timeout=5s]`{postgres})",
        redact_url(.0),
        sqlite = if cfg!(feature = "sqlite") { "" } else { ", which needs the `sqlite` feature," },
        postgres = if cfg!(feature = "postgres") { "" } else { ", which needs the `postgres` feature" }
    )]
    UnknownStore(String),
    /// The store could not be opened.
    #[error("{store}: {source}")]
    OpenStore {
        /// The store URL (or path) that was asked for.
        store: String,
        /// What went wrong.
        source: StoreError,
    },
    /// The store failed when the engine took its lease and failed (or resumed) the tasks
    /// of executors that died.
    #[error("the task store failed at start-up: {0}")]
    Start(EngineError),
}

/// Where a built server keeps its tasks.
enum StoreChoice {
    /// Tasks are turned off.
    None,
    /// A store the caller opened.
    Given(Arc<dyn TaskStore>),
    /// `memory` or `sqlite:PATH[?...]`, opened by [`ServerBuilder::build`].
    Url(String),
    /// A SQLite file with these options.
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf, mcp_tasks_store_sqlite::SqliteOptions),
}

/// Builds a [`Server`]: see [`Server::builder`].
///
/// [`Self::build`] opens the store, creates the engine, installs the resumer of the
/// extension (a gateway's, which must exist before the engine starts: the engine resumes
/// orphaned tasks at start-up), starts the engine (takes the executor lease, fails the
/// tasks of executors that died) and starts its background work (expiry sweeper, lease
/// renewal, orphan failing). That work lives as long as the server and stops with
/// [`Server::shutdown`] or when the last clone of the server is dropped.
#[must_use = "a builder does nothing until `build` is awaited"]
pub struct ServerBuilder {
    config: ServerConfig,
    tools: Vec<Tool>,
    catalog: Catalog,
    store: StoreChoice,
    policy: Policy,
    clock: Arc<dyn Clock>,
    extension: Option<Arc<dyn ExtensionFactory>>,
    guard: Option<Guard>,
}

mcp_tasks_proto::debug_non_exhaustive!(ServerBuilder, |s| {
    config: s.config,
    tools: s.tools.len(),
    policy: s.policy,
});

mcp_tasks_proto::default_is_new!(ServerBuilder);

impl ServerBuilder {
    /// No tools, tasks on in an in-memory store, [`Policy::default`],
    /// [`ServerConfig::default`].
    pub fn new() -> Self {
        Self {
            config: ServerConfig::default(),
            tools: Vec::new(),
            catalog: Catalog::default(),
            store: StoreChoice::Url("memory".into()),
            policy: Policy::default(),
            clock: Arc::new(SystemClock),
            extension: None,
            guard: None,
        }
    }

    /// The rate limits, watch for suspicious patterns and audit trail of the server
    /// (default: no limits, the default watch, `tracing` audit lines only).
    pub fn guard(mut self, guard: Guard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// Serve `tool` too (tools are listed in the order they are added).
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Serve these tools too.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Serve this resource (`resources/list`, `resources/read`, `resources/subscribe`);
    /// the server declares the `resources` capability.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.catalog.resources.push(resource);
        self
    }

    /// Serve the resources under this URI template (`resources/templates/list`,
    /// `resources/read` of a URI it matches).
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.catalog.templates.push(template);
        self
    }

    /// Serve this prompt (`prompts/list`, `prompts/get`); the server declares `prompts`,
    /// and `completions` when an argument has a completer.
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.catalog.prompts.push(prompt);
        self
    }

    /// Declare the `logging` capability and serve `logging/setLevel` (2025-11-25): the
    /// messages tools send with [`crate::ToolContext::log`] reach the client at the level
    /// it set and above (all of them until it sets one). A 2026-07-28 request gets the
    /// messages at the level of its `_meta` (none without one), with or without this.
    pub fn logging(mut self) -> Self {
        self.catalog.logging = true;
        self
    }

    /// The whole configuration (replaces what the other setters of it set).
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// `serverInfo.name` and `serverInfo.version`.
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.config.name = name.into();
        self.config.version = version.into();
        self
    }

    /// Instructions for the model.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config.instructions = Some(instructions.into());
        self
    }

    /// See [`ServerConfig::shutdown_grace`].
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// See [`ServerConfig::max_line_bytes`].
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.config.max_line_bytes = bytes;
        self
    }

    /// TTLs, poll interval, per-requester and store limits, lease length.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Edit the policy in place (e.g. `|p| p.limits.max_active = Some(10)`).
    pub fn with_policy(mut self, edit: impl FnOnce(&mut Policy)) -> Self {
        edit(&mut self.policy);
        self
    }

    /// The clock of the engine (tests use a manual one).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Keep tasks in `store`.
    pub fn store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = StoreChoice::Given(store);
        self
    }

    /// Keep tasks in the store `url` names, opened by [`Self::build`]: `memory`,
    /// (feature `sqlite`) `sqlite:PATH[?synchronous=full|normal][&busy_timeout_ms=N]`, or
    /// (feature `postgres`) `postgres://USER[:PASSWORD]@HOST:PORT/DB[?pool=N&
    /// statement_timeout=5s]` (also `postgresql://`; the password may come from
    /// `PGPASSWORD`; see `mcp_tasks_store_postgres::PgConfig::parse` for every option).
    pub fn store_url(mut self, url: impl Into<String>) -> Self {
        self.store = StoreChoice::Url(url.into());
        self
    }

    /// Keep tasks in the SQLite file `path` (created if missing).
    #[cfg(feature = "sqlite")]
    pub fn sqlite(
        mut self,
        path: impl Into<PathBuf>,
        options: mcp_tasks_store_sqlite::SqliteOptions,
    ) -> Self {
        self.store = StoreChoice::Sqlite(path.into(), options);
        self
    }

    /// Turn tasks off: no `tasks` capability, every tool runs as a plain call, no store.
    pub fn no_tasks(mut self) -> Self {
        self.store = StoreChoice::None;
        self
    }

    /// Compose every session with the tool source and fallback `extension` makes (a
    /// gateway in front of an upstream server); its [`ExtensionFactory::resumer`] is
    /// installed before the engine starts.
    pub fn extension(mut self, extension: Arc<dyn ExtensionFactory>) -> Self {
        self.extension = Some(extension);
        self
    }

    /// Open the store, start the engine and its background work: see [`ServerBuilder`].
    ///
    /// # Errors
    /// An unknown store URL, a store that cannot be opened, or a store failure at
    /// start-up.
    pub async fn build(self) -> Result<Server, BuildError> {
        let opened = open_store(self.store).await?;
        let Some((store, description, sessions)) = opened else {
            return Ok(Server::assemble(
                self.config,
                (self.tools, self.catalog),
                None,
                self.extension,
                "none".into(),
                self.guard,
            ));
        };
        // One registry per server: its engine counts into it, and every store operation is
        // timed and its failures counted.
        let metrics = Metrics::new();
        let store: Arc<dyn TaskStore> = Arc::new(Instrumented::new(store, metrics.clone()));
        if let Some(ext) = &self.extension {
            ext.attach_store(&store);
        }
        let engine = TaskEngine::new(store, self.policy, self.clock);
        if let Some(ext) = &self.extension {
            ext.set_metrics(&metrics);
        }
        engine.set_metrics(metrics);
        if let Some(guard) = self.guard {
            engine.set_guard(guard);
        }
        // Before the engine starts: it resumes orphaned tasks (a gateway's upstream tasks)
        // at start-up and fails the ones nobody can resume.
        if let Some(resumer) = self.extension.as_ref().and_then(|e| e.resumer()) {
            engine.set_resumer(resumer);
        }
        engine.start().await.map_err(BuildError::Start)?;
        let server = Server::assemble(
            self.config,
            (self.tools, self.catalog),
            Some(engine),
            self.extension,
            description,
            None,
        );
        #[cfg(feature = "http")]
        if let Some(sessions) = sessions {
            let _ = server.state().shared_sessions.set(sessions);
        }
        #[cfg(not(feature = "http"))]
        let _ = sessions;
        server.start_background();
        Ok(server)
    }
}

/// Where the sessions of a server's replicas are shared (the PostgreSQL store's table).
#[cfg(feature = "http")]
type SharedSessions = Option<crate::replicas::Directory>;
#[cfg(not(feature = "http"))]
type SharedSessions = Option<std::convert::Infallible>;

/// An opened store, its description for logs, and where sessions are shared.
type Opened = (Arc<dyn TaskStore>, String, SharedSessions);

/// The store `choice` names and its description for logs; `None` when tasks are off.
async fn open_store(choice: StoreChoice) -> Result<Option<Opened>, BuildError> {
    match choice {
        StoreChoice::None => Ok(None),
        StoreChoice::Given(store) => Ok(Some((store, "custom".into(), None))),
        StoreChoice::Url(url) if url == "memory" => {
            Ok(Some((Arc::new(MemoryStore::new()), "memory".into(), None)))
        }
        #[cfg(feature = "sqlite")]
        StoreChoice::Url(url) if url.starts_with("sqlite:") => {
            let store = mcp_tasks_store_sqlite::SqliteStore::from_spec(&url)
                .map_err(|source| BuildError::OpenStore { store: url, source })?;
            let description = format!("sqlite:{}", store.path().display());
            Ok(Some((Arc::new(store), description, None)))
        }
        #[cfg(feature = "postgres")]
        StoreChoice::Url(url) if mcp_tasks_store_postgres::is_postgres_url(&url) => {
            let store = mcp_tasks_store_postgres::PgStore::connect(&url)
                .await
                .map_err(|source| BuildError::OpenStore {
                    store: redact_url(&url),
                    source,
                })?;
            let description = store.description();
            #[cfg(feature = "http")]
            let sessions = Some(crate::replicas::directory(&store));
            #[cfg(not(feature = "http"))]
            let sessions = None;
            Ok(Some((Arc::new(store), description, sessions)))
        }
        StoreChoice::Url(url) => Err(BuildError::UnknownStore(url)),
        #[cfg(feature = "sqlite")]
        StoreChoice::Sqlite(path, options) => {
            let store =
                mcp_tasks_store_sqlite::SqliteStore::open(&path, options).map_err(|source| {
                    BuildError::OpenStore {
                        store: path.display().to_string(),
                        source,
                    }
                })?;
            Ok(Some((
                Arc::new(store),
                format!("sqlite:{}", path.display()),
                None,
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_store_starts_and_stops_its_background_work() {
        let server = Server::builder().build().await.unwrap();
        assert_eq!(server.store_description(), "memory");
        assert!(server.engine().is_some());
        assert!(server.background_running());
        server.shutdown().await;
        assert!(!server.background_running());
    }

    #[tokio::test]
    async fn no_tasks_has_no_engine() {
        let server = Server::builder().no_tasks().build().await.unwrap();
        assert!(server.engine().is_none());
        assert_eq!(server.store_description(), "none");
    }

    /// The error of building a server on the store `url`, and its message.
    async fn refused(url: &str) -> (BuildError, String) {
        let err = Server::builder().store_url(url).build().await.unwrap_err();
        let msg = err.to_string();
        (err, msg)
    }

    #[tokio::test]
    async fn unknown_store_is_refused() {
        let (err, msg) = refused("mysql://u:secret@x/db").await;
        assert!(matches!(err, BuildError::UnknownStore(ref s) if s == "mysql://u:secret@x/db"));
        assert!(msg.contains("unknown store `mysql://u:***@x/db`"), "{msg}");
        assert!(!msg.contains("secret"), "{msg}");
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn a_postgres_store_that_cannot_be_reached_is_refused_without_its_password() {
        let (err, msg) =
            refused("postgresql://me:hunter2@127.0.0.1:1/tasks?connect_for=200ms").await;
        assert!(matches!(err, BuildError::OpenStore { .. }), "{msg}");
        assert!(!msg.contains("hunter2"), "{msg}");
        assert!(msg.contains("127.0.0.1:1/tasks"), "{msg}");
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn a_postgres_store_with_a_password_parameter_is_refused_without_it() {
        let (_, msg) = refused(
            "postgresql://me@127.0.0.1:1/tasks?connect_for=200ms&password=hunter2&sslpassword=s3cr3t",
        )
        .await;
        assert!(!msg.contains("hunter2") && !msg.contains("s3cr3t"), "{msg}");
        assert!(msg.contains("password=***"), "{msg}");
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn sqlite_url_opens_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let server = Server::builder()
            .store_url(format!("sqlite:{}?synchronous=normal", path.display()))
            .build()
            .await
            .unwrap();
        assert_eq!(
            server.store_description(),
            format!("sqlite:{}", path.display())
        );
        assert!(path.exists());
        server.shutdown().await;
    }

    #[tokio::test]
    async fn dropping_the_last_clone_stops_the_background_work() {
        let server = Server::builder().build().await.unwrap();
        let engine = server.engine().unwrap().clone();
        let weak = server.background_probe();
        drop(server);
        // The engine refuses new work once shut down; the sweeper task ends.
        tokio::time::timeout(Duration::from_secs(2), async {
            while !weak.is_finished() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the background task ends when the server is dropped");
        drop(engine);
    }
}
