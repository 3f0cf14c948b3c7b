//! The tasks extension `io.modelcontextprotocol/tasks` (SEP-2663): the flat
//! `CreateTaskResult`, the `DetailedTask` of `tasks/get` and `notifications/tasks`, and
//! the params of `tasks/get`, `tasks/update` and `tasks/cancel`.
//!
//! The statuses are those of 2025-11-25 ([`TaskStatus`]); what differs is the shape
//! (`ttlMs`/`pollIntervalMs`, flat results, inline `result`/`error`/`inputRequests`) and
//! that a tool result with `isError: true` ends `completed`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{InputRequests, InputResponses, ResultType};
use crate::ErrorObject;
pub use crate::mcp::TaskStatus;

crate::mcp::task_struct! {
    /// `Task`: operational metadata about ongoing work. The fields of the 2025-11-25
    /// `Task` ([`crate::mcp::Task`]) with the durations named `ttlMs` and `pollIntervalMs`.
    ttl_ms, poll_interval_ms
}

impl From<&crate::mcp::Task> for Task {
    /// The same task in the extension's shape (`ttl` -> `ttlMs`, `pollInterval` ->
    /// `pollIntervalMs`).
    fn from(t: &crate::mcp::Task) -> Self {
        Self {
            task_id: t.task_id.clone(),
            status: t.status,
            status_message: t.status_message.clone(),
            created_at: t.created_at.clone(),
            last_updated_at: t.last_updated_at.clone(),
            ttl_ms: t.ttl,
            poll_interval_ms: t.poll_interval,
        }
    }
}

/// `CreateTaskResult = Result & Task`, flat, with `resultType: "task"`.
///
/// Spec (SEP-2663): "Servers MUST set `resultType` to `"task"` when returning a
/// `CreateTaskResult`".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Always [`ResultType::Task`].
    pub result_type: ResultType,
    /// The seed state of the task.
    #[serde(flatten)]
    pub task: Task,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> Self {
        Self {
            result_type: ResultType::Task,
            task,
            meta: None,
        }
    }
}

/// `DetailedTask`: a task with its status-specific payload inline, as `tasks/get` and
/// `notifications/tasks` carry it. `T` is the task's shape: this extension's [`Task`] (the
/// default), or the 2025-11-25 [`crate::mcp::Task`] a client reads it into whatever
/// revision answered.
///
/// One struct for the five variants of the union; [`DetailedTask::check`] enforces that
/// the payload matches the status.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask<T = Task> {
    /// The task.
    #[serde(flatten)]
    pub task: T,
    /// `completed`: the final result of the request (a `CallToolResult` for `tools/call`,
    /// `isError: true` included).
    pub result: Option<Value>,
    /// `failed`: the JSON-RPC error the request ended with.
    pub error: Option<ErrorObject>,
    /// `input_required`: every outstanding request, by key.
    pub input_requests: Option<InputRequests>,
}

impl<T> DetailedTask<T> {
    /// A task with no payload (`working`, `cancelled`; all 2025-11-25's `tasks/get`
    /// gives).
    pub fn bare(task: T) -> Self {
        Self {
            task,
            result: None,
            error: None,
            input_requests: None,
        }
    }
}

impl DetailedTask {
    /// Check that the payload matches the status.
    ///
    /// Spec (SEP-2663, `tasks/get`): "If the status is `input_required`, the server MUST
    /// return a `Task` object with status `input_required` and an `inputRequests` field";
    /// "If the status is `completed`, the server MUST return a `Task` object with status
    /// `completed` and a `result` field"; "If the status is `failed`, ... the `error`
    /// field MUST contain that JSON-RPC error."
    ///
    /// # Errors
    /// What does not match, in a sentence.
    pub fn check(&self) -> Result<(), String> {
        let status = self.task.status;
        let has = [
            ("result", self.result.is_some(), TaskStatus::Completed),
            ("error", self.error.is_some(), TaskStatus::Failed),
            (
                "inputRequests",
                self.input_requests.is_some(),
                TaskStatus::InputRequired,
            ),
        ];
        for (field, present, wants) in has {
            if present && status != wants {
                return Err(format!("a `{status}` task carries `{field}`"));
            }
            if !present && status == wants {
                return Err(format!("a `{status}` task must carry `{field}`"));
            }
        }
        Ok(())
    }
}

/// `GetTaskResult = Result & DetailedTask`, with `resultType: "complete"`.
///
/// Spec (SEP-2663): "The `resultType` field MUST be set to `"complete"` on this object as
/// it is the standard result shape for the `tasks/get` request."
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult {
    /// Always [`ResultType::Complete`].
    pub result_type: ResultType,
    /// The task and its payload.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl GetTaskResult {
    /// The result carrying `task`.
    pub fn new(task: DetailedTask) -> Self {
        Self {
            result_type: ResultType::Complete,
            task,
            meta: None,
        }
    }
}

/// Params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// `_meta` (the per-request modern fields).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers to outstanding `inputRequests`, by key.
    ///
    /// Spec (SEP-2663): "A server SHOULD ignore any `inputResponses` responses mapped to
    /// a key that is not currently outstanding for the task".
    pub input_responses: InputResponses,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl UpdateTaskParams {
    /// Check that every response is an object (each is the client's result for one
    /// request: `ElicitResult`, `CreateMessageResult`, `ListRootsResult`).
    ///
    /// # Errors
    /// The first key whose response is not an object.
    pub fn check(&self) -> Result<(), String> {
        match self.input_responses.iter().find(|(_, v)| !v.is_object()) {
            Some((k, _)) => Err(format!("inputResponses[{k:?}] must be an object")),
            None => Ok(()),
        }
    }
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`:
/// `{"resultType": "complete"}`.
///
/// Spec (SEP-2663): "On success, the server MUST acknowledge the request with an empty
/// result." and "The `resultType` field MUST be set to `"complete"` on
/// `UpdateTaskResult`".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AckResult {
    /// Always [`ResultType::Complete`].
    pub result_type: ResultType,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl Default for AckResult {
    fn default() -> Self {
        Self {
            result_type: ResultType::Complete,
            meta: None,
        }
    }
}

/// Params of `notifications/tasks`: the full `DetailedTask`, identical to what
/// `tasks/get` would return at that moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskNotificationParams {
    /// The task and its payload.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId` on a listen stream).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}
