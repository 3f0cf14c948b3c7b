//! [`ToolError`]: what a tool's handler fails with.
//!
//! Spec (tools page, error handling): "Tool Execution Errors: Reported in tool results with
//! `isError: true`: API failures; Input validation errors (e.g., date in wrong format,
//! value out of range); Business logic errors", and "Protocol Errors: Standard JSON-RPC
//! errors for issues like: Unknown tools; Invalid arguments; Server errors". So an ordinary
//! failure of the tool's work (a file that cannot be read, an API that refused) is a result
//! with `isError: true` whose text the model reads, and a JSON-RPC error is for when the
//! tool author means one.

use mcp_tasks_proto::{CallToolResult, ErrorObject};

/// The error of a tool's handler: `?` on any [`std::error::Error`] makes one.
///
/// * An ordinary error (`std::io::Error`, a parse error, your own type) becomes a tool
///   execution error: the call's result is [`CallToolResult::error`] with the error's text
///   (its sources appended after `: `), which the model sees and may act on.
/// * A JSON-RPC error is raised on purpose with [`ToolError::rpc`] or
///   [`ToolError::invalid_params`]: the call is answered with that error, its code
///   included. An [`ErrorObject`] that reaches `?` (what the questions of
///   [`crate::ToolContext`] fail with: the client's error, or -32021 when it did not
///   declare the capability) stays a JSON-RPC error too.
///
/// ```
/// use mcp_tasks_server::ToolError;
///
/// fn read(path: &str) -> Result<String, ToolError> {
///     let text = std::fs::read_to_string(path)?; // an `isError` result if it fails
///     if text.is_empty() {
///         return Err(ToolError::invalid_params("the file is empty")); // -32602
///     }
///     Ok(text)
/// }
/// let failed = read("/no/such/file").unwrap_err().into_outcome().unwrap();
/// assert!(failed.is_error);
/// ```
///
/// It does not implement [`std::error::Error`] itself (as `anyhow::Error` does not), so
/// that `?` converts every error type into it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError(Repr);

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    /// A tool execution error: the `isError` result's text.
    Execution(String),
    /// The JSON-RPC error of the call.
    Rpc(ErrorObject),
}

impl ToolError {
    /// A tool execution error with this text: the call's result is
    /// [`CallToolResult::error`] (`isError: true`).
    pub fn execution(text: impl std::fmt::Display) -> Self {
        Self(Repr::Execution(text.to_string()))
    }

    /// Answer the call with this JSON-RPC error (a protocol-level failure).
    pub fn rpc(error: ErrorObject) -> Self {
        Self(Repr::Rpc(error))
    }

    /// Answer the call with -32602 (invalid params) and `message`.
    pub fn invalid_params(message: impl std::fmt::Display) -> Self {
        Self::rpc(ErrorObject::invalid_params(message))
    }

    /// The JSON-RPC error, when this is one.
    pub fn as_rpc(&self) -> Option<&ErrorObject> {
        match &self.0 {
            Repr::Rpc(e) => Some(e),
            Repr::Execution(_) => None,
        }
    }

    /// What the call is answered with: `Ok` the `isError` result of a tool execution
    /// error, `Err` the JSON-RPC error.
    ///
    /// # Errors
    /// The JSON-RPC error ([`ToolError::rpc`], [`ToolError::invalid_params`], an
    /// [`ErrorObject`] passed on with `?`).
    pub fn into_outcome(self) -> Result<CallToolResult, ErrorObject> {
        match self.0 {
            Repr::Execution(text) => Ok(CallToolResult::error(text)),
            Repr::Rpc(e) => Err(e),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Repr::Execution(text) => f.write_str(text),
            Repr::Rpc(e) => e.fmt(f),
        }
    }
}

impl<E> From<E> for ToolError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
        match boxed.downcast::<ErrorObject>() {
            Ok(rpc) => Self::rpc(*rpc),
            Err(other) => {
                let mut text = other.to_string();
                let mut source = other.source();
                while let Some(s) = source {
                    text.push_str(": ");
                    text.push_str(&s.to_string());
                    source = s.source();
                }
                Self::execution(text)
            }
        }
    }
}

/// A handler's outcome as the call is answered: `Ok` the result (a tool execution error
/// as an `isError` result), `Err` the JSON-RPC error.
pub(crate) fn outcome<R: Into<CallToolResult>>(
    result: Result<R, ToolError>,
) -> Result<CallToolResult, ErrorObject> {
    match result {
        Ok(r) => Ok(r.into()),
        Err(e) => e.into_outcome(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_proto::codes;

    #[derive(Debug, thiserror::Error)]
    #[error("the report failed")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_ordinary_error_is_an_is_error_result_with_its_text_and_sources() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e: ToolError = io.into();
        assert_eq!(e.as_rpc(), None);
        assert_eq!(
            e.into_outcome().unwrap(),
            CallToolResult::error("no such file")
        );
        let e: ToolError = Outer(std::io::Error::other("disk full")).into();
        assert_eq!(
            e.into_outcome().unwrap(),
            CallToolResult::error("the report failed: disk full")
        );
    }

    #[test]
    fn an_error_object_and_rpc_errors_stay_json_rpc_errors() {
        let e: ToolError = ErrorObject::new(-32021, "missing").into();
        assert_eq!(e.into_outcome().unwrap_err().code, -32021);
        let e = ToolError::invalid_params("bad");
        assert_eq!(e.as_rpc().unwrap().code, codes::INVALID_PARAMS);
        assert_eq!(
            outcome::<String>(Err(ToolError::rpc(ErrorObject::new(-32000, "x")))).unwrap_err(),
            ErrorObject::new(-32000, "x")
        );
        assert_eq!(outcome(Ok("done")).unwrap(), CallToolResult::text("done"));
    }
}
