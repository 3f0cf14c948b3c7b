//! `x-mcp-header` tool parameters (2026-07-28, streamable HTTP, "Custom Headers from Tool
//! Parameters"): the `Mcp-Param-{Name}` headers of a `tools/call`, mirrored from its
//! arguments as the tool's `inputSchema` says.
//!
//! The transport learns each tool's annotated parameters from the `tools/list` results it
//! reads (every `tools/list` of the peer passes through it), drops a tool whose
//! annotations break the rules from that result, and adds the headers to each
//! `tools/call` of a tool it knows. A call refused with `-32020` (HeaderMismatch) makes it
//! read `tools/list` and try once more.

use std::collections::HashMap;

use reqwest::header::{HeaderMap, HeaderName};
use serde_json::Value;

use super::modern::encoded;

/// The annotation on a property schema of a tool's `inputSchema`.
pub(super) const X_MCP_HEADER: &str = "x-mcp-header";
/// How many tools with annotated parameters the transport remembers; past it the
/// annotations of further tools are not kept (their calls carry no `Mcp-Param-*`
/// headers until a server refusal makes the transport read `tools/list` again).
pub const MAX_ANNOTATED_TOOLS: usize = 4096;
/// How many `tools/list` pages the transport reads at most after a `-32020`.
pub(super) const MAX_REFRESH_PAGES: usize = 16;

/// One annotated parameter: the `properties` keys leading to it, and `{Name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParamHeader {
    path: Vec<String>,
    name: String,
}

/// The annotated parameters of the tools seen, by tool name.
#[derive(Debug, Default)]
pub(super) struct ParamTools {
    by_tool: HashMap<String, Vec<ParamHeader>>,
}

impl ParamTools {
    /// Learn the tools of one `tools/list` result and remove from it those whose
    /// annotations break the rules.
    ///
    /// Spec: "Clients using the Streamable HTTP transport MUST reject tool definitions
    /// where any `x-mcp-header` value violates these constraints. Rejection means the
    /// client MUST exclude the invalid tool from the result of `tools/list`. Clients
    /// SHOULD log a warning when rejecting a tool definition, including the tool name and
    /// the reason for rejection."
    pub(super) fn learn(&mut self, result: &mut Value) {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return;
        };
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match annotated(schema) {
                Ok(params) => {
                    if params.is_empty() {
                        self.by_tool.remove(name);
                    } else if self.by_tool.len() < MAX_ANNOTATED_TOOLS
                        || self.by_tool.contains_key(name)
                    {
                        self.by_tool.insert(name.to_owned(), params);
                    }
                    true
                }
                Err(why) => {
                    tracing::warn!(tool = %name, reason = %why, "tool definition rejected: its x-mcp-header annotations are invalid");
                    self.by_tool.remove(name);
                    false
                }
            }
        });
    }

    /// The `Mcp-Param-{Name}` headers of a `tools/call` with `params`.
    ///
    /// Spec ("Client Behavior"): "Inspect the tool's `inputSchema` for properties marked
    /// with `x-mcp-header` and extract the value at each annotated property's exact
    /// property path, omitting the header when no value is present"; "Encode the values
    /// according to the Value Encoding rules"; "Append a `Mcp-Param-{Name}: {Value}`
    /// header to the request."
    pub(super) fn headers(&self, params: Option<&Value>) -> HeaderMap {
        let mut h = HeaderMap::new();
        let Some(params) = params else { return h };
        let Some(tool) = params.get("name").and_then(Value::as_str) else {
            return h;
        };
        let Some(annotated) = self.by_tool.get(tool) else {
            return h;
        };
        let args = params.get("arguments").unwrap_or(&Value::Null);
        for p in annotated {
            let mut v = args;
            for key in &p.path {
                v = v.get(key).unwrap_or(&Value::Null);
            }
            // Spec ("Type conversion"): "`string`: Use the value as-is"; "`integer`:
            // Convert to decimal string representation"; "`boolean`: Convert to
            // lowercase `"true"` or `"false"`".
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            if let Ok(name) = HeaderName::try_from(format!("mcp-param-{}", p.name)) {
                h.insert(name, encoded(&text));
            }
        }
        h
    }
}

/// Whether `c` is an RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The annotated parameters of `schema`, or why its annotations are invalid.
///
/// Spec ("Constraints on `x-mcp-header` values"): "MUST NOT be empty"; "MUST match HTTP
/// field-name token syntax"; "MUST be case-insensitively unique among all `x-mcp-header`
/// values in the `inputSchema`"; "MUST only be applied to parameters with primitive
/// types (integer, string, boolean). Parameters with type `number` are not permitted";
/// "MUST only be applied to properties that are _statically reachable_ from the schema
/// root ... An `x-mcp-header` annotation anywhere else makes the annotation — and thus
/// the tool definition — invalid."
pub(super) fn annotated(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    visit(schema, Some(&mut Vec::new()), true, &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for p in &found {
        if !seen.insert(p.name.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header `{}` is used more than once (case-insensitively)",
                p.name
            ));
        }
    }
    Ok(found)
}

/// Walk `schema`; `path` is `Some` while it is reachable through `properties` keys only.
fn visit(
    schema: &Value,
    path: Option<&mut Vec<String>>,
    root: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match schema {
        Value::Object(obj) => {
            if let Some(name) = obj.get(X_MCP_HEADER) {
                let Some(path) = path.as_deref().filter(|_| !root) else {
                    return Err(
                        "x-mcp-header on a schema not reachable through `properties` alone"
                            .to_owned(),
                    );
                };
                let name = name
                    .as_str()
                    .ok_or_else(|| "x-mcp-header is not a string".to_owned())?;
                if name.is_empty() {
                    return Err("x-mcp-header is empty".to_owned());
                }
                if !name.chars().all(is_tchar) {
                    return Err(format!(
                        "x-mcp-header `{}` is not an HTTP field-name token",
                        name.escape_debug()
                    ));
                }
                match obj.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header `{name}` is on a parameter of type {}, not integer, string or boolean",
                            other.map_or_else(|| "(none)".to_owned(), |t| format!("`{t}`"))
                        ));
                    }
                }
                found.push(ParamHeader {
                    path: path.clone(),
                    name: name.to_owned(),
                });
            }
            let mut path = path;
            for (key, value) in obj {
                if key == "properties"
                    && let Some(props) = value.as_object()
                {
                    for (prop, sub) in props {
                        match path.as_deref_mut() {
                            Some(p) => {
                                p.push(prop.clone());
                                let r = visit(sub, Some(p), false, found);
                                p.pop();
                                r?;
                            }
                            None => visit(sub, None, false, found)?,
                        }
                    }
                } else if key != X_MCP_HEADER {
                    visit(value, None, false, found)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for v in items {
                visit(v, None, false, found)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> Value {
        json!({"name": name, "inputSchema": schema})
    }

    #[test]
    fn headers_mirror_the_annotated_arguments_encoded() {
        let mut tools = ParamTools::default();
        let mut list = json!({"tools": [tool("q", json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "opt": {"type": "string", "x-mcp-header": "Opt"},
            "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "query": {"type": "string"}
        }}))]});
        tools.learn(&mut list);
        assert_eq!(list["tools"].as_array().unwrap().len(), 1);
        let h = tools.headers(Some(&json!({"name": "q", "arguments": {
            "region": "us-west1", "greeting": "Hello, 世界", "n": -7, "dry": false,
            "nested": {"zone": "=?base64?literal?="}, "query": "SELECT 1"
        }})));
        assert_eq!(h["mcp-param-region"], "us-west1");
        assert_eq!(h["mcp-param-greeting"], "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(h["mcp-param-n"], "-7");
        assert_eq!(h["mcp-param-dry"], "false");
        assert_eq!(h["mcp-param-zone"], "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
        // "If no value is present at that path in the call arguments, the header is
        // omitted."
        assert!(h.get("mcp-param-opt").is_none());
        assert_eq!(h.len(), 5);
        // A tool not known, or not annotated: no header.
        assert!(tools.headers(Some(&json!({"name": "other"}))).is_empty());
    }

    #[test]
    fn invalid_annotations_exclude_the_tool() {
        let bad = [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Re gion"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A\r\n"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}}),
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"type": "string", "x-mcp-header": "A"}),
        ];
        for schema in bad {
            let mut tools = ParamTools::default();
            let mut list = json!({"tools": [tool("bad", schema.clone()), tool("good", json!({"type": "object"}))]});
            tools.learn(&mut list);
            let names: Vec<_> = list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone())
                .collect();
            assert_eq!(names, [json!("good")], "{schema}");
        }
    }

    #[test]
    fn the_remembered_tools_are_bounded() {
        let mut tools = ParamTools::default();
        let annotated = json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}}});
        let mut list = json!({"tools": (0..MAX_ANNOTATED_TOOLS + 10)
            .map(|i| tool(&format!("t{i}"), annotated.clone()))
            .collect::<Vec<_>>()});
        tools.learn(&mut list);
        assert_eq!(tools.by_tool.len(), MAX_ANNOTATED_TOOLS);
        // All are still listed: only the memory of their annotations is bounded.
        assert_eq!(
            list["tools"].as_array().unwrap().len(),
            MAX_ANNOTATED_TOOLS + 10
        );
    }
}
