//! The API to serve your own tools.
//!
//! A tool is a name, a description, an input schema, a task-support mode and an async
//! handler. The handler receives its arguments and a [`ToolContext`] through which it
//! reports progress, asks the client for input (`elicitation/create`), asks it to sample
//! (`sampling/createMessage`) and notices cancellation. The same handler runs as a plain
//! call or as a task: it cannot tell the difference, and need not.
//!
//! Two ways to build one:
//! * [`Tool::typed`] (feature `schemars`, on by default): the handler takes a Rust type
//!   `A: DeserializeOwned + JsonSchema`; the input schema is derived from `A`, bounds
//!   included (`#[schemars(range(min = 1, max = 7))]`).
//! * [`Tool::new`] / [`Tool::with_handler`]: the raw path, a hand-written JSON Schema and
//!   the arguments as a [`Value`].
//!
//! Either way the session validates the arguments against the input schema before the
//! handler runs (see [`Tool::check_arguments`]); a handler never sees arguments its schema
//! rejects, so it need not re-check ranges by hand.
//!
//! **Handlers that ask may be re-run.** In a direct (non-task) 2026-07-28 call, a question
//! ([`ToolContext::elicit`], [`ToolContext::sample`], [`ToolContext::request`]) is
//! answered to the client as an `InputRequiredResult`, and the client retries with the
//! answers. When the retry reaches the process that asked, the handler simply goes on.
//! When it reaches another replica (or the parked call expired), the handler is run again
//! from the start and its questions, in the order asked, get the answers recorded in the
//! `requestState` (at most [`crate::MAX_REQUEST_STATE_BYTES`]) until it asks something
//! new or finishes. So a handler must be deterministic up to its questions (same
//! arguments and answers: the same questions, by method, in the same order), and what it
//! does before a question may run again: keep side effects after the last question, or
//! make them idempotent. A task's handler runs once.
//!
//! **Input first, then a task.** A tool built with [`Tool::task_after_input`] always runs
//! as a task, but asks its questions before [`ToolContext::start_task`] synchronously (in
//! 2026-07-28: the `input_required` rounds above, so the same re-run rule applies to what
//! comes before `start_task`); the handler then goes on as the task's work.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::RequestorChannel;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{CallToolResult, ErrorObject, Revision, codes, methods};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::logging::{LogLevel, LogThreshold};
use crate::tool_error::ToolError;
use crate::validate::{ArgsValidator, OutputCheck};

/// Runs a tool: the lower-level form of a handler, whose failure is the call's JSON-RPC
/// error as it goes on the wire ([`Tool::new`] and [`Tool::typed`] take closures that fail
/// with a [`ToolError`] instead). A gateway implements it to forward calls unchanged.
#[async_trait]
pub trait ToolHandler: Send + Sync + 'static {
    /// Run with `args` (the `arguments` object, `{}` when absent, already valid against
    /// the tool's input schema unless validation is off). `Ok` is the tool's result,
    /// [`CallToolResult::error`] for a tool execution error the model should see; `Err` is
    /// the JSON-RPC error of the call (a protocol-level failure).
    async fn call(&self, args: Value, cx: ToolContext) -> Result<CallToolResult, ErrorObject>;
}

struct FnHandler<F>(F);

#[async_trait]
impl<F, Fut> ToolHandler for FnHandler<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    async fn call(&self, args: Value, cx: ToolContext) -> Result<CallToolResult, ErrorObject> {
        crate::tool_error::outcome((self.0)(args, cx).await)
    }
}

/// A tool definition.
#[derive(Clone)]
pub struct Tool {
    /// The name.
    pub name: String,
    /// The description.
    pub description: String,
    /// JSON Schema of the arguments. The argument validator is compiled from it on the
    /// first call: change it before the tool is first called, not after.
    pub input_schema: Value,
    /// How it may run as a task; `None` lists no `execution` at all (same as forbidden).
    pub task_support: Option<TaskSupport>,
    /// More fields for `tools/list` (`title`, `annotations`, `outputSchema`, ...).
    pub extra: Map<String, Value>,
    /// The handler.
    pub handler: Arc<dyn ToolHandler>,
    /// Validates arguments against `input_schema` (compiled once, shared by clones).
    validator: Option<Arc<ArgsValidator>>,
    /// Checks results against the schema [`Tool::output_schema`] set.
    output: Option<Arc<OutputCheck>>,
    /// [`Tool::task_after_input`]: questions before [`ToolContext::start_task`] are asked
    /// before the task exists.
    input_first: bool,
}

mcp_tasks_proto::debug_non_exhaustive!(Tool, |s| {
    name: s.name,
    task_support: s.task_support,
    validates_arguments: s.validator.is_some(),
});

impl Tool {
    /// A tool from a closure taking the raw `arguments` object. Task support defaults to
    /// none (forbidden). Arguments are validated against `input_schema` before `f` runs
    /// (see [`Tool::check_arguments`]); a schema the validator cannot compile turns
    /// validation off for this tool, with a warning in the log on its first call. `f`
    /// fails with a [`ToolError`]: `?` on an ordinary error gives an `isError` result,
    /// [`ToolError::rpc`] a JSON-RPC error.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        f: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        Self::with_handler(name, description, input_schema, Arc::new(FnHandler(f)))
    }

    /// A tool from a handler object (arguments validated as for [`Tool::new`]).
    pub fn with_handler(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: Arc<dyn ToolHandler>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            task_support: None,
            extra: Map::new(),
            handler,
            validator: Some(Arc::new(ArgsValidator::default())),
            output: None,
            input_first: false,
        }
    }

    /// Always run as a task (`execution.taskSupport: "required"`), but gather input
    /// first, before the task exists: in a 2026-07-28 call (client with the tasks
    /// extension) the handler starts as a direct call, its questions
    /// ([`ToolContext::ask`], [`ToolContext::elicit`], ...) are answered by multi
    /// round-trip rounds (`InputRequiredResult`, retried with `inputResponses` and the
    /// signed `requestState`, re-run on another replica as for any direct call), and the
    /// task is created when it calls [`ToolContext::start_task`] (or, at the latest, when
    /// it finishes): that round's answer is the `CreateTaskResult`, and from then on the
    /// running handler is the task's work (its later questions are the task's
    /// `inputRequests`). In 2025-11-25 a required tool is called as a task from the start:
    /// every question goes to the client through the task (`input_required`, relayed on
    /// `tasks/result`) and `start_task` does nothing.
    ///
    /// Spec (SEP-2663): "Server implementations that use multi round-trip requests in
    /// conjunction with task creation (for example, a tool that requires elicitation over
    /// `InputRequiredResult` before creating a task) **SHOULD** resolve all MRTR exchanges
    /// _synchronously_ before responding with a `CreateTaskResult`."
    #[must_use]
    pub fn task_after_input(mut self) -> Self {
        self.task_support = Some(TaskSupport::Required);
        self.input_first = true;
        self
    }

    /// Whether [`Tool::task_after_input`] is set (and the tool still `required`).
    pub fn gathers_input_before_task(&self) -> bool {
        self.input_first && self.task_support == Some(TaskSupport::Required)
    }

    /// Set `execution.taskSupport`.
    #[must_use]
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = Some(support);
        self
    }

    /// Turn argument validation on (the default) or off. Off suits a tool that forwards
    /// its arguments to someone who validates them (a gateway's upstream tools).
    #[must_use]
    pub fn validate_arguments(mut self, on: bool) -> Self {
        self.validator = on.then(|| Arc::new(ArgsValidator::default()));
        self
    }

    /// Set `outputSchema`, the JSON Schema of the `structuredContent` of the tool's
    /// results (listed by `tools/list`; clients validate results against it).
    ///
    /// Spec (tools page): "If an output schema is provided: Servers MUST provide
    /// structured results that conform to this schema." So every result the handler
    /// returns is checked against it (see [`Tool::check_result`]).
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output = Some(Arc::new(OutputCheck::new(schema.clone())));
        self.extra.insert("outputSchema".into(), schema);
        self
    }

    /// Set `title`, the display name of the tool.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.extra.insert("title".into(), Value::from(title.into()));
        self
    }

    /// The effective task support (absent means forbidden).
    pub fn effective_task_support(&self) -> TaskSupport {
        self.task_support.unwrap_or_default()
    }

    /// Check `args` against the input schema.
    ///
    /// Spec (tools page, error handling): "Tool Execution Errors: Reported in tool results
    /// with `isError: true`: API failures; Input validation errors (e.g., date in wrong
    /// format, value out of range); Business logic errors". So arguments the schema
    /// rejects give a `CallToolResult` with `isError: true`, not a JSON-RPC error, and
    /// its text names the field and the violated bound (`days: 9 is greater than the
    /// maximum of 7`) so that the model can correct the call.
    ///
    /// # Errors
    /// The `isError` result to answer the call with.
    pub fn check_arguments(&self, args: &Value) -> Result<(), CallToolResult> {
        match &self.validator {
            Some(v) => v.check(&self.name, &self.input_schema, args),
            None => Ok(()),
        }
    }

    /// Check a result of the handler against the output schema, if the tool has one
    /// (set with [`Tool::output_schema`]): a result that is not an error must carry
    /// `structuredContent` that conforms.
    ///
    /// # Errors
    /// -32603 naming the tool and what breaks the schema (a bug of the tool, not of the
    /// call); the handler's own errors pass through unchanged.
    pub fn check_result(
        &self,
        result: Result<CallToolResult, ErrorObject>,
    ) -> Result<CallToolResult, ErrorObject> {
        checked(self.output.as_deref(), &self.name, result)
    }

    /// [`Tool::check_result`] as an owned function, for a handler run as a task.
    pub(crate) fn result_checker(
        &self,
    ) -> impl Fn(Result<CallToolResult, ErrorObject>) -> Result<CallToolResult, ErrorObject>
    + Send
    + Sync
    + 'static {
        let name = self.name.clone();
        let output = self.output.clone();
        move |result| checked(output.as_deref(), &name, result)
    }

    /// The `tools/list` entry; `with_execution` false omits `execution`.
    pub fn to_listing(&self, with_execution: bool) -> Value {
        let mut m = self.extra.clone();
        m.insert("name".into(), Value::from(self.name.clone()));
        m.insert("description".into(), Value::from(self.description.clone()));
        m.insert("inputSchema".into(), self.input_schema.clone());
        if with_execution && let Some(s) = self.task_support {
            m.insert("execution".into(), json!({ "taskSupport": s }));
        }
        Value::Object(m)
    }
}

/// A JSON number, written as an integer when it is one (`3`, not `3.0`).
fn number(x: f64) -> Value {
    #[allow(clippy::cast_possible_truncation)]
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// What a running tool can do besides computing its result.
#[derive(Clone)]
pub struct ToolContext {
    channel: Arc<dyn RequestorChannel>,
    progress_token: Option<Value>,
    cancel: CancellationToken,
    client_capabilities: Arc<Value>,
    task_id: Option<String>,
    request_params: Option<Arc<Value>>,
    log_threshold: LogThreshold,
    /// The revision of the call: in a stateless one (2026-07-28, capabilities declared per
    /// request) a question the client cannot take is refused with -32021.
    revision: Revision,
}

mcp_tasks_proto::debug_non_exhaustive!(ToolContext, |s| { task_id: s.task_id });

impl ToolContext {
    /// A context over `channel`.
    pub fn new(
        channel: Arc<dyn RequestorChannel>,
        progress_token: Option<Value>,
        cancel: CancellationToken,
        client_capabilities: Arc<Value>,
        task_id: Option<String>,
    ) -> Self {
        Self {
            channel,
            progress_token,
            cancel,
            client_capabilities,
            task_id,
            request_params: None,
            log_threshold: LogThreshold::off(),
            revision: Revision::V2025_11_25,
        }
    }

    /// Send [`Self::log`] messages at `threshold` and above (off by default: a session
    /// passes its `logging/setLevel`, a 2026-07-28 call its `_meta` log level).
    #[must_use]
    pub fn with_log_threshold(mut self, threshold: LogThreshold) -> Self {
        self.log_threshold = threshold;
        self
    }

    /// Send a log message (`notifications/message`) to the client, tied to this call (as
    /// a task: with related-task `_meta`), when `level` reaches the level the client asked
    /// for. `logger` names the source; `data` is any JSON (a string is usual).
    ///
    /// Spec (2025-11-25, logging): "Servers send log messages using
    /// `notifications/message` notifications". Spec (2026-07-28 changelog): "servers MUST
    /// NOT emit `notifications/message` for requests that did not include" a log level.
    pub async fn log(&self, level: LogLevel, logger: Option<&str>, data: impl Into<Value>) {
        if !self.log_threshold.passes(level) {
            return;
        }
        let mut params = json!({ "level": level.as_str(), "data": data.into() });
        if let Some(l) = logger {
            params["logger"] = json!(l);
        }
        self.channel.notify(methods::LOG_MESSAGE, params).await;
    }

    /// Mark the call as one of `revision`: in a stateless one the capabilities are those
    /// its request declared, and a question they do not cover is refused with -32021.
    #[must_use]
    pub(crate) fn in_revision(mut self, revision: Revision) -> Self {
        self.revision = revision;
        self
    }

    /// Attach the params of the `tools/call` request, unchanged (`_meta`, `task` and
    /// fields this crate does not know included).
    #[must_use]
    pub fn with_request_params(mut self, params: Value) -> Self {
        self.request_params = Some(Arc::new(params));
        self
    }

    /// The params of the `tools/call` request as received, when known. A gateway forwards
    /// them upstream without losing a field. For a direct 2026-07-28 call (which may wait,
    /// parked, for the client's answers) non-empty `arguments` are left out: the handler
    /// has them as its `args`, and one copy is kept.
    pub fn request_params(&self) -> Option<&Value> {
        self.request_params.as_deref()
    }

    /// The client's capabilities, as declared in `initialize`.
    pub fn client_capabilities(&self) -> &Value {
        &self.client_capabilities
    }

    /// Send a notification to the requestor, tied to this call (as a task: on the task's
    /// connection, with related-task `_meta`). `params` go out otherwise unchanged.
    pub async fn notify(&self, method: &str, params: Value) {
        self.channel.notify(method, params).await;
    }

    /// Send any request to the requestor, tied to this call, and wait for its answer. As
    /// a task the task moves to `input_required` and the request travels on
    /// `tasks/result`, like [`Self::elicit`] and [`Self::sample`], which also check the
    /// client's capability first.
    ///
    /// # Errors
    /// The requestor's error, or an internal error if the connection closes.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.channel.request(method, params).await
    }

    /// Fires when the call (or its task) is cancelled. Handlers that do blocking or
    /// non-async work should check it; async work is also stopped by being dropped.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The task id when running as a task (for logs; behaviour must not depend on it).
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// Report progress with the request's `progressToken` (nothing is sent without one).
    ///
    /// Spec: "The `progressToken` provided in the initial request remains valid throughout
    /// the task's lifetime."
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": number(progress) });
        if let Some(t) = total {
            params["total"] = number(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        self.channel.notify(methods::PROGRESS, params).await;
    }

    /// Ask the client for input (`elicitation/create`) with these params as they are;
    /// returns the `ElicitResult` as it is. The lower-level form of [`Self::elicit`] (which
    /// derives the schema from a type and parses the answer), for a caller that passes
    /// JSON through (a gateway) or asks in `url` mode.
    ///
    /// The mode (`params.mode`, `form` when absent) must be one the client declared:
    /// `elicitation: {}` declares `form` only. Spec (elicitation, 2025-11-25): "For
    /// backwards compatibility, an empty capabilities object is equivalent to declaring
    /// support for `form` mode only"; "Servers MUST NOT send elicitation requests with
    /// modes that are not supported by the client."
    ///
    /// # Errors
    /// The client's error; when the client did not declare elicitation in this mode,
    /// nothing is sent and the error is -32021 with `data.requiredCapabilities` in
    /// 2026-07-28, -32601 in 2025-11-25.
    pub async fn elicit_raw(&self, params: Value) -> Result<Value, ErrorObject> {
        self.request_declared(methods::ELICITATION_CREATE, params)
            .await
    }

    /// Ask the client to sample (`sampling/createMessage`) with these params as they are;
    /// returns the `CreateMessageResult` as it is. The lower-level form of
    /// [`Self::sample`], for a caller that passes JSON through (a gateway).
    ///
    /// # Errors
    /// The client's error; when the client did not declare `sampling`, nothing is sent
    /// and the error is -32021 with `data.requiredCapabilities` in 2026-07-28, -32601 in
    /// 2025-11-25.
    pub async fn sample_raw(&self, params: Value) -> Result<Value, ErrorObject> {
        self.request_declared(methods::SAMPLING_CREATE_MESSAGE, params)
            .await
    }

    /// `method` with `params`, sent once [`check_declared`] lets it through.
    async fn request_declared(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        check_declared(&self.client_capabilities, method, &params, self.revision)?;
        self.channel.request(method, params).await
    }

    /// Go on as a task, when the call can still become one: for a tool built with
    /// [`Tool::task_after_input`] in a 2026-07-28 call, this ends the synchronous input
    /// rounds (the answers gathered so far are the handler's own) and creates the task;
    /// the `CreateTaskResult` is the reply, and the handler goes on as the task's work.
    /// An `optional` tool under [`crate::ServerConfig::with_task_after`] becomes a task at
    /// once. Anywhere else (already a task, or a call that cannot become one) it does
    /// nothing.
    ///
    /// # Errors
    /// The call ended before its task could be created.
    pub async fn start_task(&self) -> Result<(), ErrorObject> {
        self.channel.start_task().await
    }

    /// Ask the client `method` with `params` under the name `key`, and wait for the
    /// answer: in a direct 2026-07-28 call the question is `inputRequests[key]` of the
    /// `InputRequiredResult` (other questions are named `q1`, `q2`, ...; elsewhere the
    /// key is not seen). `elicitation/create` (in its mode), `sampling/createMessage` and
    /// `roots/list` need the client's capability (`elicitation`, `sampling`, `roots`).
    ///
    /// Several questions asked at once (`tokio::join!`) reach the client together, and
    /// each goes on as soon as its own answer arrives.
    ///
    /// # Errors
    /// The client's error; when the client did not declare the capability, nothing is
    /// sent and the error is -32021 with `data.requiredCapabilities` in 2026-07-28,
    /// -32601 in 2025-11-25.
    pub async fn ask(&self, key: &str, method: &str, params: Value) -> Result<Value, ErrorObject> {
        check_declared(&self.client_capabilities, method, &params, self.revision)?;
        self.channel.request_keyed(key, method, params).await
    }
}

/// Refuse, before anything is sent, a question `method` (with `params`) that the client's
/// declared `caps` do not cover: `elicitation/create` in its mode (`form` when absent),
/// `sampling/createMessage`, `roots/list`, in a call of `revision`.
///
/// Spec (basic, 2026-07-28): "If processing a request requires a capability the client
/// did not include in `io.modelcontextprotocol/clientCapabilities`, the server MUST return
/// a `MissingRequiredClientCapabilityError` (`-32021`) whose `data.requiredCapabilities`
/// lists the missing capabilities." Spec (elicitation, 2025-11-25): "Servers MUST NOT send
/// elicitation requests with modes that are not supported by the client." 2025-11-25
/// defines no code for it: -32601.
pub(crate) fn check_declared(
    caps: &Value,
    method: &str,
    params: &Value,
    revision: Revision,
) -> Result<(), ErrorObject> {
    let (declared, required, what) = match method {
        methods::ELICITATION_CREATE => {
            let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
            (
                elicitation_mode_declared(caps, mode),
                json!({ "elicitation": { mode: {} } }),
                format!("`elicitation` in `{mode}` mode"),
            )
        }
        methods::SAMPLING_CREATE_MESSAGE | "roots/list" => {
            let c = if method == "roots/list" {
                "roots"
            } else {
                "sampling"
            };
            (
                caps.get(c).is_some_and(|v| !v.is_null()),
                json!({ c: {} }),
                format!("`{c}`"),
            )
        }
        _ => return Ok(()),
    };
    if declared {
        return Ok(());
    }
    let detail = format!("the client did not declare {what}");
    Err(match required {
        Value::Object(caps) if revision.is_stateless() => {
            mcp_tasks_proto::modern::missing_capability(
                mcp_tasks_proto::modern::ClientCapabilities(caps),
                &detail,
            )
        }
        _ => ErrorObject::new(codes::METHOD_NOT_FOUND, detail),
    })
}

/// Whether `caps` declare elicitation in `mode`: `elicitation: {}` is `form` only, else
/// each mode is declared by its own key.
fn elicitation_mode_declared(caps: &Value, mode: &str) -> bool {
    match caps.get("elicitation") {
        Some(Value::Object(e)) if e.is_empty() => mode == "form",
        Some(Value::Object(e)) => e.get(mode).is_some_and(|m| !m.is_null()),
        _ => false,
    }
}

/// `result` checked by `output`, if the tool has an output schema.
fn checked(
    output: Option<&OutputCheck>,
    tool: &str,
    result: Result<CallToolResult, ErrorObject>,
) -> Result<CallToolResult, ErrorObject> {
    match output {
        Some(check) => check.check(tool, result?),
        None => result,
    }
}
