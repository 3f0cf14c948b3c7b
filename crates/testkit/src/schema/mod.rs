//! Validation of wire messages against the official MCP 2025-11-25 JSON Schema.
//!
//! The schema (`spec/schema-2025-11-25.json`, draft 2020-12, everything under `$defs`) is
//! embedded at compile time. Each `$defs` entry gets its own validator, compiled on first
//! use from a root `{"$ref": "#/$defs/NAME", "$defs": <all defs>}` so that every internal
//! `$ref` resolves, and cached for the life of the process. No network, no files at run
//! time.
//!
//! * [`validate_message`]: one whole JSON-RPC message; the envelope, and for a request or
//!   notification of a method the schema knows, the method's own definition
//!   (`tools/call` -> `CallToolRequest`, `notifications/tasks/status` ->
//!   `TaskStatusNotification`, ...). The method -> definition map is read from the schema
//!   itself (`properties.method.const` of each definition).
//! * [`validate_result`]: the `result` of a response, given the method of the request it
//!   answers (`tasks/get` -> `GetTaskResult`, `tools/call` -> `CallToolResult`, or
//!   `CreateTaskResult` when the result carries a `task`).
//! * [`validate_response`]: both of the above for one response message.
//! * [`validate_def`]: any value against any `$defs` name.
//!
//! Every error names the definition, the instance path and the reason.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError, Validator};
use mcp_tasks_proto::error::clip;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

/// The official wire schema of MCP 2025-11-25, as vendored in `spec/`.
pub const SCHEMA_JSON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../spec/schema-2025-11-25.json"
));

/// Request methods whose receiver may answer with a `CreateTaskResult` instead of the
/// method's own result (the task-augmentable requests of 2025-11-25).
const TASK_AUGMENTABLE: &[&str] = &["tools/call", "sampling/createMessage", "elicitation/create"];

/// Result definition of each request method of 2025-11-25 (before task augmentation).
const RESULT_DEFS: &[(&str, &str)] = &[
    ("initialize", "InitializeResult"),
    ("ping", "EmptyResult"),
    ("tools/list", "ListToolsResult"),
    ("tools/call", "CallToolResult"),
    ("tasks/get", "GetTaskResult"),
    ("tasks/result", "GetTaskPayloadResult"),
    ("tasks/list", "ListTasksResult"),
    ("tasks/cancel", "CancelTaskResult"),
    ("elicitation/create", "ElicitResult"),
    ("sampling/createMessage", "CreateMessageResult"),
    ("roots/list", "ListRootsResult"),
    ("prompts/list", "ListPromptsResult"),
    ("prompts/get", "GetPromptResult"),
    ("resources/list", "ListResourcesResult"),
    ("resources/templates/list", "ListResourceTemplatesResult"),
    ("resources/read", "ReadResourceResult"),
    ("resources/subscribe", "EmptyResult"),
    ("resources/unsubscribe", "EmptyResult"),
    ("logging/setLevel", "EmptyResult"),
    ("completion/complete", "CompleteResult"),
];

/// Longest reason quoted from the validator (its messages embed the offending value).
const MAX_REASON: usize = 300;
/// How deep the branches of a failed `anyOf`/`oneOf` are explained.
const MAX_BRANCH_DEPTH: usize = 3;

/// The parsed schema and the validators compiled so far.
struct Schema {
    /// `$schema` of the document (draft 2020-12).
    dialect: Value,
    /// Every `$defs` entry.
    defs: Map<String, Value>,
    /// Method name -> request or notification definition.
    methods: BTreeMap<String, String>,
    /// Definition name -> compiled validator.
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

static SCHEMA: LazyLock<Schema> = LazyLock::new(Schema::load);

impl Schema {
    fn load() -> Self {
        let mut doc: Value =
            serde_json::from_str(SCHEMA_JSON).expect("the vendored schema is valid JSON");
        let dialect = doc
            .get("$schema")
            .cloned()
            .unwrap_or_else(|| json!("https://json-schema.org/draft/2020-12/schema"));
        let Some(Value::Object(defs)) = doc.get_mut("$defs").map(Value::take) else {
            panic!("the vendored schema has no `$defs` object");
        };
        let methods = defs
            .iter()
            .filter_map(|(name, def)| {
                let method = def.pointer("/properties/method/const")?.as_str()?;
                def.pointer("/properties/jsonrpc")?;
                Some((method.to_owned(), name.clone()))
            })
            .collect();
        Self {
            dialect,
            defs,
            methods,
            validators: Mutex::new(HashMap::new()),
        }
    }

    fn validator(&self, def: &str) -> Result<Arc<Validator>, String> {
        if let Some(v) = self.validators.lock().get(def) {
            return Ok(Arc::clone(v));
        }
        if !self.defs.contains_key(def) {
            return Err(format!(
                "`{def}` is not a definition of the 2025-11-25 schema"
            ));
        }
        let root = json!({
            "$schema": self.dialect,
            "$ref": format!("#/$defs/{def}"),
            "$defs": self.defs,
        });
        let compiled = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .build(&root)
            .map_err(|e| format!("`{def}`: the schema does not compile: {e}"))?;
        let compiled = Arc::new(compiled);
        self.validators
            .lock()
            .entry(def.to_owned())
            .or_insert_with(|| Arc::clone(&compiled));
        Ok(compiled)
    }
}

/// Validate `value` against the definition `def` of the schema's `$defs` (e.g. `"Task"`,
/// `"CallToolRequest"`, `"JSONRPCMessage"`).
///
/// # Errors
/// A message naming `def` and, for each violation, the instance path (`/params/ttl`,
/// `(root)` for the value itself), the reason and the schema keyword that failed; or a
/// message saying `def` is not a definition of the schema.
pub fn validate_def(def: &str, value: &Value) -> Result<(), String> {
    let validator = SCHEMA.validator(def)?;
    let errors: Vec<ValidationError<'_>> = validator.iter_errors(value).collect();
    if errors.is_empty() {
        return Ok(());
    }
    let mut out = format!(
        "`{def}` rejects the value ({} violation{}):",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    );
    for e in &errors {
        describe(&mut out, e, 1);
    }
    Err(out)
}

/// Validate one whole JSON-RPC message.
///
/// The envelope is checked against the schema's `JSONRPCRequest`, `JSONRPCNotification`,
/// `JSONRPCResultResponse` or `JSONRPCErrorResponse` (the four branches of
/// `JSONRPCMessage`), chosen by shape: `method` with an `id` is a request, `method`
/// without one a notification, then `result`, then `error`. A message carrying more than
/// one of `method`, `result` and `error` is refused (the schema's branches are open
/// objects and would let it through; JSON-RPC 2.0 does not). Then a request or
/// notification whose method the schema defines is validated whole against that
/// definition (`tasks/get` -> `GetTaskRequest`, `notifications/progress` ->
/// `ProgressNotification`, ...). A response's `result` needs the method of its request:
/// see [`validate_response`] and [`validate_result`].
///
/// # Errors
/// The first failing stage, as described in [`validate_def`].
pub fn validate_message(msg: &Value) -> Result<(), String> {
    let Some(obj) = msg.as_object() else {
        return Err(format!(
            "a JSON-RPC message must be a JSON object, got {}",
            clip(&msg.to_string(), MAX_REASON)
        ));
    };
    let kinds: Vec<&str> = ["method", "result", "error"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    if kinds.len() > 1 {
        return Err(format!(
            "a JSON-RPC message carries exactly one of `method`, `result`, `error`; this one has {}",
            kinds.join(", ")
        ));
    }
    let envelope = match kinds.first() {
        Some(&"method") if obj.contains_key("id") => "JSONRPCRequest",
        Some(&"method") => "JSONRPCNotification",
        Some(&"result") => "JSONRPCResultResponse",
        Some(_) => "JSONRPCErrorResponse",
        None => "JSONRPCMessage",
    };
    validate_def(envelope, msg)?;
    if let Some(def) = obj
        .get("method")
        .and_then(Value::as_str)
        .and_then(method_def)
    {
        validate_def(def, msg)?;
    }
    Ok(())
}

/// Validate the `result` of a response to a request of `method`.
///
/// The definition is [`result_def`]`(method, result)`: e.g. `initialize` ->
/// `InitializeResult`, `tools/list` -> `ListToolsResult`, `tools/call` ->
/// `CallToolResult` (or `CreateTaskResult` when the result has a `task` member, likewise
/// for `sampling/createMessage` and `elicitation/create`), `tasks/get` ->
/// `GetTaskResult`, `tasks/result` -> `GetTaskPayloadResult`, `tasks/list` ->
/// `ListTasksResult`, `tasks/cancel` -> `CancelTaskResult`, `ping` -> `EmptyResult`.
///
/// # Errors
/// As described in [`validate_def`], or a message saying the method has no known result
/// definition.
pub fn validate_result(method: &str, result: &Value) -> Result<(), String> {
    let def = result_def(method, result).ok_or_else(|| {
        format!("no result definition is known for the method `{method}` in the 2025-11-25 schema")
    })?;
    validate_def(def, result).map_err(|e| format!("result of `{method}`: {e}"))
}

/// Validate one response message to a request of `method`: [`validate_message`], then,
/// when it is a successful response, [`validate_result`] on its `result`.
///
/// # Errors
/// The first failing check.
pub fn validate_response(method: &str, msg: &Value) -> Result<(), String> {
    validate_message(msg)?;
    if msg.get("method").is_some() {
        return Err(format!(
            "expected a response to `{method}`, got a request or notification"
        ));
    }
    match msg.get("result") {
        Some(result) => validate_result(method, result),
        None => Ok(()),
    }
}

/// The schema definition of a request or notification of `method` (`"tools/call"` ->
/// `"CallToolRequest"`), read from the `properties.method.const` of the schema's
/// definitions. `None` for a method the schema does not define.
pub fn method_def(method: &str) -> Option<&'static str> {
    SCHEMA.methods.get(method).map(String::as_str)
}

/// The schema definition of the result of a request of `method`, given the result
/// itself: a result with a `task` member answering a task-augmentable request
/// (`tools/call`, `sampling/createMessage`, `elicitation/create`) is a
/// `CreateTaskResult`. `None` for a method with no known result.
pub fn result_def(method: &str, result: &Value) -> Option<&'static str> {
    if TASK_AUGMENTABLE.contains(&method) && result.get("task").is_some() {
        return Some("CreateTaskResult");
    }
    RESULT_DEFS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, def)| *def)
}

/// Whether `def` is a definition of the schema's `$defs`.
pub fn has_def(def: &str) -> bool {
    SCHEMA.defs.contains_key(def)
}

/// Append one line per violation (and, for a failed `anyOf`/`oneOf`, the violations of
/// each branch, indented).
fn describe(out: &mut String, e: &ValidationError<'_>, depth: usize) {
    let indent = "  ".repeat(depth);
    let path = e.instance_path().as_str();
    let path = if path.is_empty() { "(root)" } else { path };
    let keyword = e.schema_path().as_str();
    match e.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let _ = write!(
                out,
                "\n{indent}- at {path}: matches none of the {} branches [schema {keyword}]",
                e.kind().keyword()
            );
            if depth >= MAX_BRANCH_DEPTH {
                return;
            }
            for (i, branch) in context.iter().enumerate() {
                let _ = write!(out, "\n{indent}  branch {i}:");
                for be in branch {
                    describe(out, be, depth + 2);
                }
            }
        }
        _ => {
            let _ = write!(
                out,
                "\n{indent}- at {path}: {} [schema {keyword}]",
                clip(&e.to_string(), MAX_REASON)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Value {
        json!({
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 60000,
            "pollInterval": 5000
        })
    }

    fn err(r: Result<(), String>) -> String {
        r.expect_err("the value should have been rejected")
    }

    #[test]
    fn every_named_def_exists() {
        for (method, def) in RESULT_DEFS {
            assert!(has_def(def), "{method} -> {def}");
        }
        assert!(has_def("CreateTaskResult"));
        for def in [
            "JSONRPCMessage",
            "JSONRPCRequest",
            "JSONRPCNotification",
            "JSONRPCResultResponse",
            "JSONRPCErrorResponse",
        ] {
            assert!(has_def(def), "{def}");
        }
    }

    #[test]
    fn every_def_compiles() {
        for name in SCHEMA.defs.keys() {
            SCHEMA.validator(name).unwrap();
        }
    }

    #[test]
    fn method_map_is_read_from_the_schema() {
        let expected = [
            ("tools/call", "CallToolRequest"),
            ("tools/list", "ListToolsRequest"),
            ("tasks/get", "GetTaskRequest"),
            ("tasks/result", "GetTaskPayloadRequest"),
            ("tasks/list", "ListTasksRequest"),
            ("tasks/cancel", "CancelTaskRequest"),
            ("initialize", "InitializeRequest"),
            ("ping", "PingRequest"),
            ("elicitation/create", "ElicitRequest"),
            ("sampling/createMessage", "CreateMessageRequest"),
            ("notifications/tasks/status", "TaskStatusNotification"),
            ("notifications/progress", "ProgressNotification"),
            ("notifications/cancelled", "CancelledNotification"),
            ("notifications/initialized", "InitializedNotification"),
        ];
        for (method, def) in expected {
            assert_eq!(method_def(method), Some(def), "{method}");
        }
        assert_eq!(method_def("server/discover"), None);
        // Every request method of the schema has a result definition.
        for (method, def) in &SCHEMA.methods {
            let is_request = SCHEMA.defs[def]
                .pointer("/required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|k| k == "id"));
            if is_request {
                assert!(
                    result_def(method, &json!({})).is_some(),
                    "no result def for {method}"
                );
            }
        }
    }

    #[test]
    fn accepts_the_spec_examples() {
        validate_def("Task", &task()).unwrap();
        validate_message(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_weather", "arguments": {"city": "New York"}, "task": {"ttl": 60000}}
        }))
        .unwrap();
        validate_response(
            "tools/call",
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"task": task()}}),
        )
        .unwrap();
        validate_response(
            "tasks/get",
            &json!({"jsonrpc": "2.0", "id": 3, "result": task()}),
        )
        .unwrap();
        validate_result(
            "tasks/result",
            &json!({
                "content": [{"type": "text", "text": "Current weather in New York"}],
                "isError": false,
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840"}}
            }),
        )
        .unwrap();
        let mut done = task();
        done["status"] = json!("completed");
        validate_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": done}),
        )
        .unwrap();
        validate_result(
            "tasks/list",
            &json!({"tasks": [task()], "nextCursor": "next-page-cursor"}),
        )
        .unwrap();
        validate_message(&json!({
            "jsonrpc": "2.0", "id": 70,
            "error": {"code": -32602, "message": "Failed to retrieve task: Task not found"}
        }))
        .unwrap();
        validate_result("ping", &json!({})).unwrap();
        // ttl null means unlimited.
        let mut unlimited = task();
        unlimited["ttl"] = Value::Null;
        validate_def("Task", &unlimited).unwrap();
    }

    #[test]
    fn rejects_a_task_without_ttl() {
        let mut t = task();
        t.as_object_mut().unwrap().remove("ttl");
        let e = err(validate_def("Task", &t));
        assert!(
            e.contains("`Task`") && e.contains("\"ttl\" is a required property"),
            "{e}"
        );
        let e = err(validate_result("tasks/get", &t));
        assert!(e.contains("GetTaskResult") && e.contains("ttl"), "{e}");
    }

    #[test]
    fn rejects_a_create_task_result_with_an_unknown_status() {
        let mut t = task();
        t["status"] = json!("done");
        let e = err(validate_result("tools/call", &json!({"task": t})));
        assert!(e.contains("CreateTaskResult"), "{e}");
        assert!(e.contains("at /task/status"), "{e}");
        assert!(e.contains("\"done\""), "{e}");
    }

    #[test]
    fn rejects_a_status_notification_missing_created_at() {
        let mut t = task();
        t.as_object_mut().unwrap().remove("createdAt");
        let e = err(validate_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": t}),
        ));
        assert!(e.contains("TaskStatusNotification"), "{e}");
        assert!(e.contains("at /params"), "{e}");
        assert!(e.contains("createdAt"), "{e}");
    }

    #[test]
    fn rejects_bad_envelopes() {
        let e = err(validate_message(
            &json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
        ));
        assert!(
            e.contains("JSONRPCRequest") && e.contains("at /jsonrpc"),
            "{e}"
        );
        let e = err(validate_message(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}),
        ));
        assert!(e.contains("exactly one"), "{e}");
        let e = err(validate_message(&json!({"jsonrpc": "2.0", "id": 1})));
        assert!(e.contains("JSONRPCMessage"), "{e}");
        let e = err(validate_message(
            &json!([{"jsonrpc": "2.0", "method": "ping"}]),
        ));
        assert!(e.contains("JSON object"), "{e}");
        let e = err(validate_message(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
        ));
        assert!(e.contains("at /error/code"), "{e}");
        // The schema's RequestId is string | integer: an explicit `"id": null` is refused.
        let e = err(validate_message(
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}),
        ));
        assert!(e.contains("at /id"), "{e}");
    }

    #[test]
    fn rejects_a_request_with_bad_params_for_its_method() {
        let e = err(validate_message(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {}}),
        ));
        assert!(e.contains("GetTaskRequest") && e.contains("taskId"), "{e}");
        let e = err(validate_message(&json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "x", "task": {"ttl": "soon"}}
        })));
        assert!(e.contains("at /params/task/ttl"), "{e}");
        // Notifications are checked against their own definition too.
        let e = err(validate_message(&json!({
            "jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}
        })));
        assert!(
            e.contains("ProgressNotification") && e.contains("progressToken"),
            "{e}"
        );
    }

    #[test]
    fn explains_each_branch_of_a_failed_any_of() {
        let e = err(validate_message(&json!({
            "jsonrpc": "2.0", "id": 9, "method": "elicitation/create",
            "params": {"message": "Name?", "requestedSchema": {"type": "object"}}
        })));
        assert!(e.contains("ElicitRequest") && e.contains("anyOf"), "{e}");
        assert!(e.contains("branch 0") && e.contains("branch 1"), "{e}");
        assert!(e.contains("\"properties\" is a required property"), "{e}");
    }

    #[test]
    fn results_need_a_known_method() {
        let e = err(validate_result("no/such", &json!({})));
        assert!(e.contains("no/such"), "{e}");
        let e = err(validate_def("NoSuchDef", &json!({})));
        assert!(e.contains("NoSuchDef"), "{e}");
        let e = err(validate_result("tools/call", &json!({"content": "text"})));
        assert!(
            e.contains("CallToolResult") && e.contains("at /content"),
            "{e}"
        );
        let e = err(validate_response(
            "tasks/cancel",
            &json!({"jsonrpc": "2.0", "id": 6, "result": {"taskId": "t"}}),
        ));
        assert!(e.contains("CancelTaskResult"), "{e}");
    }
}
