//! Answering what the server asks: elicitation and sampling.
//!
//! A task in `input_required` sends its questions on the stream of the requestor's
//! `tasks/result` (or, with some servers, on the standalone stream); either way they
//! arrive here, and the application answers them through these traits. A server may also
//! task-augment them: with a [`crate::TaskReceiver`] the same handlers then run as tasks
//! of the client ([`ServerRequest::task_id`]).

use async_trait::async_trait;
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::meta;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Where a request from the server came from and what it asks.
#[derive(Debug, Clone)]
pub struct ServerRequest {
    /// The request's params, unchanged.
    pub params: Value,
    /// The task the request belongs to (its `io.modelcontextprotocol/related-task`).
    pub related_task: Option<String>,
    /// Fires when the server cancels the request or the connection closes; for a request
    /// run as a task of the client, when the server cancels that task (`tasks/cancel`) or
    /// it expires.
    pub cancel: CancellationToken,
    /// The client's own task this request runs as, when the server task-augmented it
    /// (see [`crate::TaskReceiver`]).
    pub task_id: Option<String>,
}

impl ServerRequest {
    pub(crate) fn new(params: Value, cancel: CancellationToken) -> Self {
        let related_task = meta::related_task(&params).map(str::to_owned);
        Self {
            params,
            related_task,
            cancel,
            task_id: None,
        }
    }

    /// A task-augmented request, run as the client's task `task_id`.
    pub(crate) fn for_task(params: Value, cancel: CancellationToken, task_id: String) -> Self {
        Self {
            task_id: Some(task_id),
            ..Self::new(params, cancel)
        }
    }

    /// `message` (elicitation).
    pub fn message(&self) -> &str {
        self.params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The elicitation mode: `form` (the default) or `url`.
    pub fn mode(&self) -> &str {
        self.params
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("form")
    }

    /// `requestedSchema` (form elicitation).
    pub fn requested_schema(&self) -> Option<&Value> {
        self.params.get("requestedSchema")
    }

    /// `messages` (sampling).
    pub fn messages(&self) -> &[Value] {
        self.params
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}

/// Answers `elicitation/create`.
#[async_trait]
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Return the `ElicitResult` (see [`elicit`] for the three actions), or a JSON-RPC
    /// error.
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject>;
}

/// Answers `sampling/createMessage`.
#[async_trait]
pub trait SamplingHandler: Send + Sync + 'static {
    /// Return the `CreateMessageResult` (see [`sampling::text`]), or a JSON-RPC error
    /// (a refusal).
    async fn create_message(&self, request: ServerRequest) -> Result<Value, ErrorObject>;
}

/// `ElicitResult` builders.
pub mod elicit {
    use serde_json::{Value, json};

    /// The user accepted and supplied `content`.
    pub fn accept(content: Value) -> Value {
        json!({ "action": "accept", "content": content })
    }

    /// The user explicitly declined.
    pub fn decline() -> Value {
        json!({ "action": "decline" })
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> Value {
        json!({ "action": "cancel" })
    }
}

/// `CreateMessageResult` builders.
pub mod sampling {
    use serde_json::{Value, json};

    /// An assistant text message from `model`.
    pub fn text(model: &str, text: &str) -> Value {
        json!({
            "role": "assistant",
            "content": { "type": "text", "text": text },
            "model": model,
            "stopReason": "endTurn",
        })
    }
}

/// Answers every elicitation with the same result.
#[derive(Debug, Clone)]
pub struct FixedElicitation(pub Value);

#[async_trait]
impl ElicitationHandler for FixedElicitation {
    async fn elicit(&self, _request: ServerRequest) -> Result<Value, ErrorObject> {
        Ok(self.0.clone())
    }
}

/// Answers every sampling request with the same text.
#[derive(Debug, Clone)]
pub struct FixedSampling {
    /// The `model` reported.
    pub model: String,
    /// The text answered.
    pub text: String,
}

#[async_trait]
impl SamplingHandler for FixedSampling {
    async fn create_message(&self, _request: ServerRequest) -> Result<Value, ErrorObject> {
        Ok(sampling::text(&self.model, &self.text))
    }
}

/// The error a client sends to refuse a sampling request (the code the spec's example
/// uses for a user rejection).
pub fn sampling_refused(why: &str) -> ErrorObject {
    ErrorObject::new(-1, format!("User rejected sampling request: {why}"))
}

/// Add the related-task `_meta` of `request` to `result`: "All requests, notifications,
/// and responses related to a task MUST include the
/// `io.modelcontextprotocol/related-task` key in their `_meta` field".
pub(crate) fn tag_related(mut result: Value, request: &ServerRequest) -> Value {
    if let Some(task) = &request.related_task {
        meta::tag_related_task(&mut result, task);
    }
    result
}
