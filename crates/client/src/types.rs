//! The few typed views the client offers over raw JSON (which it always keeps).

use mcp_tasks_proto::mcp::{Task, TaskStatus, TaskSupport, Tool};
use serde_json::Value;

use crate::ClientError;

/// A `CallToolResult`, exactly as the server sent it (unknown fields and `_meta`
/// included).
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolResult(pub Value);

impl CallToolResult {
    /// Whether the tool reported an error (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.0.get("isError").and_then(Value::as_bool) == Some(true)
    }

    /// The content blocks.
    pub fn content(&self) -> &[Value] {
        self.0
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The text of the text blocks, one per line.
    pub fn text(&self) -> String {
        self.content()
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `structuredContent`, if any.
    pub fn structured_content(&self) -> Option<&Value> {
        self.0.get("structuredContent")
    }

    /// The result as the typed [`mcp_tasks_proto::CallToolResult`] (content blocks by
    /// type, `structuredContent` as an object), for a result that is a valid one.
    ///
    /// # Errors
    /// When the server's result is not a valid `CallToolResult` (this wrapper keeps it
    /// anyway: the client is tolerant in what it accepts).
    pub fn parse(&self) -> Result<mcp_tasks_proto::CallToolResult, serde_json::Error> {
        mcp_tasks_proto::CallToolResult::from_value(&self.0)
    }

    /// The raw result.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The raw result.
    pub fn into_value(self) -> Value {
        self.0
    }
}

/// What `initialize` returned.
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeResult {
    /// The protocol revision in use.
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: Value,
    /// `serverInfo`.
    pub server_info: Value,
    /// `instructions`, if any.
    pub instructions: Option<String>,
    /// The whole result.
    pub raw: Value,
}

/// The `tasks` capability of a peer, read leniently: a capability is present when its
/// key is there with any value but `null` or `false` (`{}` is the spec's form).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCapabilities {
    /// `capabilities.tasks` is there (even empty: `tasks: {}`).
    pub declared: bool,
    /// `tasks.list`: the peer serves `tasks/list`.
    pub list: bool,
    /// `tasks.cancel`: the peer serves `tasks/cancel`.
    pub cancel: bool,
    /// `tasks.requests.tools.call`: `tools/call` may be task-augmented (a server's).
    pub tools_call: bool,
    /// `tasks.requests.elicitation.create`: `elicitation/create` may be task-augmented (a
    /// client's).
    pub elicitation_create: bool,
    /// `tasks.requests.sampling.createMessage`: `sampling/createMessage` may be
    /// task-augmented (a client's).
    pub sampling_create_message: bool,
}

fn present(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null() && *v != Value::Bool(false))
}

impl TaskCapabilities {
    /// Read from a `capabilities` object.
    ///
    /// Spec: "The set of capabilities in `capabilities.tasks.requests` is exhaustive. If a
    /// request type is not present, it does not support task-augmentation."
    pub fn from_capabilities(caps: &Value) -> Self {
        let tasks = caps.get("tasks");
        if !present(tasks) {
            return Self::default();
        }
        let tasks = tasks.unwrap_or(&Value::Null);
        let request = |kind: &str, name: &str| {
            present(
                tasks
                    .get("requests")
                    .and_then(|r| r.get(kind))
                    .and_then(|t| t.get(name)),
            )
        };
        Self {
            declared: true,
            list: present(tasks.get("list")),
            cancel: present(tasks.get("cancel")),
            tools_call: request("tools", "call"),
            elicitation_create: request("elicitation", "create"),
            sampling_create_message: request("sampling", "createMessage"),
        }
    }
}

/// A tool's `execution.taskSupport`; absent (or unknown) means forbidden.
///
/// Spec: "If `execution.taskSupport` is not present or `"forbidden"`, clients MUST NOT
/// attempt to invoke the tool as a task. [...] This is the default behavior."
pub fn task_support(tool: &Tool) -> TaskSupport {
    tool.execution
        .as_ref()
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        .and_then(TaskSupport::parse)
        .unwrap_or_default()
}

/// Parse a `Task` leniently: `taskId` and `status` are needed; a missing `ttl` reads as
/// unlimited, missing timestamps as empty strings; unknown fields are ignored. The
/// 2026-07-28 names (`ttlMs`, `pollIntervalMs`) are read as `ttl` and `pollInterval`.
///
/// # Errors
/// [`ClientError::Protocol`] without a usable `taskId` or `status`.
pub fn parse_task(v: &Value) -> Result<Task, ClientError> {
    let task_id = v
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| ClientError::Protocol(format!("a task without `taskId`: {v}")))?;
    let status = v
        .get("status")
        .and_then(Value::as_str)
        .and_then(TaskStatus::parse)
        .ok_or_else(|| ClientError::Protocol(format!("a task without a known `status`: {v}")))?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Task {
        task_id: task_id.to_owned(),
        status,
        status_message: text("statusMessage"),
        created_at: text("createdAt").unwrap_or_default(),
        last_updated_at: text("lastUpdatedAt").unwrap_or_default(),
        ttl: v
            .get("ttl")
            .or_else(|| v.get("ttlMs"))
            .and_then(Value::as_u64),
        poll_interval: v
            .get("pollInterval")
            .or_else(|| v.get("pollIntervalMs"))
            .and_then(Value::as_u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn capabilities_are_read_leniently() {
        let c = TaskCapabilities::from_capabilities(&json!({"tasks": {}}));
        assert!(c.declared && !c.list && !c.cancel && !c.tools_call);
        let c = TaskCapabilities::from_capabilities(
            &json!({"tasks": {"list": {}, "cancel": true, "requests": {"tools": {"call": {}}}}}),
        );
        assert!(c.declared && c.list && c.cancel && c.tools_call);
        assert!(!c.elicitation_create && !c.sampling_create_message);
        let c = TaskCapabilities::from_capabilities(
            &json!({"tasks": {"requests": {"elicitation": {"create": {}}, "sampling": {"createMessage": {}}}}}),
        );
        assert!(c.elicitation_create && c.sampling_create_message && !c.tools_call);
        assert_eq!(
            TaskCapabilities::from_capabilities(&json!({"tools": {}})),
            TaskCapabilities::default()
        );
        assert!(!TaskCapabilities::from_capabilities(&json!({"tasks": null})).declared);
    }

    #[test]
    fn tasks_parse_without_ttl_or_timestamps() {
        let t = parse_task(&json!({"taskId": "a", "status": "working"})).unwrap();
        assert_eq!(t.ttl, None);
        assert_eq!(t.poll_interval, None);
        assert!(parse_task(&json!({"taskId": "a", "status": "odd"})).is_err());
        assert!(parse_task(&json!({"status": "working"})).is_err());
        let t = parse_task(
            &json!({"taskId": "a", "status": "working", "ttlMs": 5, "pollIntervalMs": 7}),
        )
        .unwrap();
        assert_eq!((t.ttl, t.poll_interval), (Some(5), Some(7)));
    }

    #[test]
    fn results_expose_their_parts() {
        let r = CallToolResult(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}], "isError": true}),
        );
        assert!(r.is_error());
        assert_eq!(r.text(), "a\nb");
        assert_eq!(r.content().len(), 3);
        // `{"type": "image"}` lacks `data` and `mimeType`: kept raw, but not a valid result.
        assert!(r.parse().is_err());
        let ok = CallToolResult(json!({"content": [{"type": "text", "text": "a"}], "x": 1}));
        let typed = ok.parse().unwrap();
        assert_eq!(typed.first_text(), Some("a"));
        assert_eq!(typed.extra["x"], 1);
    }
}
