//! The MCP 2025-11-25 types that mcp-tasks interprets.
//!
//! Every struct keeps unknown fields in `extra` (`#[serde(flatten)]`), so a message that
//! passes through our code comes out with every field it came in with.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The protocol revision that carries tasks, and the one we prefer.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// Revisions we accept in `initialize` (tasks are advertised only on the latest).
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// `_meta` key that ties a message to a task.
///
/// Spec: "All requests, notifications, and responses related to a task MUST include the
/// `io.modelcontextprotocol/related-task` key in their `_meta` field".
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key of `CreateTaskResult` holding a string to hand the model at once.
pub const MODEL_IMMEDIATE_RESPONSE_META: &str = "io.modelcontextprotocol/model-immediate-response";

/// Status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The receiver needs input from the requestor (through `tasks/result`).
    InputRequired,
    /// Finished successfully; the result is available.
    Completed,
    /// Did not finish successfully (a JSON-RPC error, or a tool result with `isError`).
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Every status.
    pub const ALL: [Self; 5] = [
        Self::Working,
        Self::InputRequired,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
    ];

    /// `completed`, `failed` and `cancelled` are terminal.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parse the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Defines `Task`: a task's operational metadata, with `$ttl` and `$poll` the names of its
/// two durations (milliseconds). The 2025-11-25 wire schema names them `ttl` and
/// `pollInterval` ([`Task`]); the tasks extension of 2026-07-28 `ttlMs` and
/// `pollIntervalMs` ([`crate::modern::tasks::Task`]). The other fields are the same.
macro_rules! task_struct {
    ($(#[$attr:meta])* $ttl:ident, $poll:ident) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct Task {
            /// The task id (stable).
            pub task_id: String,
            /// The current status.
            pub status: $crate::mcp::TaskStatus,
            /// Optional human-readable message describing the current state.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub status_message: Option<String>,
            /// RFC 3339 (ISO 8601) creation time; never changes.
            pub created_at: String,
            /// RFC 3339 (ISO 8601) time of the last update.
            pub last_updated_at: String,
            /// Actual retention from creation in milliseconds, `null` for unlimited.
            /// Always present.
            pub $ttl: Option<u64>,
            /// Suggested polling interval in milliseconds.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $poll: Option<u64>,
        }
    };
}
pub(crate) use task_struct;

task_struct! {
    /// The `Task` object of the 2025-11-25 wire schema. The tasks extension of 2026-07-28
    /// has the same fields under two other names for the durations
    /// ([`crate::modern::tasks::Task`]: `ttlMs`, `pollIntervalMs`).
    ttl, poll_interval
}

/// How a tool may be run as a task (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Never as a task (the default when absent).
    #[default]
    Forbidden,
    /// As a task or as a plain call.
    Optional,
    /// Only as a task.
    Required,
}

impl TaskSupport {
    /// Parse `required|optional|forbidden`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "forbidden" => Some(Self::Forbidden),
            "optional" => Some(Self::Optional),
            "required" => Some(Self::Required),
            _ => None,
        }
    }
}

/// A tool as listed by `tools/list`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool name.
    pub name: String,
    /// A description for the model.
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// `execution` (carries `taskSupport`).
    pub execution: Option<Value>,
    /// Every other field, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `tools/call`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// Its arguments.
    pub arguments: Option<Value>,
    /// Present when the call is task-augmented.
    pub task: Option<Value>,
    /// `_meta` (may hold `progressToken`).
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Every other field, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `_meta.progressToken` of request params, if any.
pub fn progress_token(params: Option<&Value>) -> Option<Value> {
    params?
        .get("_meta")?
        .get("progressToken")
        .filter(|t| t.is_string() || t.is_number())
        .cloned()
}

/// `{"io.modelcontextprotocol/related-task": {"taskId": id}}`.
pub fn related_task_value(task_id: &str) -> Value {
    json!({ "taskId": task_id })
}

/// Insert the related-task key into `obj._meta`, keeping every other `_meta` key.
/// Does nothing when `obj` is not an object.
pub fn set_related_task(obj: &mut Value, task_id: &str) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let meta = map
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(RELATED_TASK_META.to_owned(), related_task_value(task_id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_serializes_ttl_null_and_omits_absent_optionals() {
        let t = Task {
            task_id: "a".into(),
            status: TaskStatus::InputRequired,
            status_message: None,
            created_at: "2025-11-25T10:30:00Z".into(),
            last_updated_at: "2025-11-25T10:30:00Z".into(),
            ttl: None,
            poll_interval: None,
        };
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(
            v,
            json!({"taskId":"a","status":"input_required","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":null})
        );
    }

    #[test]
    fn call_params_keep_unknown_fields() {
        let v = json!({"name":"x","arguments":{"a":1},"task":{"ttl":5},"_meta":{"progressToken":3},"future":{"k":[1]}});
        let p: CallToolParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        assert_eq!(progress_token(Some(&v)), Some(json!(3)));
    }

    #[test]
    fn related_task_keeps_other_meta() {
        let mut r = json!({"content":[],"_meta":{"other":1}});
        set_related_task(&mut r, "t1");
        assert_eq!(
            r["_meta"],
            json!({"other":1, RELATED_TASK_META: {"taskId":"t1"}})
        );
    }
}
