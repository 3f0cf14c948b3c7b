//! A session as a composition: built-in methods, a tool source and a fallback handler.
//!
//! Every [`crate::Session`] serves the built-in methods itself: `initialize`, `ping`,
//! `tools/list` and `tools/call` over its [`ToolSource`], and `tasks/*` (through
//! [`mcp_tasks_core::serve::dispatch`], the same dispatch the client uses as a receiver).
//! What it does not serve goes to its [`Fallback`].
//!
//! A plain server composes [`ServerTools`] (its own fixed list) with [`MethodNotFound`]
//! (-32601 for every other request). A server built with an [`ExtensionFactory`] gets
//! both parts of each session from [`ExtensionFactory::make`]: a gateway lists and calls
//! its upstream's tools and forwards everything else (`resources/*`, `prompts/*`,
//! `completion/*`, `logging/*`, `ping` once initialized, unknown methods, notifications)
//! upstream.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::{Requester, Resumer};
use mcp_tasks_proto::{ErrorObject, Revision, methods};
use mcp_tasks_rpc::{Peer, RequestContext};
use serde_json::Value;

use crate::ServerState;
use crate::tool::Tool;

/// Where a session's tools come from: listed by `tools/list`, run by `tools/call`.
pub trait ToolSource: Send + Sync + 'static {
    /// The `tools/list` entries, in order; `with_execution` is whether tasks are on (and
    /// so `execution.taskSupport` is listed).
    ///
    /// Spec: "tools indicate their support for tasks through `execution.taskSupport`".
    fn listing(&self, with_execution: bool) -> Vec<Value>;

    /// The tool `name`, for `tools/call`.
    fn tool(&self, name: &str) -> Option<Arc<Tool>>;
}

/// The server's own tools (the fixed list it was built with).
#[derive(Clone)]
pub struct ServerTools(pub Arc<ServerState>);

impl std::fmt::Debug for ServerTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServerTools")
            .field(&self.0.tools.len())
            .finish()
    }
}

impl ToolSource for ServerTools {
    fn listing(&self, with_execution: bool) -> Vec<Value> {
        self.0
            .tools
            .iter()
            .map(|t| t.to_listing(with_execution))
            .collect()
    }

    fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.0.tool(name).cloned()
    }
}

/// What serves the requests and notifications the built-in methods do not.
#[async_trait]
pub trait Fallback: Send + Sync + 'static {
    /// Called once `initialize` has been validated and negotiated, before the result is
    /// sent; may edit `result` (capabilities, `serverInfo`, `instructions`). Leaves it
    /// as it is by default.
    ///
    /// # Errors
    /// The JSON-RPC error `initialize` is answered with instead (the session cannot be
    /// served, e.g. a gateway at its bound of upstream connections).
    async fn initialize(
        &self,
        _cx: &RequestContext,
        _params: &Value,
        _result: &mut Value,
    ) -> Result<(), ErrorObject> {
        Ok(())
    }

    /// Whether `ping` on an initialized session comes here (a gateway answers it from its
    /// upstream) rather than being answered at once. `false` by default.
    fn forwards_ping(&self) -> bool {
        false
    }

    /// Serve a request of an initialized session that no built-in method serves.
    /// -32601 by default.
    ///
    /// # Errors
    /// The JSON-RPC error to answer with.
    async fn request(
        &self,
        _cx: RequestContext,
        method: String,
        _params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        Err(ErrorObject::method_not_found(format!("`{method}`")))
    }

    /// A notification of an initialized session other than `notifications/cancelled`
    /// (which the connection handles). Ignored by default.
    async fn notification(&self, _peer: &Peer, method: String, _params: Option<Value>) {
        if method != methods::INITIALIZED {
            tracing::debug!(method = %mcp_tasks_proto::logged::capped(&method), "notification ignored");
        }
    }
}

/// The fallback of a plain server: -32601 for every request no built-in method serves.
#[derive(Debug, Clone, Copy, Default)]
pub struct MethodNotFound;

impl Fallback for MethodNotFound {}

/// The parts a session is composed of besides the built-in methods.
#[derive(Clone)]
pub struct SessionParts {
    /// The tools of `tools/list` and `tools/call`.
    pub tools: Arc<dyn ToolSource>,
    /// What serves everything else.
    pub fallback: Arc<dyn Fallback>,
}

impl std::fmt::Debug for SessionParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionParts").finish_non_exhaustive()
    }
}

impl SessionParts {
    /// A plain server's session: its own tools, -32601 for anything else.
    pub fn plain(state: Arc<ServerState>) -> Self {
        Self {
            tools: Arc::new(ServerTools(state)),
            fallback: Arc::new(MethodNotFound),
        }
    }
}

/// Makes the parts of each new session (a gateway's sessions in front of an upstream).
pub trait ExtensionFactory: Send + Sync + 'static {
    /// The tool source and fallback of a new session of `requester`.
    fn make(&self, requester: &Requester) -> SessionParts;

    /// What resumes the tasks of this extension that a previous process left running (a
    /// gateway following its upstream tasks again). [`crate::ServerBuilder::build`]
    /// installs it before the engine starts, since the engine resumes orphaned tasks at
    /// start-up. None by default.
    fn resumer(&self) -> Option<Arc<dyn Resumer>> {
        None
    }

    /// The server's task store, given once it is open and before [`Self::resumer`] is
    /// asked: an extension that keeps notes beside its tasks keeps them in the store when
    /// it offers a place for them ([`mcp_tasks_core::TaskStore::notes`]: on PostgreSQL,
    /// so that another replica reads them). Ignored by default.
    fn attach_store(&self, store: &Arc<dyn mcp_tasks_core::TaskStore>) {
        let _ = store;
    }

    /// The server's metrics, for what the extension counts itself (a gateway: upstream
    /// restarts and call latency). Called once the server has them, before any session;
    /// ignored by default.
    fn set_metrics(&self, metrics: &mcp_tasks_core::Metrics) {
        let _ = metrics;
    }

    /// The revisions this extension serves. Only [`Revision::V2025_11_25`] by default: a
    /// request of a stateless revision ([`Revision::is_stateless`]) is refused with
    /// -32022 listing only the `initialize` revisions (the extension's tools exist only in
    /// a 2025-11-25 session).
    ///
    /// Spec (versioning): "A dual-era server MAY serve both eras concurrently on the same
    /// endpoint or process."
    fn revisions(&self) -> &'static [Revision] {
        &[Revision::V2025_11_25]
    }

    /// The tools a 2026-07-28 request of `requester` is served from: modern requests are
    /// stateless, so they cannot use the tools of the session they came on (a gateway
    /// starts those with `initialize`). Asked for each modern `tools/list` and
    /// `tools/call` when [`Self::revisions`] has a stateless one; a gateway answers with a
    /// lane shared by the requester's modern requests, started on first use.
    ///
    /// # Errors
    /// The JSON-RPC error to answer the request with (by default -32601: nothing to serve).
    fn stateless_tools<'a>(
        &'a self,
        requester: &'a Requester,
    ) -> futures::future::BoxFuture<'a, Result<Arc<dyn ToolSource>, ErrorObject>> {
        let _ = requester;
        Box::pin(async {
            Err(ErrorObject::method_not_found(
                "this server has no tools for 2026-07-28 requests",
            ))
        })
    }

    /// The capabilities `server/discover` declares for what the extension serves to
    /// `requester`'s 2026-07-28 requests besides tools (`resources`, `prompts`,
    /// `completions`: [`Self::forwards_stateless`]). `None` by default, and when it cannot
    /// say now (a gateway whose upstream is down): nothing is added.
    fn stateless_capabilities<'a>(
        &'a self,
        requester: &'a Requester,
    ) -> futures::future::BoxFuture<'a, Option<serde_json::Map<String, Value>>> {
        let _ = requester;
        Box::pin(async { None })
    }

    /// Whether a 2026-07-28 request of `method` that the server does not serve itself
    /// (resources, prompts, completion) is the extension's ([`Self::stateless_request`]).
    /// `false` by default.
    fn forwards_stateless(&self, method: &str) -> bool {
        let _ = method;
        false
    }

    /// Serve a 2026-07-28 request of `method` the extension
    /// [forwards](Self::forwards_stateless) for `requester`, with its params (the checked `io.modelcontextprotocol/*` `_meta`
    /// fields taken out); the server stamps the result `complete`. A gateway passes it to
    /// the requester's modern lane.
    ///
    /// # Errors
    /// The JSON-RPC error to answer with (by default -32601).
    fn stateless_request<'a>(
        &'a self,
        requester: &'a Requester,
        method: &'a str,
        params: Option<Value>,
    ) -> futures::future::BoxFuture<'a, Result<Value, ErrorObject>> {
        let _ = (requester, params);
        Box::pin(async move {
            Err(ErrorObject::method_not_found(format!(
                "`{method}` is not served in 2026-07-28"
            )))
        })
    }
}
