//! [`ToolCall`]: a 2026-07-28 `tools/call` ready to run, as `tools/call` hands it to the
//! ways a call runs (directly with multi round-trip, as a task, or deferred).

use serde_json::Value;

use crate::logging::LogThreshold;
use crate::tool::Tool;

/// A `tools/call` ready to run: the tool, its arguments, the params its handler sees, and
/// the capabilities the client declared on the request.
pub(super) struct ToolCall<'a> {
    pub tool: &'a Tool,
    pub args: Value,
    pub params: Value,
    pub caps: Value,
    /// The level of the request's `_meta` log level (off without one).
    pub log: LogThreshold,
}
