//! Calling tools: plainly, as a 2025-11-25 task, or as a 2026-07-28 server decides
//! (a result, a task, or multi round-trip questions first).

use mcp_tasks_proto::mcp::{MODEL_IMMEDIATE_RESPONSE_META, TaskSupport};
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use mcp_tasks_proto::{meta, methods};
use serde_json::{Map, Value, json};

use crate::ClientError;
use crate::client::Client;
use crate::rounds::{Answered, RoundTrips, RoundsError, run_rounds};
use crate::task::TaskHandle;
use crate::types::{CallToolResult, parse_task, task_support};

/// What a call started with [`Client::start_call`] gave.
#[derive(Debug)]
pub enum Started {
    /// The result, at once (or after the questions of a multi round-trip call).
    Result(CallToolResult),
    /// A task: follow it with its handle.
    Task(TaskHandle),
}

/// Options of one tool call.
#[non_exhaustive]
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Requested task lifetime in milliseconds (task-augmented calls only).
    ///
    /// Spec: "Requestors MAY include a `ttl` value indicating the desired task duration
    /// (in milliseconds) since its creation."
    pub ttl: Option<u64>,
    /// `_meta.progressToken`, to receive `notifications/progress` (for a task, "The
    /// `progressToken` provided in the initial request remains valid throughout the
    /// task's lifetime").
    pub progress_token: Option<Value>,
}

impl CallOptions {
    /// Ask for a task lifetime of `ttl_ms` milliseconds.
    pub fn with_ttl(mut self, ttl_ms: u64) -> Self {
        self.ttl = Some(ttl_ms);
        self
    }

    /// Send `token` as `_meta.progressToken`.
    pub fn with_progress_token(mut self, token: Value) -> Self {
        self.progress_token = Some(token);
        self
    }
}

/// The params of a `tools/call` of `name` with `arguments`: `task` when given, and the
/// progress token of `options` in `_meta`.
fn call_params(
    name: &str,
    arguments: Value,
    task: Option<Map<String, Value>>,
    options: &CallOptions,
) -> Value {
    let mut params = json!({ "name": name, "arguments": arguments });
    if let Some(task) = task {
        params["task"] = Value::Object(task);
    }
    if let Some(token) = &options.progress_token {
        meta::set_progress_token(&mut params, token.clone());
    }
    params
}

impl Client {
    /// Call a tool and return its result. A tool whose `taskSupport` is `required` (on a
    /// server declaring `tasks.requests.tools.call`) is run as a task and waited for;
    /// anything else is a plain call.
    ///
    /// Spec: "If `execution.taskSupport` is `"required"`, clients MUST invoke the tool as
    /// a task."
    ///
    /// # Errors
    /// The server's error for the call; for a task, [`ClientError::Task`] with the error
    /// the task ended with.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, &CallOptions::default())
            .await
    }

    /// [`Self::call_tool`] with options.
    ///
    /// # Errors
    /// As [`Self::call_tool`].
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        match self.start_call(name, arguments, options).await? {
            Started::Result(r) => Ok(r),
            Started::Task(task) => task.result().await,
        }
    }

    /// A `tools/call` without a task.
    async fn plain_call(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        let params = call_params(name, arguments, None, options);
        let v = self
            .send(methods::TOOLS_CALL, Some(params), self.inner.call_timeout)
            .await?;
        Ok(CallToolResult(v))
    }

    /// 2026-07-28: call a tool; the server decides whether the call becomes a task.
    ///
    /// * `resultType: "complete"` (or none): the result;
    /// * `resultType: "task"` (the server made it a task; only with the tasks extension
    ///   declared): its handle, to follow with [`TaskHandle::result`], which polls
    ///   `tasks/get` and answers the task's `inputRequests` with `tasks/update`;
    /// * `resultType: "input_required"` (multi round-trip): every `inputRequests` entry is
    ///   answered by the client's handlers and the call is sent again with
    ///   `inputResponses` and the `requestState` echoed, at most
    ///   [`ClientConfig::max_input_rounds`](crate::ClientConfig::max_input_rounds) times.
    ///
    /// In 2025-11-25 it is [`Self::call_tool_with`] (a `required` tool as a task).
    ///
    /// Spec (SEP-2663): "A client that has negotiated this extension MUST be prepared to
    /// handle either `CallToolResult` or `CreateTaskResult` in response to any supported
    /// request it issues." Spec (MRTR): "If an `InputRequiredResult` contains the
    /// `requestState` field, the client MUST echo back the exact value of that field when
    /// retrying the original request. ... If the `InputRequiredResult` does not contain a
    /// `requestState` field, the client MUST NOT include one in the retry." Spec (basic):
    /// "A `resultType` of any value unrecognized by the client MUST be considered
    /// invalid."
    ///
    /// # Errors
    /// The server's error; [`ClientError::Unanswered`] when a question cannot be
    /// answered; [`ClientError::Protocol`] for an unknown `resultType` or too many rounds.
    pub async fn start_call(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<Started, ClientError> {
        if !self.revision().tasks_are_extension() {
            let required = self.server_tasks().tools_call
                && self
                    .tool(name)
                    .await?
                    .is_some_and(|t| task_support(&t) == TaskSupport::Required);
            if required {
                return match self.call_tool_as_task(name, arguments, options).await {
                    Ok(task) => Ok(Started::Task(task)),
                    Err(ClientError::NotStarted(r)) => Ok(Started::Result(*r)),
                    Err(e) => Err(e),
                };
            }
            return self
                .plain_call(name, arguments, options)
                .await
                .map(Started::Result);
        }
        self.modern_call(name, arguments, options).await
    }

    /// [`Self::start_call`] in 2026-07-28: the rounds of the call ([`run_rounds`]) with
    /// the client's handlers answering.
    async fn modern_call(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<Started, ClientError> {
        let Value::Object(params) = call_params(name, arguments, None, options) else {
            unreachable!("the params are an object")
        };
        let call = OwnCall {
            client: self,
            relisted: AtomicBool::new(false),
        };
        match run_rounds(&call, params, self.inner.max_input_rounds).await {
            Ok(Answered::Complete(v)) => Ok(Started::Result(CallToolResult(v))),
            Ok(Answered::Task(v)) => {
                let task = parse_task(&v)?;
                let handle =
                    TaskHandle::new(self.clone(), self.register(task), Some(name.into()), None);
                Ok(Started::Task(handle))
            }
            Err(RoundsError::Peer(e)) => Err(e),
            Err(RoundsError::TooMany(n)) => Err(ClientError::Protocol(format!(
                "tools/call of `{name}` still asks for input after {n} rounds (the client's bound)"
            ))),
            Err(RoundsError::UnknownResult(t)) => Err(ClientError::Protocol(format!(
                "tools/call of `{name}` was answered with the unknown resultType `{t}`"
            ))),
        }
    }

    /// Answer `requests` (an `inputRequests` map) one after the other with the client's
    /// handlers; the `inputResponses` map.
    pub(crate) async fn answer_inputs(
        &self,
        requests: Map<String, Value>,
        task: Option<&str>,
    ) -> Result<Map<String, Value>, ClientError> {
        let mut responses = Map::new();
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            match self.inner.rpc.shared.answer(&method, params, task).await {
                Ok(v) => {
                    responses.insert(key, v);
                }
                Err(error) => return Err(ClientError::Unanswered { method, error }),
            }
        }
        Ok(responses)
    }

    /// Call a tool as a task and return its handle at once.
    ///
    /// Allowed only when the server declares `tasks.requests.tools.call` and the tool's
    /// `taskSupport` is `optional` or `required`. Spec: "If a server's capabilities do
    /// not include `tasks.requests.tools.call`, then clients MUST NOT attempt to use task
    /// augmentation on that server's tools, regardless of the `execution.taskSupport`
    /// value set on their tool definitions."
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] before anything is sent (no such capability, no such
    /// tool, or its `taskSupport` forbids a task); the server's error for the call;
    /// [`ClientError::NotStarted`] with the result when the server answered with a
    /// `CallToolResult` and created no task (bad arguments).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<TaskHandle, ClientError> {
        if self.revision().tasks_are_extension() {
            // The server decides; a call it answers at once created no task.
            return match self.modern_call(name, arguments, options).await? {
                Started::Task(t) => Ok(t),
                Started::Result(r) => Err(ClientError::NotStarted(Box::new(r))),
            };
        }
        if !self.server_tasks().tools_call {
            return Err(ClientError::unsupported(
                format!("tool `{name}` as a task"),
                "its capabilities do not declare tasks.requests.tools.call",
            ));
        }
        let Some(tool) = self.tool(name).await? else {
            return Err(ClientError::unknown_tool(name));
        };
        if task_support(&tool) == TaskSupport::Forbidden {
            return Err(ClientError::unsupported(
                format!("tool `{name}` as a task"),
                "the tool's execution.taskSupport is absent or forbidden",
            ));
        }
        let mut task = Map::new();
        if let Some(ttl) = options.ttl {
            task.insert("ttl".into(), json!(ttl));
        }
        let params = call_params(name, arguments, Some(task), options);
        let v = self.request(methods::TOOLS_CALL, Some(params)).await?;
        let Some(task) = v.get("task") else {
            if v.get("content").is_some_and(Value::is_array) {
                return Err(ClientError::NotStarted(Box::new(CallToolResult(v))));
            }
            return Err(ClientError::Protocol(format!(
                "a task-augmented tools/call was answered without `task`: {v}"
            )));
        };
        let task = parse_task(task)?;
        let immediate = v
            .get("_meta")
            .and_then(|m| m.get(MODEL_IMMEDIATE_RESPONSE_META))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(TaskHandle::new(
            self.clone(),
            self.register(task),
            Some(name.to_owned()),
            immediate,
        ))
    }
}

/// The rounds of a [`Client`]'s own 2026-07-28 `tools/call`: sent with the call timeout,
/// the questions answered by the client's handlers.
struct OwnCall<'a> {
    client: &'a Client,
    /// Whether `tools/list` was read again for a `HeaderMismatch` (once per call).
    relisted: AtomicBool,
}

#[async_trait]
impl RoundTrips for OwnCall<'_> {
    type Error = ClientError;

    /// Spec (streamable HTTP): "If the server rejects a request with a `HeaderMismatch`
    /// error because required `Mcp-Param-*` headers are missing or do not match the
    /// body, the client SHOULD call `tools/list` to check for changes to the tool's
    /// `inputSchema`, then retry the original request with the appropriate headers."
    /// Once.
    async fn send(&self, params: Value) -> Result<Value, ClientError> {
        let client = self.client;
        loop {
            let sent = client
                .send(
                    methods::TOOLS_CALL,
                    Some(params.clone()),
                    client.inner.call_timeout,
                )
                .await;
            match sent {
                Err(ClientError::Rpc { error, .. })
                    if error.code == mcp_tasks_proto::modern::codes::HEADER_MISMATCH
                        && !self.relisted.load(Ordering::Relaxed)
                        && client.is_http() =>
                {
                    self.relisted.store(true, Ordering::Relaxed);
                    client.list_tools().await?;
                }
                sent => return sent,
            }
        }
    }

    async fn answer(
        &self,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        self.client.answer_inputs(requests, None).await
    }
}
