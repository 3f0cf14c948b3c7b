//! Why a request sent to the other side did not produce its answer.

use std::time::Duration;

use mcp_tasks_proto::{ErrorObject, codes};
use serde_json::json;

/// The `data` key of [`TransportError::to_error_object`]: how a transport failure is
/// written where only a JSON-RPC error fits (a `--json` report, a relayed request's
/// outcome). Rendering only: nothing reads it back.
pub const TRANSPORT_ERROR_DATA: &str = "mcp-tasks/transport";

/// The outcome of a request that got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The other side answered with this JSON-RPC error (exactly as sent).
    #[error("{0}")]
    Remote(ErrorObject),
    /// The transport could not get the request answered (a broken connection, an HTTP
    /// error status, a lost stream, an answer too large to read). The request may or may
    /// not have reached the other side.
    #[error("{0}")]
    Transport(TransportError),
    /// The connection closed, or its input ended, before the answer came: no answer can
    /// come any more.
    #[error("connection closed")]
    Closed,
    /// No answer within this bound; the request was cancelled with
    /// `notifications/cancelled`.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

impl PeerError {
    /// The error as a JSON-RPC error object, for where only one fits (a handler's answer,
    /// a relayed request's outcome): the remote error unchanged, anything else as -32603.
    pub fn into_error_object(self) -> ErrorObject {
        match self {
            Self::Remote(e) => e,
            Self::Transport(t) => t.to_error_object(),
            other => ErrorObject::internal(other.to_string()),
        }
    }
}

impl From<PeerError> for ErrorObject {
    fn from(e: PeerError) -> Self {
        e.into_error_object()
    }
}

/// What kind of transport failure a [`TransportError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The connection could not be made or broke while sending.
    Connect,
    /// The server answered with an HTTP error status.
    Http,
    /// The server broke the transport's protocol (e.g. no reply to a request).
    Protocol,
    /// The reply's body could not be read or parsed.
    Body,
    /// A stream ended before the reply and could not be resumed.
    Stream,
    /// The session ended before the reply.
    Session,
    /// The reply was over the size bound.
    TooLarge,
}

impl TransportErrorKind {
    /// A short name (`connect`, `http`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Http => "http",
            Self::Protocol => "protocol",
            Self::Body => "body",
            Self::Stream => "stream",
            Self::Session => "session",
            Self::TooLarge => "tooLarge",
        }
    }
}

/// A request the transport could not get answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct TransportError {
    /// What failed.
    pub kind: TransportErrorKind,
    /// The transport's explanation.
    pub message: String,
    /// The HTTP status, when the server sent one.
    pub http_status: Option<u16>,
    /// For [`TransportErrorKind::TooLarge`]: the reply's size, when it is known.
    pub bytes: Option<u64>,
    /// For [`TransportErrorKind::TooLarge`]: the bound it broke.
    pub limit: Option<u64>,
}

impl TransportError {
    /// A failure of `kind`.
    pub fn new(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            http_status: None,
            bytes: None,
            limit: None,
        }
    }

    /// With the HTTP status the server answered.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }

    /// A reply over the bound `limit`: `bytes` long when the size is known.
    pub fn too_large(bytes: Option<u64>, limit: u64) -> Self {
        let message = match bytes {
            Some(b) => format!("reply too large: {b} bytes (the bound is {limit} bytes)"),
            None => format!("the reply exceeds {limit} bytes"),
        };
        Self {
            bytes,
            limit: Some(limit),
            ..Self::new(TransportErrorKind::TooLarge, message)
        }
    }

    /// Whether the reply was over the size bound (asking again would not mend it).
    pub fn is_too_large(&self) -> bool {
        self.kind == TransportErrorKind::TooLarge
    }

    /// As a -32603 JSON-RPC error whose `data` says what failed (under
    /// [`TRANSPORT_ERROR_DATA`]: `kind`, and `httpStatus` / `bytes` when known).
    pub fn to_error_object(&self) -> ErrorObject {
        let mut detail = json!({ "kind": self.kind.as_str() });
        if let Some(s) = self.http_status {
            detail["httpStatus"] = json!(s);
        }
        if let Some(b) = self.bytes {
            detail["bytes"] = json!(b);
        }
        ErrorObject::new(codes::INTERNAL_ERROR, self.message.clone())
            .with_data(json!({ TRANSPORT_ERROR_DATA: detail }))
    }
}

impl From<TransportError> for PeerError {
    fn from(e: TransportError) -> Self {
        Self::Transport(e)
    }
}
