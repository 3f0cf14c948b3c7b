//! A per-session extension point: what a gateway plugs into the receiver.
//!
//! The receiver serves `initialize`, `tools/list`, `tools/call` and `tasks/*` itself. A
//! server built with an [`ExtensionFactory`] gives every session its own
//! [`SessionExtension`], which
//!
//! * edits the `initialize` result (e.g. merges an upstream server's capabilities),
//! * supplies the session's tools (a dynamic set instead of the server's fixed list),
//! * serves every request the receiver does not handle (`resources/*`, `prompts/*`,
//!   `completion/*`, `logging/*`, `ping`, unknown methods) and every notification it
//!   does not interpret.
//!
//! Without an extension a server behaves exactly as before.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::{Requester, Resumer};
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_rpc::{Peer, RequestContext};
use serde_json::Value;

use crate::tool::Tool;

/// One session's extension.
#[async_trait]
pub trait SessionExtension: Send + Sync + 'static {
    /// Called once `initialize` has been validated and negotiated, before the result is
    /// sent; may edit `result` (capabilities, `serverInfo`, `instructions`).
    ///
    /// # Errors
    /// The JSON-RPC error `initialize` is answered with instead (the session cannot be
    /// served, e.g. a gateway at its bound of upstream connections).
    async fn initialize(
        &self,
        cx: &RequestContext,
        params: &Value,
        result: &mut Value,
    ) -> Result<(), ErrorObject>;

    /// The `tools/list` result of this session; `with_execution` is whether tasks are on
    /// (and so `execution.taskSupport` is listed).
    ///
    /// # Errors
    /// The JSON-RPC error to answer with.
    async fn list_tools(
        &self,
        params: Option<&Value>,
        with_execution: bool,
    ) -> Result<Value, ErrorObject>;

    /// The tool `name` of this session, for `tools/call`.
    fn tool(&self, name: &str) -> Option<Tool>;

    /// Serve a request the receiver does not handle itself.
    ///
    /// # Errors
    /// The JSON-RPC error to answer with.
    async fn request(
        &self,
        cx: RequestContext,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject>;

    /// A notification the receiver does not interpret.
    async fn notification(&self, peer: &Peer, method: String, params: Option<Value>);
}

/// Makes the extension of each new session.
pub trait ExtensionFactory: Send + Sync + 'static {
    /// The extension of a new session of `requester`.
    fn make(&self, requester: &Requester) -> Arc<dyn SessionExtension>;

    /// What resumes the tasks of this extension that a previous process left running (a
    /// gateway following its upstream tasks again). [`crate::ServerBuilder::build`]
    /// installs it before the engine starts, since the engine resumes orphaned tasks at
    /// start-up. None by default.
    fn resumer(&self) -> Option<Arc<dyn Resumer>> {
        None
    }
}
