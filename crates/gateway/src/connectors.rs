//! The [`Connector`] of an upstream spec: a stdio command or a Streamable HTTP URL.

use std::sync::Arc;

use mcp_tasks_proto::RevisionChoice;

use crate::config::UpstreamSpec;
use crate::connect::Connector;
use crate::error::GatewayError;
use crate::http::HttpConnector;
use crate::stdio::StdioConnector;

/// The connector of an upstream spec (`protocol`: `--upstream-protocol`, which changes
/// how an HTTP upstream is spoken to; `auto` opens HTTP connections of either era).
///
/// # Errors
/// A Streamable HTTP upstream with headers the transport cannot send.
pub(crate) fn connector(
    spec: &UpstreamSpec,
    max_line: usize,
    protocol: RevisionChoice,
) -> Result<Arc<dyn Connector>, GatewayError> {
    match spec {
        UpstreamSpec::Stdio { .. } => Ok(Arc::new(StdioConnector::new(spec.clone(), max_line))),
        UpstreamSpec::Http { .. } => Ok(Arc::new(HttpConnector::new(spec, max_line, protocol)?)),
    }
}
