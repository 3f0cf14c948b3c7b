//! A Streamable HTTP upstream, over the HTTP client transport of `mcp-tasks-rpc`.
//!
//! One connection is one MCP session; the transport itself resumes broken SSE streams
//! and starts a new session after a 404. The connection ends only when the transport
//! stops, so an upstream that is merely unreachable shows as failed calls (`-32603
//! upstream unavailable`), not as a restart.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_rpc::http_client::{
    HttpClientConfig, HttpClientTransport, ResumeSession, StandaloneState,
};
use mcp_tasks_rpc::{Handler, Peer};
use tokio::sync::oneshot;

use mcp_tasks_proto::{Revision, RevisionChoice};

use crate::config::UpstreamSpec;
use crate::connect::{Connected, Connector};
use crate::error::GatewayError;

/// Opens MCP sessions on one endpoint.
pub(crate) struct HttpConnector {
    url: String,
    headers: Vec<(String, String)>,
    max_message_bytes: usize,
    /// `--upstream-protocol`: 2026-07-28 has no session and the modern headers; `auto`
    /// opens connections of either revision ([`Connector::connect_as`]).
    protocol: RevisionChoice,
}

impl HttpConnector {
    /// A connector for a [`UpstreamSpec::Http`], sending its headers
    /// (`--upstream-header`) on every request.
    ///
    /// # Errors
    /// A header that cannot be sent: a malformed name or value, or one the transport
    /// manages itself (`Mcp-Session-Id`, `MCP-Protocol-Version`, `Accept`, ...).
    pub(crate) fn new(
        spec: &UpstreamSpec,
        max_message_bytes: usize,
        protocol: RevisionChoice,
    ) -> Result<Self, GatewayError> {
        let UpstreamSpec::Http { url, headers } = spec else {
            return Err(GatewayError::Config("not an HTTP upstream".into()));
        };
        let this = Self {
            url: url.clone(),
            headers: headers.clone(),
            max_message_bytes,
            protocol,
        };
        // Check the URL and headers now rather than at the first connection.
        this.config(None, Revision::V2025_11_25)
            .check()
            .map_err(|e| GatewayError::Config(format!("--upstream-url/--upstream-header: {e}")))?;
        Ok(this)
    }

    fn config(&self, resume: Option<ResumeSession>, revision: Revision) -> HttpClientConfig {
        let mut config = HttpClientConfig::new(self.url.clone());
        config.headers.clone_from(&self.headers);
        config.max_message_bytes = self.max_message_bytes;
        config.resume = resume;
        config.revision = revision;
        if revision.is_stateless() {
            // Spec (transports, 2026-07-28): no session; each request carries
            // `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`.
            config.standalone_stream = false;
        }
        config
    }

    fn open(
        &self,
        handler: Arc<dyn Handler>,
        resume: Option<ResumeSession>,
        revision: Revision,
    ) -> Result<Connected, GatewayError> {
        let (peer, outbound) = Peer::new(handler);
        let transport =
            HttpClientTransport::start(peer.clone(), outbound, self.config(resume, revision))
                .map_err(|e| GatewayError::Connect(e.to_string()))?;
        let (tx, ended) = oneshot::channel();
        let closed = peer.closed();
        tokio::spawn(async move {
            closed.cancelled().await;
            let _ = tx.send("the HTTP session with the upstream ended".to_owned());
        });
        let mut standalone = transport.standalone_state();
        let settled = Box::pin(async move {
            let wait = standalone.wait_for(|s| !matches!(s, StandaloneState::Pending));
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wait).await;
        });
        let probe = transport.session_probe();
        Ok(Connected {
            peer,
            ended,
            guard: Box::new(transport),
            settled: Some(settled),
            session: revision.has_initialize().then(|| Box::new(probe) as _),
        })
    }
}

#[async_trait]
impl Connector for HttpConnector {
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, GatewayError> {
        let revision = self.protocol.fixed().unwrap_or(Revision::V2025_11_25);
        self.open(handler, None, revision)
    }

    fn revision_by_transport(&self) -> bool {
        self.protocol == RevisionChoice::Auto
    }

    async fn connect_as(
        &self,
        handler: Arc<dyn Handler>,
        revision: Revision,
    ) -> Result<Connected, GatewayError> {
        self.open(handler, None, revision)
    }

    /// The HTTP session is taken up again with its `Mcp-Session-Id`: an upstream that binds
    /// tasks to the session that created them still recognizes the gateway's.
    async fn reattach(
        &self,
        handler: Arc<dyn Handler>,
        session: ResumeSession,
    ) -> Result<Option<Connected>, GatewayError> {
        self.open(handler, Some(session), Revision::V2025_11_25)
            .map(Some)
    }

    fn describe(&self) -> String {
        format!("Streamable HTTP {}", self.url)
    }
}
