//! Errors of the gateway.

use mcp_tasks_proto::{ErrorObject, codes};

/// What can go wrong in the gateway.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Bad configuration (flags or config file).
    #[error("{0}")]
    Config(String),
}

/// The message prefix of every error caused by the upstream being down or gone.
pub(crate) const UNAVAILABLE: &str = "upstream unavailable";

/// -32603 `upstream unavailable: <why>`.
pub(crate) fn unavailable(why: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, format!("{UNAVAILABLE}: {why}"))
}
