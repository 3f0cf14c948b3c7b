//! The one JSON-RPC error type used on the wire, and the codes we emit.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// JSON-RPC error codes used by mcp-tasks.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object (a batch array included).
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist, or (tasks spec) a tool was called in a task mode it
    /// does not support.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters: unknown or expired task ids, bad cursors, cancel of a
    /// terminal task, malformed fields.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error: the request could not be served (storage fault, upstream down).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The outcome of a task that was cancelled before it finished, as `tasks/result`
    /// returns it. Taken from the implementation-defined server-error range reserved by
    /// JSON-RPC 2.0 (-32000 to -32099).
    pub const TASK_CANCELLED: i64 = -32001;
    /// MCP 2025-11-25 (resources, "Error Handling"): "Resource not found: `-32002`".
    /// (2026-07-28 answers an unknown resource with -32602 instead, SEP-2164.)
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// Creating the task would exceed the requester's limit of active tasks.
    pub const TOO_MANY_TASKS: i64 = -32003;
    /// 2026-07-28 (basic, "Error Codes"), `HeaderMismatch`: HTTP headers do not match the
    /// body, or are missing/malformed.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28, `MissingRequiredClientCapability`: `data.requiredCapabilities` names
    /// what is missing.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28, `UnsupportedProtocolVersion`: `data.supported` and `data.requested`.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A request refused by a rate limit (`mcp-tasks serve --rate-limit`): `data.limit`
    /// names the limit and `data.retryAfterMs` when to retry; over HTTP the status is 429
    /// with `Retry-After`. Taken from the implementation-defined server-error range
    /// (-32000 to -32099), clear of the codes above and of the 2026-07-28 ones.
    pub const RATE_LIMITED: i64 = -32029;
}

/// A JSON-RPC error object: `{code, message, data?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description of the error.
    pub message: String,
    /// Additional information, passed through unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
    /// -32700 Parse error.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::PARSE_ERROR, format!("Parse error: {detail}"))
    }
    /// -32600 Invalid request.
    pub fn invalid_request(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }
    /// -32601 Method not found.
    pub fn method_not_found(detail: impl std::fmt::Display) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {detail}"),
        )
    }
    /// -32602 Invalid params.
    pub fn invalid_params(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }
    /// -32603 Internal error.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
    /// Attach `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// `s` cut to its first `max_chars` characters, with `...` when anything was cut: a
/// reason quoted in an error message stays readable however long the original is.
pub fn clip(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max_chars).collect();
    t.push_str("...");
    t
}
