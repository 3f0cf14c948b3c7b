//! Validation of wire messages against the official MCP JSON Schemas of both generations:
//! 2025-11-25 ([`LEGACY`]) and 2026-07-28 ([`MODERN`]).
//!
//! Each schema (`spec/schema-2025-11-25.json`, `spec/schema-2026-07-28.json`, draft
//! 2020-12, everything under `$defs`) is embedded at compile time. Each `$defs` entry gets
//! its own validator, compiled on first use from a root `{"$ref": "#/$defs/NAME", "$defs":
//! <all defs>}` so that every internal `$ref` resolves, and cached for the life of the
//! process. No network, no files at run time. One [`Revision`] value per schema carries
//! what differs (the file, the result definition of each method, and how a polymorphic
//! result picks its definition); the code is the same for both.
//!
//! * [`Revision::validate_message`]: one whole JSON-RPC message; the envelope, and for a
//!   request or notification of a method the schema knows, the method's own definition
//!   (`tools/call` -> `CallToolRequest`, `notifications/tasks/status` ->
//!   `TaskStatusNotification`, ...). The method -> definition map is read from the schema
//!   itself (`properties.method.const` of each definition).
//! * [`Revision::validate_result`]: the `result` of a response, given the method of the
//!   request it answers (`tasks/get` -> `GetTaskResult`, `tools/call` ->
//!   `CallToolResult`, or `CreateTaskResult` when the result carries a `task`; in
//!   2026-07-28 `InputRequiredResult` when `resultType` is `input_required`).
//! * [`Revision::validate_response`]: both of the above for one response message.
//! * [`Revision::validate_def`]: any value against any `$defs` name.
//!
//! The free functions ([`validate_message`], [`validate_result`], ...) are those of
//! [`LEGACY`], as before the second schema came. Every error names the definition, the
//! instance path and the reason.
//!
//! The tasks extension of 2026-07-28 (SEP-2663: `CreateTaskResult`, `DetailedTask`,
//! `tasks/get|update|cancel`) is not part of the 2026-07-28 schema: its results are
//! checked there as the generic `Result` (which requires `resultType`); their own shapes
//! are checked by the proto round-trip tests.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

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

/// The official wire schema of MCP 2026-07-28, as vendored in `spec/`.
pub const SCHEMA_2026_07_28_JSON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../spec/schema-2026-07-28.json"
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

/// Result definition of each request method of 2026-07-28. The tasks extension's
/// methods are not in the schema: their results are checked as the generic `Result`.
const RESULT_DEFS_2026_07_28: &[(&str, &str)] = &[
    ("server/discover", "DiscoverResult"),
    ("tools/list", "ListToolsResult"),
    ("tools/call", "CallToolResult"),
    ("prompts/list", "ListPromptsResult"),
    ("prompts/get", "GetPromptResult"),
    ("resources/list", "ListResourcesResult"),
    ("resources/templates/list", "ListResourceTemplatesResult"),
    ("resources/read", "ReadResourceResult"),
    ("subscriptions/listen", "SubscriptionsListenResult"),
    ("completion/complete", "CompleteResult"),
    ("tasks/get", "Result"),
    ("tasks/update", "Result"),
    ("tasks/cancel", "Result"),
];

/// Requests whose 2026-07-28 receiver may answer with an `InputRequiredResult`.
///
/// Spec (MRTR): "Servers MAY send `InputRequiredResult` responses on the following client
/// requests": `prompts/get`, `resources/read`, `tools/call`.
const MRTR_REQUESTS: &[&str] = &["prompts/get", "resources/read", "tools/call"];

/// Longest reason quoted from the validator (its messages embed the offending value).
const MAX_REASON: usize = 300;
/// How deep the branches of a failed `anyOf`/`oneOf` are explained.
const MAX_BRANCH_DEPTH: usize = 3;

/// One vendored schema and what differs between the generations.
pub struct Revision {
    /// The protocol revision (`2025-11-25`, `2026-07-28`).
    pub version: &'static str,
    json: &'static str,
    result_defs: &'static [(&'static str, &'static str)],
    /// The definition a polymorphic result takes instead of the method's own, if any.
    polymorphic: fn(&str, &Value) -> Option<&'static str>,
    loaded: OnceLock<Schema>,
}

mcp_tasks_proto::debug_non_exhaustive!(Revision, |s| { version: s.version });

/// 2025-11-25: a result with a `task` member answering a task-augmentable request is a
/// `CreateTaskResult`.
fn legacy_polymorphic(method: &str, result: &Value) -> Option<&'static str> {
    (TASK_AUGMENTABLE.contains(&method) && result.get("task").is_some())
        .then_some("CreateTaskResult")
}

/// 2026-07-28: `resultType` picks the definition: `input_required` on an MRTR request is
/// an `InputRequiredResult`; `task` (the tasks extension's flat `CreateTaskResult`, not
/// in the schema) is checked as the generic `Result`.
fn modern_polymorphic(method: &str, result: &Value) -> Option<&'static str> {
    match result.get("resultType").and_then(Value::as_str) {
        Some("input_required") if MRTR_REQUESTS.contains(&method) => Some("InputRequiredResult"),
        Some("task") if method == "tools/call" => Some("Result"),
        _ => None,
    }
}

/// The 2025-11-25 schema.
pub static LEGACY: Revision = Revision {
    version: "2025-11-25",
    json: SCHEMA_JSON,
    result_defs: RESULT_DEFS,
    polymorphic: legacy_polymorphic,
    loaded: OnceLock::new(),
};

/// The 2026-07-28 schema.
pub static MODERN: Revision = Revision {
    version: "2026-07-28",
    json: SCHEMA_2026_07_28_JSON,
    result_defs: RESULT_DEFS_2026_07_28,
    polymorphic: modern_polymorphic,
    loaded: OnceLock::new(),
};

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

impl Schema {
    fn load(json: &str) -> Self {
        let mut doc: Value = serde_json::from_str(json).expect("the vendored schema is valid JSON");
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

    fn validator(&self, version: &str, def: &str) -> Result<Arc<Validator>, String> {
        if let Some(v) = self.validators.lock().get(def) {
            return Ok(Arc::clone(v));
        }
        if !self.defs.contains_key(def) {
            return Err(format!(
                "`{def}` is not a definition of the {version} schema"
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

impl Revision {
    fn schema(&self) -> &Schema {
        self.loaded.get_or_init(|| Schema::load(self.json))
    }

    /// Validate `value` against the definition `def` of the schema's `$defs` (e.g.
    /// `"Task"`, `"CallToolRequest"`, `"JSONRPCMessage"`).
    ///
    /// # Errors
    /// A message naming `def` and, for each violation, the instance path (`/params/ttl`,
    /// `(root)` for the value itself), the reason and the schema keyword that failed; or
    /// a message saying `def` is not a definition of the schema.
    pub fn validate_def(&self, def: &str, value: &Value) -> Result<(), String> {
        let validator = self.schema().validator(self.version, def)?;
        let errors: Vec<ValidationError<'_>> = validator.iter_errors(value).collect();
        if errors.is_empty() {
            return Ok(());
        }
        let mut out = format!(
            "`{def}` ({}) rejects the value ({} violation{}):",
            self.version,
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
    /// The envelope is checked against the schema's `JSONRPCRequest`,
    /// `JSONRPCNotification`, `JSONRPCResultResponse` or `JSONRPCErrorResponse` (the four
    /// branches of `JSONRPCMessage`), chosen by shape: `method` with an `id` is a
    /// request, `method` without one a notification, then `result`, then `error`. A
    /// message carrying more than one of `method`, `result` and `error` is refused (the
    /// schema's branches are open objects and would let it through; JSON-RPC 2.0 does
    /// not). Then a request or notification whose method the schema defines is validated
    /// whole against that definition (`tasks/get` -> `GetTaskRequest`,
    /// `notifications/progress` -> `ProgressNotification`, ...). A response's `result`
    /// needs the method of its request: see [`Self::validate_response`] and
    /// [`Self::validate_result`].
    ///
    /// # Errors
    /// The first failing stage, as described in [`Self::validate_def`].
    pub fn validate_message(&self, msg: &Value) -> Result<(), String> {
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
        self.validate_def(envelope, msg)?;
        if let Some(def) = obj
            .get("method")
            .and_then(Value::as_str)
            .and_then(|m| self.method_def(m))
        {
            self.validate_def(def, msg)?;
        }
        Ok(())
    }

    /// Validate the `result` of a response to a request of `method`, against
    /// [`Self::result_def`]`(method, result)`.
    ///
    /// # Errors
    /// As described in [`Self::validate_def`], or a message saying the method has no
    /// known result definition.
    pub fn validate_result(&self, method: &str, result: &Value) -> Result<(), String> {
        let def = self.result_def(method, result).ok_or_else(|| {
            format!(
                "no result definition is known for the method `{method}` in the {} schema",
                self.version
            )
        })?;
        self.validate_def(def, result)
            .map_err(|e| format!("result of `{method}`: {e}"))
    }

    /// Validate one response message to a request of `method`:
    /// [`Self::validate_message`], then, when it is a successful response,
    /// [`Self::validate_result`] on its `result`.
    ///
    /// # Errors
    /// The first failing check.
    pub fn validate_response(&self, method: &str, msg: &Value) -> Result<(), String> {
        self.validate_message(msg)?;
        if msg.get("method").is_some() {
            return Err(format!(
                "expected a response to `{method}`, got a request or notification"
            ));
        }
        match msg.get("result") {
            Some(result) => self.validate_result(method, result),
            None => Ok(()),
        }
    }

    /// The schema definition of a request or notification of `method` (`"tools/call"`
    /// -> `"CallToolRequest"`), read from the `properties.method.const` of the schema's
    /// definitions. `None` for a method the schema does not define.
    pub fn method_def(&self, method: &str) -> Option<&str> {
        self.schema().methods.get(method).map(String::as_str)
    }

    /// The schema definition of the result of a request of `method`, given the result
    /// itself (a polymorphic result: a 2025-11-25 `CreateTaskResult`, a 2026-07-28
    /// `InputRequiredResult`). `None` for a method with no known result.
    pub fn result_def(&self, method: &str, result: &Value) -> Option<&'static str> {
        if let Some(def) = (self.polymorphic)(method, result) {
            return Some(def);
        }
        self.result_defs
            .iter()
            .find(|(m, _)| *m == method)
            .map(|(_, def)| *def)
    }

    /// Whether `def` is a definition of the schema's `$defs`.
    pub fn has_def(&self, def: &str) -> bool {
        self.schema().defs.contains_key(def)
    }
}

/// [`Revision::validate_def`] of [`LEGACY`].
///
/// # Errors
/// See [`Revision::validate_def`].
pub fn validate_def(def: &str, value: &Value) -> Result<(), String> {
    LEGACY.validate_def(def, value)
}

/// [`Revision::validate_message`] of [`LEGACY`].
///
/// # Errors
/// See [`Revision::validate_message`].
pub fn validate_message(msg: &Value) -> Result<(), String> {
    LEGACY.validate_message(msg)
}

/// [`Revision::validate_result`] of [`LEGACY`]: e.g. `initialize` -> `InitializeResult`,
/// `tools/call` -> `CallToolResult` (or `CreateTaskResult` when the result has a `task`
/// member), `tasks/get` -> `GetTaskResult`, `tasks/result` -> `GetTaskPayloadResult`,
/// `ping` -> `EmptyResult`.
///
/// # Errors
/// See [`Revision::validate_result`].
pub fn validate_result(method: &str, result: &Value) -> Result<(), String> {
    LEGACY.validate_result(method, result)
}

/// [`Revision::validate_response`] of [`LEGACY`].
///
/// # Errors
/// See [`Revision::validate_response`].
pub fn validate_response(method: &str, msg: &Value) -> Result<(), String> {
    LEGACY.validate_response(method, msg)
}

/// [`Revision::method_def`] of [`LEGACY`].
pub fn method_def(method: &str) -> Option<&'static str> {
    LEGACY.method_def(method)
}

/// [`Revision::result_def`] of [`LEGACY`].
pub fn result_def(method: &str, result: &Value) -> Option<&'static str> {
    LEGACY.result_def(method, result)
}

/// [`Revision::has_def`] of [`LEGACY`].
pub fn has_def(def: &str) -> bool {
    LEGACY.has_def(def)
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
mod modern_tests;
#[cfg(test)]
mod tests;
