//! The [`Connector`] of an upstream spec: the client's stdio or Streamable HTTP
//! connector, made of the gateway's configuration.

use std::sync::Arc;

use mcp_tasks_client::ClientError;
use mcp_tasks_client::connect::{Connector, HttpConnector, StdioConnector};
use mcp_tasks_proto::RevisionChoice;

use crate::config::UpstreamSpec;
use crate::error::GatewayError;

/// The connector of an upstream spec (`protocol`: `--upstream-protocol`, which changes
/// how an HTTP upstream is spoken to; `auto` opens HTTP connections of either era).
///
/// # Errors
/// A Streamable HTTP upstream with a URL or headers the transport cannot send.
pub(crate) fn connector(
    spec: &UpstreamSpec,
    max_line: usize,
    protocol: RevisionChoice,
) -> Result<Arc<dyn Connector>, GatewayError> {
    match spec {
        UpstreamSpec::Stdio(stdio) => Ok(Arc::new(StdioConnector::new(stdio.clone(), max_line))),
        UpstreamSpec::Http(http) => {
            let connector = HttpConnector::new(http.clone(), max_line, protocol).map_err(|e| {
                GatewayError::Config(format!("--upstream-url/--upstream-header: {}", reason(e)))
            })?;
            Ok(Arc::new(connector))
        }
    }
}

/// Why a connection could not be opened, as the gateway tells it (the connector's own
/// words, without the client's `cannot connect:`).
pub(crate) fn reason(e: ClientError) -> String {
    match e {
        ClientError::Connect(why) => why,
        other => other.to_string(),
    }
}
