//! A Streamable HTTP upstream, over the HTTP client transport of `mcp-tasks-rpc`.
//!
//! One connection is one MCP session; the transport itself resumes broken SSE streams
//! and starts a new session after a 404. The connection ends only when the transport
//! stops, so an upstream that is merely unreachable shows as failed calls (`-32603
//! upstream unavailable`), not as a restart.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_rpc::http_client::{HttpClientConfig, HttpClientTransport, StandaloneState};
use mcp_tasks_rpc::{Handler, Peer};
use tokio::sync::oneshot;

use crate::config::UpstreamSpec;
use crate::connect::{Connected, Connector};
use crate::error::GatewayError;

/// Opens MCP sessions on one endpoint.
pub struct HttpConnector {
    url: String,
    bearer: Option<String>,
    max_message_bytes: usize,
}

impl HttpConnector {
    /// A connector for a [`UpstreamSpec::Http`]. The transport sends one header of its
    /// own choosing: `Authorization: Bearer TOKEN`.
    ///
    /// # Errors
    /// A header other than `Authorization: Bearer ...`.
    pub fn new(spec: &UpstreamSpec, max_message_bytes: usize) -> Result<Self, GatewayError> {
        let UpstreamSpec::Http { url, headers } = spec else {
            return Err(GatewayError::Config("not an HTTP upstream".into()));
        };
        let mut bearer = None;
        for (k, v) in headers {
            match (k.eq_ignore_ascii_case("authorization"), v.split_once(' ')) {
                (true, Some((scheme, token))) if scheme.eq_ignore_ascii_case("bearer") => {
                    bearer = Some(token.trim().to_owned());
                }
                _ => {
                    return Err(GatewayError::Config(format!(
                        "--upstream-header {k}: only `Authorization: Bearer TOKEN` can be sent to an HTTP upstream"
                    )));
                }
            }
        }
        Ok(Self {
            url: url.clone(),
            bearer,
            max_message_bytes,
        })
    }
}

#[async_trait]
impl Connector for HttpConnector {
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, GatewayError> {
        let (peer, outbound) = Peer::new(handler);
        let mut config = HttpClientConfig::new(self.url.clone());
        config.bearer_token.clone_from(&self.bearer);
        config.max_message_bytes = self.max_message_bytes;
        let transport = HttpClientTransport::start(peer.clone(), outbound, config)
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
        Ok(Connected {
            peer,
            ended,
            guard: Box::new(transport),
            settled: Some(settled),
        })
    }

    fn describe(&self) -> String {
        format!("Streamable HTTP {}", self.url)
    }
}
