//! One connection: its state (what `initialize` settled, its tools and fallback, its
//! subscriptions and log level) and its channels to the requestor; the dispatch of its
//! requests to the method handlers is in `dispatch`.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::{Requester, RequestorChannel, TaskEngine};
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::LATEST_PROTOCOL_VERSION;
use mcp_tasks_rpc::{Peer, PeerError, RequestContext, Route};
use serde_json::Value;

use crate::ServerState;
use crate::catalog::subscribe::Subscriptions;
use crate::extension::{Fallback, SessionParts, ToolSource};
use crate::logging::{LogLevel, LogThreshold};
use crate::tool::Tool;

mod dispatch;

/// What `initialize` settled.
#[derive(Debug, Clone, Default)]
pub struct Negotiated {
    /// The protocol revision in use.
    pub protocol_version: String,
    /// The client's capabilities.
    pub client_capabilities: Arc<Value>,
    /// The client's `clientInfo`.
    pub client_info: Value,
}

/// One connection's state. Implements the RPC [`mcp_tasks_rpc::Handler`].
pub struct Session {
    /// Shared server state.
    pub state: Arc<ServerState>,
    /// Who is on the other side.
    pub requester: Requester,
    /// Whether `tasks.list` is declared (the receiver can identify the requester).
    pub can_list: bool,
    /// Set once, by `initialize` (or from the store, for a session another replica
    /// opened); read by every request, without a lock or a copy.
    negotiated: std::sync::OnceLock<Arc<Negotiated>>,
    /// The level `logging/setLevel` set, shared with the calls the session runs.
    pub(crate) log_threshold: LogThreshold,
    /// The resources it watches (`resources/subscribe`).
    subscriptions: Arc<Subscriptions>,
    tools: Arc<dyn ToolSource>,
    fallback: Arc<dyn Fallback>,
}

mcp_tasks_proto::debug_non_exhaustive!(Session, |s| { requester: s.requester });

impl Session {
    /// A fresh, uninitialized session.
    pub fn new(state: Arc<ServerState>, requester: Requester, can_list: bool) -> Self {
        let logging = state.catalog.logging;
        let parts = match &state.extension {
            Some(factory) => factory.make(&requester),
            None => SessionParts::plain(Arc::clone(&state)),
        };
        Self {
            state,
            requester,
            can_list,
            negotiated: std::sync::OnceLock::new(),
            // With `logging` declared, every message is sent until `logging/setLevel`
            // chooses; without it, none.
            log_threshold: LogThreshold::at(logging.then_some(LogLevel::Debug)),
            subscriptions: Arc::default(),
            tools: parts.tools,
            fallback: parts.fallback,
        }
    }

    /// The tool `name` of this session, from its [`ToolSource`].
    pub fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.tools.tool(name)
    }

    /// This session's [`ToolSource`].
    pub(crate) fn tool_source(&self) -> &dyn ToolSource {
        self.tools.as_ref()
    }

    /// The `tools/list` entries of this session, with `execution.taskSupport` only when
    /// tasks are on.
    pub(crate) fn tool_listing(&self) -> Vec<Value> {
        self.tools.listing(self.tasks().is_some())
    }

    /// What `initialize` settled, once it has run.
    pub fn negotiated(&self) -> Option<Arc<Negotiated>> {
        self.negotiated.get().cloned()
    }

    /// Whether `initialize` has run (no copy of what it settled).
    pub(crate) fn is_initialized(&self) -> bool {
        self.negotiated.get().is_some()
    }

    /// Record the outcome of `initialize`. Returns `false` if it had run already.
    pub(crate) fn set_negotiated(&self, n: Negotiated) -> bool {
        self.negotiated.set(Arc::new(n)).is_ok()
    }

    /// The task engine, when tasks are on for this session: the server has them and the
    /// session negotiated 2025-11-25 (tasks are advertised only there).
    pub fn tasks(&self) -> Option<&TaskEngine> {
        let on = self
            .negotiated
            .get()
            .is_some_and(|n| n.protocol_version == LATEST_PROTOCOL_VERSION);
        if on { self.state.engine.as_ref() } else { None }
    }
}

/// The connection as a channel to the requestor, tied to no request: status
/// notifications and task progress travel on it.
pub struct PeerChannel(pub Peer);

#[async_trait]
impl RequestorChannel for PeerChannel {
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.0
            .request(method, Some(params), Route::Standalone)
            .await
            .map_err(PeerError::into_error_object)
    }
    async fn notify(&self, method: &str, params: Value) {
        self.0.notify(method, Some(params), Route::Standalone).await;
    }
}

/// The requestor as seen from one incoming request: messages go on that request's stream.
pub struct RequestChannel(pub RequestContext);

#[async_trait]
impl RequestorChannel for RequestChannel {
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.0
            .request(method, Some(params))
            .await
            .map_err(PeerError::into_error_object)
    }
    async fn notify(&self, method: &str, params: Value) {
        self.0.notify(method, Some(params)).await;
    }
}
