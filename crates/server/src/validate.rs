//! Validation of `tools/call` arguments against a tool's input schema, and of its
//! results against its output schema.
//!
//! Spec (tools page, error handling): "Input validation errors (e.g., date in wrong
//! format, value out of range)" are "Tool Execution Errors: Reported in tool results with
//! `isError: true`". The message names each offending field and the rule it breaks, in
//! the validator's words (`days: 9 is greater than the maximum of 7`,
//! `"city" is a required property`), so that the model can fix its call.

use std::sync::OnceLock;

use jsonschema::Validator;
use mcp_tasks_proto::error::clip;
use mcp_tasks_proto::{CallToolResult, ErrorObject};
use serde_json::Value;

/// At most this many violations are listed (the first ones the validator finds).
const MAX_LISTED: usize = 5;
/// Longest reason quoted from the validator (its messages embed the offending value).
const MAX_REASON: usize = 200;

/// A validator compiled on first use from a schema, and kept.
#[derive(Default)]
pub(crate) struct SchemaValidator {
    compiled: OnceLock<Option<Validator>>,
}

impl SchemaValidator {
    /// What in `instance` breaks `schema` (compiled on the first call; a schema that does
    /// not compile disables the check, with a warning naming `what`), as one line naming
    /// each offending field; `None` when it conforms.
    pub(crate) fn violations(
        &self,
        what: &str,
        schema: &Value,
        instance: &Value,
    ) -> Option<String> {
        let compiled = self.compiled.get_or_init(|| match compile(schema) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(error = %e, "{what} does not compile: it is not checked");
                None
            }
        });
        let mut errors = compiled.as_ref()?.iter_errors(instance).peekable();
        errors.peek()?;
        let mut reasons = Vec::new();
        let mut more = 0usize;
        for e in errors {
            if reasons.len() == MAX_LISTED {
                more += 1;
                continue;
            }
            let reason = clip(&e.to_string(), MAX_REASON);
            reasons.push(match field(e.instance_path().as_str()) {
                Some(f) => format!("{f}: {reason}"),
                None => reason,
            });
        }
        let mut line = reasons.join("; ");
        if more > 0 {
            line.push_str(&format!(" (and {more} more)"));
        }
        Some(line)
    }
}

/// The argument check of a tool: its input schema's validator.
#[derive(Default)]
pub(crate) struct ArgsValidator(SchemaValidator);

impl ArgsValidator {
    /// Check `args` against `schema`.
    pub(crate) fn check(
        &self,
        tool: &str,
        schema: &Value,
        args: &Value,
    ) -> Result<(), CallToolResult> {
        let what = format!("the input schema of tool `{tool}`");
        match self.0.violations(&what, schema, args) {
            None => Ok(()),
            Some(reasons) => Err(CallToolResult::error(format!(
                "Invalid arguments for tool `{tool}`: {reasons}"
            ))),
        }
    }
}

/// The result check of a tool with an `outputSchema`.
///
/// Spec (tools page, output schema): "If an output schema is provided: Servers MUST
/// provide structured results that conform to this schema." A handler that breaks this
/// is a bug of the server, not of the call: the call fails with -32603 naming the tool
/// and the offending fields (and a warning is logged), rather than sending a client a
/// result its validation would reject. Error results (`isError: true`) carry no
/// structured content and are passed through.
pub(crate) struct OutputCheck {
    schema: Value,
    validator: SchemaValidator,
}

impl OutputCheck {
    pub(crate) fn new(schema: Value) -> Self {
        Self {
            schema,
            validator: SchemaValidator::default(),
        }
    }

    /// `result` if it conforms; the error to answer with if not.
    pub(crate) fn check(
        &self,
        tool: &str,
        mut result: CallToolResult,
    ) -> Result<CallToolResult, ErrorObject> {
        if result.is_error {
            return Ok(result);
        }
        let problem = match result.structured_content.take() {
            None => "it has no structuredContent".to_owned(),
            Some(sc) => {
                // Checked in place (moved out and back), not copied: results may be large.
                let what = format!("the output schema of tool `{tool}`");
                let instance = Value::Object(sc);
                let found = self.validator.violations(&what, &self.schema, &instance);
                let Value::Object(sc) = instance else {
                    unreachable!("built as an object above")
                };
                result.structured_content = Some(sc);
                match found {
                    None => return Ok(result),
                    Some(reasons) => format!("its structuredContent does not conform: {reasons}"),
                }
            }
        };
        tracing::warn!(tool, "{problem}");
        Err(ErrorObject::internal(format!(
            "tool `{tool}` returned a result that breaks its outputSchema: {problem}"
        )))
    }
}

/// Compile `schema`; without `$schema` it is read as draft 2020-12.
///
/// Spec (2025-11-25, JSON Schema usage): "JSON Schema 2020-12 is the default dialect for
/// MCP schemas when no `$schema` field is present."
fn compile(schema: &Value) -> Result<Validator, String> {
    let mut opts = jsonschema::options();
    if schema.get("$schema").is_none() {
        opts = opts.with_draft(jsonschema::Draft::Draft202012);
    }
    opts.build(schema).map_err(|e| e.to_string())
}

/// `/days` -> `days`, `/stops/0/city` -> `stops[0].city`; `None` for the whole object.
fn field(pointer: &str) -> Option<String> {
    if pointer.is_empty() {
        return None;
    }
    let mut out = String::new();
    for seg in pointer.trim_start_matches('/').split('/') {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "stops": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            },
            "required": ["city"]
        })
    }

    fn check(args: Value) -> Result<(), String> {
        ArgsValidator::default()
            .check("forecast", &schema(), &args)
            .map_err(|r| {
                assert!(r.is_error);
                r.first_text().unwrap().to_owned()
            })
    }

    #[test]
    fn names_the_field_and_the_bound() {
        assert_eq!(check(json!({"city": "Oslo", "days": 3})), Ok(()));
        assert_eq!(
            check(json!({"city": "Oslo", "days": 9})).unwrap_err(),
            "Invalid arguments for tool `forecast`: days: 9 is greater than the maximum of 7"
        );
        assert_eq!(
            check(json!({"days": 0})).unwrap_err(),
            "Invalid arguments for tool `forecast`: \"city\" is a required property; days: 0 is less than the minimum of 1"
        );
        let e = check(json!({"city": "x", "stops": [{"n": "one"}]})).unwrap_err();
        assert!(
            e.contains("stops[0].n: \"one\" is not of type \"integer\""),
            "{e}"
        );
    }

    #[test]
    fn long_values_are_cut_and_many_errors_counted() {
        let e = check(json!({"city": 5, "days": "y".repeat(1000)})).unwrap_err();
        assert!(e.len() < 600 && e.contains("city: 5 is not of type"), "{e}");
        let many: Vec<Value> = (0..8).map(|_| json!({"n": "s"})).collect();
        let e = check(json!({"city": "x", "stops": many})).unwrap_err();
        assert!(e.ends_with("(and 3 more)"), "{e}");
    }

    #[test]
    fn a_schema_that_does_not_compile_turns_validation_off() {
        let v = ArgsValidator::default();
        let bad = json!({"type": "object", "properties": {"a": {"type": 12}}});
        assert!(v.check("t", &bad, &json!({"a": 1})).is_ok());
    }

    #[test]
    fn draft_2020_12_is_the_default_dialect() {
        // `prefixItems` exists only from 2020-12 on.
        let s =
            json!({"type": "object", "properties": {"p": {"prefixItems": [{"type": "integer"}]}}});
        let v = ArgsValidator::default();
        assert!(v.check("t", &s, &json!({"p": ["no"]})).is_err());
    }
}
