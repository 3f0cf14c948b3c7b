//! Opening a connection to an MCP server: a [`Peer`] speaking to it, and a signal for
//! when the connection ends. The one way the workspace opens a stdio or Streamable HTTP
//! connection: the [`crate::Client`] starts through the same spawning
//! ([`StdioConnector`]) and HTTP transport ([`HttpConnector`]) code as the gateway's
//! upstream connections.
//!
//! A [`Connector`] opens connections to one server, each new one with the [`Handler`]
//! of what that server sends; [`StdioConnector`] starts a command per connection (in a
//! process group of its own, with a clean environment), [`HttpConnector`] opens a
//! Streamable HTTP session per connection.

mod http;
mod stdio;

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_proto::Revision;
use mcp_tasks_rpc::http_client::ResumeSession;
use mcp_tasks_rpc::{Handler, Peer};
use tokio::sync::oneshot;

use crate::ClientError;

pub use http::{HttpConnector, HttpSpec};
pub(crate) use http::{STANDALONE_WAIT, start_transport};
pub use stdio::{OWN_PREFIX, PASS_THROUGH, StdioConnector, StdioSpec, inherited_env};

/// Reads a connection's current session id and protocol version (an HTTP session is
/// replaced when the server answers 404).
pub type SessionProbe = Box<dyn Fn() -> (Option<String>, Option<String>) + Send + Sync>;

/// One open connection.
pub struct Connected {
    /// The JSON-RPC peer of the server.
    pub peer: Peer,
    /// Resolves (with a human-readable reason) when the connection has ended: the
    /// process exited, the stream closed.
    pub ended: oneshot::Receiver<String>,
    /// Keeps the connection's resources (a child process group) alive; dropping it tears
    /// the connection down.
    pub guard: Box<dyn Send + Sync>,
    /// Awaited after `notifications/initialized` before the connection is used (an HTTP
    /// session opens its standalone stream, without which the server's messages outside
    /// any request would be lost).
    pub settled: Option<futures::future::BoxFuture<'static, ()>>,
    /// The session the connection speaks in, for connections that have one.
    pub session: Option<SessionProbe>,
}

mcp_tasks_proto::debug_non_exhaustive!(Connected, |s| { peer: s.peer });

/// Opens connections to one server.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// Open a new connection whose incoming requests and notifications go to `handler`.
    ///
    /// # Errors
    /// [`ClientError::Connect`] when the server cannot be started or reached.
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, ClientError>;

    /// Open a connection that takes up `session` again, already initialized (with its
    /// `init_params`, replayed should the server have ended the session). `None` when
    /// this kind of server has no sessions to take up.
    ///
    /// # Errors
    /// When the server cannot be reached.
    async fn reattach(
        &self,
        handler: Arc<dyn Handler>,
        session: ResumeSession,
    ) -> Result<Option<Connected>, ClientError> {
        let _ = (handler, session);
        Ok(None)
    }

    /// Whether the revision is a property of the connection itself (Streamable HTTP: a
    /// 2026-07-28 transport sends other headers and keeps no session), so that detecting
    /// the revision opens a 2026-07-28 connection and another, 2025-11-25 one when the
    /// server does not speak 2026-07-28. On stdio the first message decides.
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
    ) -> Result<Connected, ClientError> {
        let _ = revision;
        self.connect(handler).await
    }

    /// For logs and error messages: no secret of the spec (URL password or secret query
    /// parameter, header or env value, secret-like option of the command).
    fn describe(&self) -> String;

    /// What names this upstream where it is kept (the gateway's resume notes, in the
    /// task store): like [`Self::describe`], no secret in clear, and distinct for specs
    /// that differ only in a secret.
    fn identity(&self) -> String {
        self.describe()
    }

    /// Whether a kept [`Self::identity`] names this upstream (also in the form an
    /// earlier version kept).
    fn is_identified_by(&self, kept: &str) -> bool {
        kept == self.identity()
    }
}
