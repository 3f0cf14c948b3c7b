//! The client: connection, `initialize`, tools, tasks.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use mcp_tasks_proto::Revision;
use mcp_tasks_proto::mcp::{Task, Tool};
use mcp_tasks_proto::modern as wire;
use mcp_tasks_proto::modern::param_headers;
use mcp_tasks_proto::{Notification, methods};
use mcp_tasks_rpc::http_client::{HttpClientConfig, HttpClientTransport};
use mcp_tasks_rpc::{Peer, stdio};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::broadcast;

use crate::ClientError;
use crate::config::ClientConfig;
use crate::era_cache::EraCache;
use crate::modern;
use crate::process::ChildGuard;
use crate::receiver::{Receiving, TaskReceiver};
use crate::rpc::Rpc;
use crate::types::{InitializeResult, TaskCapabilities};

/// How long [`Client::close`] lets a stdio server exit after its input closed.
const EXIT_GRACE: Duration = Duration::from_secs(3);
/// Most pages `tasks/list` or `tools/list` is followed through.
pub(crate) const MAX_PAGES: usize = 10_000;

/// What carries the messages.
pub(crate) enum Transport {
    Stdio {
        child: ChildGuard,
        io: tokio::task::JoinHandle<std::io::Result<()>>,
    },
    Http(HttpClientTransport),
    Io(tokio::task::JoinHandle<std::io::Result<()>>),
}

/// How the client reaches the server: a transport made once (stdio, an I/O pair), or an
/// HTTP endpoint, whose transport differs by era (a fallback starts a new one).
pub(crate) enum Wire {
    Once(Box<dyn FnOnce(Peer, Outbound) -> Result<Transport, ClientError> + Send>),
    Http(Box<HttpClientConfig>),
}

/// The queue a transport drains.
pub(crate) type Outbound = tokio::sync::mpsc::Receiver<mcp_tasks_rpc::Outbound>;

/// The HTTP session as the transport sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSessionInfo {
    /// The session id (`MCP-Session-Id`), if the server assigned one.
    pub session_id: Option<String>,
    /// The `MCP-Protocol-Version` sent.
    pub protocol_version: Option<String>,
    /// How many times a new session was started after a 404.
    pub reinitializations: u64,
    /// How many times an SSE stream was resumed with `Last-Event-ID`.
    pub resumptions: u64,
}

pub(crate) struct Inner {
    pub(crate) rpc: Rpc,
    pub(crate) revision: Revision,
    /// The HTTP endpoint whose era [`EraCache`] keeps (a client that detected it).
    pub(crate) cached_as: Option<String>,
    /// 2026-07-28: the `_meta` every request carries.
    pub(crate) meta: Option<Value>,
    pub(crate) max_input_rounds: u32,
    pub(crate) init: InitializeResult,
    pub(crate) client_capabilities: Value,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) call_timeout: Option<Duration>,
    pub(crate) tools: Mutex<Option<Arc<Vec<Tool>>>>,
    pub(crate) transport: Mutex<Option<Transport>>,
    pub(crate) next_token: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.rpc.peer.close();
        // The transport's own Drop ends it: the process group is killed, the HTTP
        // session deleted (best effort).
    }
}

/// An MCP client on the requestor side of tasks, speaking 2025-11-25 or 2026-07-28 with
/// the tasks extension, as the server does (see [`crate::RevisionChoice`]).
/// Cheap to clone; the connection ends when the last clone (and every [`crate::TaskHandle`])
/// is dropped, or at [`Client::close`].
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

mcp_tasks_proto::debug_non_exhaustive!(Client, |s| {
    revision: s.inner.revision,
    protocol_version: s.inner.init.protocol_version,
    server_info: s.inner.init.server_info,
});

impl Client {
    /// Spawn `command` as a stdio server (in its own process group, stdin/stdout piped,
    /// stderr inherited unless set) and initialize. Dropping the client kills the whole
    /// process group.
    ///
    /// # Errors
    /// [`ClientError::Connect`] when the command cannot start; the errors of `initialize`.
    pub async fn connect_stdio(
        mut command: tokio::process::Command,
        config: ClientConfig,
    ) -> Result<Self, ClientError> {
        let (child, stdin, stdout) = ChildGuard::spawn(&mut command)?;
        let wire = Wire::Once(Box::new(move |peer, rx| {
            let lines = stdio::LineIo::new(tokio::io::BufReader::new(stdout), stdin);
            let io = tokio::spawn(stdio::serve(peer, rx, lines));
            Ok(Transport::Stdio { child, io })
        }));
        Self::start(config, wire).await
    }

    /// Connect to a Streamable HTTP endpoint and initialize; the standalone GET stream is
    /// opened (and awaited briefly) so that the server can reach the client outside any
    /// request.
    ///
    /// # Errors
    /// [`ClientError::Connect`] for a bad URL; the errors of `initialize` (HTTP failures
    /// are [`ClientError::Transport`]).
    pub async fn connect_http(
        http: HttpClientConfig,
        config: ClientConfig,
    ) -> Result<Self, ClientError> {
        let client = Self::start(config, Wire::Http(Box::new(http))).await?;
        let settled = {
            let t = client.inner.transport.lock();
            match &*t {
                Some(Transport::Http(h)) => Some(h.standalone_state()),
                _ => None,
            }
        };
        if let Some(mut rx) = settled {
            let _ = tokio::time::timeout(
                crate::connect::STANDALONE_WAIT,
                rx.wait_for(|s| !matches!(s, mcp_tasks_rpc::http_client::StandaloneState::Pending)),
            )
            .await;
        }
        Ok(client)
    }

    /// Speak newline-delimited JSON-RPC over `reader`/`writer` (an in-process server, a
    /// socket) and initialize.
    ///
    /// # Errors
    /// The errors of `initialize`.
    pub async fn connect_io<R, W>(
        reader: R,
        writer: W,
        config: ClientConfig,
    ) -> Result<Self, ClientError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let wire = Wire::Once(Box::new(move |peer, rx| {
            let lines = stdio::LineIo::new(reader, writer);
            Ok(Transport::Io(tokio::spawn(stdio::serve(peer, rx, lines))))
        }));
        Self::start(config, wire).await
    }

    /// The revision this client speaks with its server (found once, when connecting).
    pub fn revision(&self) -> Revision {
        self.inner.revision
    }

    /// Send `method` (with the modern `_meta` in 2026-07-28), at most `timeout`.
    pub(crate) async fn send(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let params = match &self.inner.meta {
            Some(m) => Some(modern::stamp(m, params)),
            None => params,
        };
        let answer = self.inner.rpc.request(method, params, timeout).await;
        if let (Revision::V2026_07_28, Some(url), Err(ClientError::Transport { error, .. })) =
            (self.inner.revision, &self.inner.cached_as, &answer)
            && error.http_status.is_some_and(|s| (400..500).contains(&s))
        {
            // Spec (streamable HTTP): a 4xx without a recognized modern error body is
            // what a legacy server answers a modern request; the next connection
            // detects the era again.
            tracing::debug!(%url, "a modern request met a legacy 4xx: the cached era is forgotten");
            EraCache::global().forget(url);
        }
        answer
    }

    /// End the connection: DELETE the HTTP session, or close the stdio server's input and
    /// let it exit (killing its process group if it does not within a few seconds).
    pub async fn close(&self) {
        let transport = self.inner.transport.lock().take();
        match transport {
            Some(Transport::Http(h)) => h.close().await,
            Some(Transport::Stdio { child, io }) => {
                // Closing the peer ends the writer, which closes the server's stdin.
                self.inner.rpc.peer.close();
                child.shutdown(EXIT_GRACE).await;
                io.abort();
            }
            Some(Transport::Io(io)) => {
                self.inner.rpc.peer.close();
                io.abort();
            }
            None => {}
        }
        self.inner.rpc.peer.close();
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.rpc.peer.is_closed()
    }

    /// What `initialize` returned (2026-07-28: `server/discover`, in the same shape).
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// The protocol revision in use.
    pub fn protocol_version(&self) -> &str {
        &self.inner.init.protocol_version
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> &Value {
        &self.inner.init.capabilities
    }

    /// The capabilities this client declared.
    pub fn client_capabilities(&self) -> &Value {
        &self.inner.client_capabilities
    }

    /// The client's own task receiver, if it runs task-augmented requests of the server.
    pub fn task_receiver(&self) -> Option<&TaskReceiver> {
        self.inner
            .rpc
            .shared
            .receiving
            .as_ref()
            .map(Receiving::receiver)
    }

    /// The tasks the server created on this client on this connection (task-augmented
    /// `elicitation/create` / `sampling/createMessage`), oldest first; empty without a
    /// [`TaskReceiver`].
    ///
    /// # Errors
    /// [`ClientError::Connect`] when the client's task store fails.
    pub async fn received_tasks(&self) -> Result<Vec<Task>, ClientError> {
        match &self.inner.rpc.shared.receiving {
            Some(r) => r
                .list_all()
                .await
                .map_err(|e| ClientError::Connect(format!("the client's task store failed: {e}"))),
            None => Ok(Vec::new()),
        }
    }

    /// The server's `tasks` capability. In 2026-07-28, what the tasks extension gives
    /// when the server declares it: tasks of `tools/call` and `tasks/cancel`, no
    /// `tasks/list`.
    pub fn server_tasks(&self) -> TaskCapabilities {
        if self.revision().tasks_are_extension() {
            let ext = self
                .inner
                .init
                .capabilities
                .get("extensions")
                .and_then(|e| e.get(wire::TASKS_EXTENSION))
                .is_some();
            return TaskCapabilities {
                declared: ext,
                list: false,
                cancel: ext,
                tools_call: ext,
                ..TaskCapabilities::default()
            };
        }
        TaskCapabilities::from_capabilities(&self.inner.init.capabilities)
    }

    /// Why a tasks method (`tasks/get`, `tasks/cancel`, `tasks/list`, `tasks/result`) is
    /// not sent to this server, if it is not: in 2026-07-28 every one of them when the
    /// server does not declare the tasks extension
    /// ([`ClientError::no_tasks_extension`]), and those the extension does not have
    /// ([`ClientError::not_in_revision`]) when it does. `None` in 2025-11-25, where the
    /// server's `tasks` capability decides.
    pub fn revision_refusal(&self, method: &str) -> Option<ClientError> {
        if !self.revision().tasks_are_extension() {
            return None;
        }
        if !self.server_tasks().declared {
            return Some(ClientError::no_tasks_extension(method));
        }
        (method == methods::TASKS_LIST || method == methods::TASKS_RESULT)
            .then(|| ClientError::not_in_revision(method))
    }

    /// The HTTP session, when connected over HTTP.
    pub fn http_session(&self) -> Option<HttpSessionInfo> {
        match &*self.inner.transport.lock() {
            Some(Transport::Http(h)) => Some(HttpSessionInfo {
                session_id: h.session_id(),
                protocol_version: h.protocol_version(),
                reinitializations: h.reinitializations(),
                resumptions: h.resumptions(),
            }),
            _ => None,
        }
    }

    /// Every notification the server sends (progress, status, logs, ...), from now on.
    pub fn notifications(&self) -> broadcast::Receiver<Notification> {
        self.inner.rpc.shared.notifications.subscribe()
    }

    /// A fresh progress token, unique on this client.
    pub fn new_progress_token(&self) -> Value {
        let n = self.inner.next_token.fetch_add(1, Ordering::Relaxed);
        json!(format!("mcp-tasks-client-{n}"))
    }

    /// Send a request and wait for its answer, at most the configured request timeout.
    ///
    /// # Errors
    /// The server's error ([`ClientError::Rpc`]), a timeout, a transport failure.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, ClientError> {
        self.send(method, params, self.inner.request_timeout).await
    }

    /// Send a request and wait for its answer however long it takes (`tasks/result`
    /// blocks until the task is terminal).
    ///
    /// # Errors
    /// The server's error, a transport failure, a closed connection.
    pub async fn request_unbounded(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        self.send(method, params, None).await
    }

    /// Send a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) {
        self.inner.rpc.notify(method, params).await;
    }

    /// `tools/list`, following every page; the list is kept for task-support look-ups.
    ///
    /// # Errors
    /// The server's error or a transport failure.
    pub async fn list_tools(&self) -> Result<Arc<Vec<Tool>>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let v = self.request(methods::TOOLS_LIST, params).await?;
            let page = v
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Protocol(format!("tools/list without `tools`: {v}")))?;
            for t in page {
                let tool: Tool = serde_json::from_value(t.clone())
                    .map_err(|e| ClientError::Protocol(format!("malformed tool {t}: {e}")))?;
                tools.push(tool);
            }
            match next_cursor(&v) {
                Some(c) if seen.insert(c.clone()) => cursor = Some(c),
                _ => break,
            }
        }
        let tools = Arc::new(self.keep_valid_param_headers(tools));
        *self.inner.tools.lock() = Some(Arc::clone(&tools));
        Ok(tools)
    }

    /// Whether the client speaks Streamable HTTP.
    pub(crate) fn is_http(&self) -> bool {
        matches!(&*self.inner.transport.lock(), Some(Transport::Http(_)))
    }

    /// 2026-07-28 over HTTP: `tools` without those whose `x-mcp-header` annotations are
    /// invalid (a warning names each, with the reason), and the transport told the
    /// annotations of the others, which it mirrors into `Mcp-Param-{Name}` headers.
    ///
    /// Spec (streamable HTTP): "Clients using the Streamable HTTP transport **MUST**
    /// reject tool definitions where any `x-mcp-header` value violates these constraints.
    /// Rejection means the client **MUST** exclude the invalid tool from the result of
    /// `tools/list`. Clients **SHOULD** log a warning when rejecting a tool definition,
    /// including the tool name and the reason for rejection." Other transports and
    /// 2025-11-25 keep every tool ("Clients using other transports (e.g., stdio) **MAY**
    /// ignore `x-mcp-header` annotations entirely").
    fn keep_valid_param_headers(&self, tools: Vec<Tool>) -> Vec<Tool> {
        if !self.revision().is_stateless() {
            return tools;
        }
        let transport = self.inner.transport.lock();
        let Some(Transport::Http(http)) = &*transport else {
            return tools;
        };
        let mut table = mcp_tasks_rpc::http_client::ParamHeaderTable::new();
        let kept = tools
            .into_iter()
            .filter(
                |tool| match param_headers::annotations(&tool.input_schema) {
                    Ok(annotated) => {
                        if !annotated.is_empty() {
                            table.insert(tool.name.clone(), annotated);
                        }
                        true
                    }
                    Err(reason) => {
                        tracing::warn!(
                            tool = %mcp_tasks_proto::logged::capped(&tool.name),
                            %reason,
                            "tools/list: tool excluded, its x-mcp-header annotations are invalid"
                        );
                        false
                    }
                },
            )
            .collect();
        http.set_param_headers(table);
        kept
    }

    /// The tool called `name` (from the kept list; listed afresh when it is not there).
    ///
    /// # Errors
    /// The errors of `tools/list`.
    pub async fn tool(&self, name: &str) -> Result<Option<Tool>, ClientError> {
        let cached = self.inner.tools.lock().clone();
        if let Some(tools) = cached
            && let Some(t) = tools.iter().find(|t| t.name == name)
        {
            return Ok(Some(t.clone()));
        }
        let tools = self.list_tools().await?;
        Ok(tools.iter().find(|t| t.name == name).cloned())
    }
}

/// The `nextCursor` of a page, unless it is absent or empty.
pub(crate) fn next_cursor(v: &Value) -> Option<String> {
    v.get("nextCursor")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
}
