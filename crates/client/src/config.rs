//! How a client presents itself and answers the server.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::input::{ElicitationHandler, SamplingHandler};
use crate::receiver::TaskReceiver;

/// Configuration of a [`crate::Client`].
#[non_exhaustive]
#[derive(Clone)]
pub struct ClientConfig {
    /// `clientInfo.name`.
    pub name: String,
    /// `clientInfo.version`.
    pub version: String,
    /// Bound on every request but a plain `tools/call` and `tasks/result` (which wait
    /// on the work itself). `None` waits forever. Default 60 s.
    pub request_timeout: Option<Duration>,
    /// Bound on a plain (not task-augmented) `tools/call`. Default none.
    pub call_timeout: Option<Duration>,
    /// Answers `elicitation/create`; declares the `elicitation` capability (form mode).
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// Answers `sampling/createMessage`; declares the `sampling` capability.
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    /// Runs task-augmented `elicitation/create` / `sampling/createMessage` as tasks of the
    /// client; declares the `tasks` capability (`list`, `cancel`, and the request types
    /// the client has a handler for).
    pub task_receiver: Option<TaskReceiver>,
    /// More client capabilities, merged over the ones above.
    pub extra_capabilities: Map<String, Value>,
}

mcp_tasks_proto::debug_non_exhaustive!(ClientConfig, |s| {
    name: s.name,
    version: s.version,
    request_timeout: s.request_timeout,
    call_timeout: s.call_timeout,
    elicitation: s.elicitation.is_some(),
    sampling: s.sampling.is_some(),
    task_receiver: s.task_receiver.is_some(),
});

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            name: "mcp-tasks-client".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            request_timeout: Some(Duration::from_secs(60)),
            call_timeout: None,
            elicitation: None,
            sampling: None,
            task_receiver: None,
            extra_capabilities: Map::new(),
        }
    }
}

impl ClientConfig {
    /// Answer elicitations with `handler`.
    #[must_use]
    pub fn with_elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answer sampling requests with `handler`.
    #[must_use]
    pub fn with_sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Run task-augmented requests of the server as tasks in `receiver` (see
    /// [`crate::receiver`]).
    #[must_use]
    pub fn with_task_receiver(mut self, receiver: TaskReceiver) -> Self {
        self.task_receiver = Some(receiver);
        self
    }

    /// Set the request timeout.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The `capabilities` sent in `initialize`.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        if self.elicitation.is_some() {
            caps.insert("elicitation".into(), json!({ "form": {} }));
        }
        if self.sampling.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        // Spec: "Servers and clients that support task-augmented requests MUST declare a
        // `tasks` capability during initialization." The request types are exhaustive:
        // only those the client can answer.
        if self.task_receiver.is_some() {
            let mut requests = Map::new();
            if self.elicitation.is_some() {
                requests.insert("elicitation".into(), json!({ "create": {} }));
            }
            if self.sampling.is_some() {
                requests.insert("sampling".into(), json!({ "createMessage": {} }));
            }
            caps.insert(
                "tasks".into(),
                json!({ "list": {}, "cancel": {}, "requests": requests }),
            );
        }
        for (k, v) in &self.extra_capabilities {
            caps.insert(k.clone(), v.clone());
        }
        Value::Object(caps)
    }
}
