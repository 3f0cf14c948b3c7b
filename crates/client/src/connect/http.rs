//! A Streamable HTTP server, over the HTTP client transport of `mcp-tasks-rpc`.
//!
//! One connection is one MCP session; the transport itself resumes broken SSE streams
//! and starts a new session after a 404. The connection ends only when the transport
//! stops, so a server that is merely unreachable shows as failed calls, not as a
//! connection that ended.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_proto::{Revision, RevisionChoice};
use mcp_tasks_rpc::http_client::{
    HttpClientConfig, HttpClientTransport, ResumeSession, StandaloneState,
};
use mcp_tasks_rpc::{Handler, Peer};
use tokio::sync::oneshot;

use super::{Connected, Connector};
use crate::ClientError;

/// How long a new connection waits for its standalone GET stream to open.
pub(crate) const STANDALONE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Start the HTTP transport of `config` speaking `revision` on `peer`: a stateless one
/// (2026-07-28) has no session, no standalone stream and nothing to resume. Every HTTP
/// connection of the workspace (a [`crate::Client`]'s, an [`HttpConnector`]'s) starts
/// here.
///
/// Spec (transports, 2026-07-28): no session; each request carries
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`.
pub(crate) fn start_transport(
    peer: Peer,
    rx: tokio::sync::mpsc::Receiver<mcp_tasks_rpc::Outbound>,
    config: &HttpClientConfig,
    revision: Revision,
) -> Result<HttpClientTransport, ClientError> {
    let mut config = config.clone();
    config.revision = revision;
    if revision.is_stateless() {
        config.standalone_stream = false;
        config.resume = None;
    }
    HttpClientTransport::start(peer, rx, config).map_err(|e| ClientError::Connect(e.to_string()))
}

/// A Streamable HTTP endpoint to connect to. Its `Debug` shows the URL as logs do
/// ([`mcp_tasks_proto::logged::redact_url`]) and the names of its headers, not their
/// values (an `Authorization` header is a secret).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpSpec {
    /// The endpoint URL.
    pub url: String,
    /// Extra request headers (authorization, typically), sent on every request.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSpec")
            .field("url", &mcp_tasks_proto::logged::redact_url(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HttpSpec {
    /// `url` without extra headers.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
        }
    }
}

/// Opens MCP sessions on one endpoint.
#[derive(Debug)]
pub struct HttpConnector {
    spec: HttpSpec,
    max_message_bytes: usize,
    /// The revision spoken: 2026-07-28 has no session and the modern headers; `Auto`
    /// opens connections of either revision ([`Connector::connect_as`]).
    protocol: RevisionChoice,
}

impl HttpConnector {
    /// A connector for `spec`; `max_message_bytes` bounds one message from the server.
    ///
    /// # Errors
    /// [`ClientError::Connect`] for a header that cannot be sent (a malformed name or
    /// value, or one the transport manages itself: `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Accept`, ...) or a bad URL, found now rather than at the
    /// first connection.
    pub fn new(
        spec: HttpSpec,
        max_message_bytes: usize,
        protocol: RevisionChoice,
    ) -> Result<Self, ClientError> {
        let this = Self {
            spec,
            max_message_bytes,
            protocol,
        };
        this.config(None)
            .check()
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        Ok(this)
    }

    fn config(&self, resume: Option<ResumeSession>) -> HttpClientConfig {
        let mut config = HttpClientConfig::new(self.spec.url.clone());
        config.headers.clone_from(&self.spec.headers);
        config.max_message_bytes = self.max_message_bytes;
        config.resume = resume;
        config
    }

    fn open(
        &self,
        handler: Arc<dyn Handler>,
        resume: Option<ResumeSession>,
        revision: Revision,
    ) -> Result<Connected, ClientError> {
        let (peer, outbound) = Peer::new(handler);
        let transport = start_transport(peer.clone(), outbound, &self.config(resume), revision)?;
        let (tx, ended) = oneshot::channel();
        let closed = peer.closed();
        tokio::spawn(async move {
            closed.cancelled().await;
            let _ = tx.send("the HTTP session with the upstream ended".to_owned());
        });
        let mut standalone = transport.standalone_state();
        let settled = Box::pin(async move {
            let wait = standalone.wait_for(|s| !matches!(s, StandaloneState::Pending));
            let _ = tokio::time::timeout(STANDALONE_WAIT, wait).await;
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
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, ClientError> {
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
    ) -> Result<Connected, ClientError> {
        self.open(handler, None, revision)
    }

    /// The HTTP session is taken up again with its `Mcp-Session-Id`: a server that binds
    /// tasks to the session that created them still recognizes ours.
    async fn reattach(
        &self,
        handler: Arc<dyn Handler>,
        session: ResumeSession,
    ) -> Result<Option<Connected>, ClientError> {
        self.open(handler, Some(session), Revision::V2025_11_25)
            .map(Some)
    }

    fn describe(&self) -> String {
        format!(
            "Streamable HTTP {}",
            mcp_tasks_proto::logged::redact_url(&self.spec.url)
        )
    }

    /// The redacted URL and the digest of the whole one: two URLs that differ only in a
    /// secret are two upstreams, and the store holds neither secret.
    fn identity(&self) -> String {
        format!(
            "{} #{}",
            self.describe(),
            mcp_tasks_proto::logged::digest(&self.spec.url)
        )
    }

    /// Notes kept before the identity was redacted name the URL as it is.
    fn is_identified_by(&self, kept: &str) -> bool {
        kept == self.identity() || kept == format!("Streamable HTTP {}", self.spec.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_the_names_of_the_headers_not_their_values() {
        let mut spec = HttpSpec::new("http://me:pw-s3cret@127.0.0.1:9/mcp?token=q-s3cret");
        spec.headers
            .push(("Authorization".into(), "Bearer h-s3cret".into()));
        let connector = HttpConnector::new(spec, 1024, RevisionChoice::Auto).unwrap();
        let shown = format!("{connector:?}");
        assert!(shown.contains("Authorization"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn a_refused_url_is_named_without_its_secrets() {
        for url in [
            "ftp://me:pw-s3cret@127.0.0.1:9/mcp?token=q-s3cret",
            "http://me:pw-s3cret@[::1/mcp?token=q-s3cret",
        ] {
            let e = HttpConnector::new(HttpSpec::new(url), 1024, RevisionChoice::Auto)
                .expect_err(url)
                .to_string();
            assert!(e.contains("invalid MCP endpoint URL"), "{e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn the_description_and_identity_hold_no_secret_of_the_url() {
        let secret = "http://me:pw-s3cret@127.0.0.1:9/mcp?token=q-s3cret";
        let connector =
            HttpConnector::new(HttpSpec::new(secret), 1024, RevisionChoice::Auto).unwrap();
        for shown in [connector.describe(), connector.identity()] {
            assert!(shown.contains("127.0.0.1:9/mcp"), "{shown}");
            assert!(!shown.contains("s3cret"), "{shown}");
        }
        let other = HttpConnector::new(
            HttpSpec::new("http://me:pw-other@127.0.0.1:9/mcp?token=q-other"),
            1024,
            RevisionChoice::Auto,
        )
        .unwrap();
        assert_eq!(connector.describe(), other.describe());
        assert_ne!(connector.identity(), other.identity());
        assert!(connector.is_identified_by(&connector.identity()));
        assert!(connector.is_identified_by(&format!("Streamable HTTP {secret}")));
        assert!(!connector.is_identified_by(&other.identity()));
    }
}
