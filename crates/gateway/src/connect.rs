//! Opening one connection to the upstream: a [`Peer`] speaking to it, and a signal for
//! when the connection ends.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_proto::Revision;
use mcp_tasks_rpc::http_client::ResumeSession;
use mcp_tasks_rpc::{Handler, Peer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::GatewayError;

/// The upstream session a connection speaks in, where a later connection can take it up
/// again (Streamable HTTP: the `Mcp-Session-Id`; a stdio session is its process and ends
/// with it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamSession {
    /// The session id the upstream assigned.
    pub session_id: String,
    /// The protocol version negotiated in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The upstream's `initialize` result in that session.
    #[serde(default)]
    pub init_result: Value,
}

/// Reads a connection's current session id and protocol version (an HTTP session is
/// replaced when the upstream answers 404).
pub type SessionProbe = Box<dyn Fn() -> (Option<String>, Option<String>) + Send + Sync>;

/// One open connection.
pub struct Connected {
    /// The JSON-RPC peer of the upstream.
    pub peer: Peer,
    /// Resolves (with a human-readable reason) when the connection has ended: the
    /// process exited, the stream closed.
    pub ended: oneshot::Receiver<String>,
    /// Keeps the connection's resources (a child process group) alive; dropping it tears
    /// the connection down.
    pub guard: Box<dyn Send + Sync>,
    /// Awaited after `notifications/initialized` before the connection is used (an HTTP
    /// session opens its standalone stream, without which the upstream's messages outside
    /// any request would be lost).
    pub settled: Option<futures::future::BoxFuture<'static, ()>>,
    /// The session the connection speaks in, for connections that have one.
    pub session: Option<SessionProbe>,
}

mcp_tasks_proto::debug_non_exhaustive!(Connected, |s| { peer: s.peer });

/// Opens connections to one upstream.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// Open a new connection whose incoming requests and notifications go to `handler`.
    ///
    /// # Errors
    /// When the upstream cannot be started or reached.
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, GatewayError>;

    /// Open a connection that takes up `session` again, already initialized (with its
    /// `init_params`, replayed should the upstream have ended the session). `None` when
    /// this kind of upstream has no sessions to take up.
    ///
    /// # Errors
    /// When the upstream cannot be reached.
    async fn reattach(
        &self,
        handler: Arc<dyn Handler>,
        session: ResumeSession,
    ) -> Result<Option<Connected>, GatewayError> {
        let _ = (handler, session);
        Ok(None)
    }

    /// Whether the revision is a property of the connection itself (Streamable HTTP: a
    /// 2026-07-28 transport sends other headers and keeps no session), so that
    /// `--upstream-protocol auto` opens a 2026-07-28 connection to detect the revision and
    /// another, 2025-11-25 one when the upstream does not speak 2026-07-28. On stdio the
    /// first message decides.
    fn revision_by_transport(&self) -> bool {
        false
    }

    /// Open a connection speaking `revision`, for a connector whose
    /// [`Self::revision_by_transport`]; others open as [`Self::connect`] does.
    ///
    /// # Errors
    /// As [`Self::connect`].
    async fn connect_as(
        &self,
        handler: Arc<dyn Handler>,
        revision: Revision,
    ) -> Result<Connected, GatewayError> {
        let _ = revision;
        self.connect(handler).await
    }

    /// For logs and error messages.
    fn describe(&self) -> String;
}
