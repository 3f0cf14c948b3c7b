//! `x-mcp-header` tool parameters, client side: which annotations of a tool's
//! `inputSchema` are valid, and the `Mcp-Param-{Name}` values a call's arguments give.
//!
//! Spec (streamable HTTP, "Custom Headers from Tool Parameters"): "When a server's tool
//! definition includes `x-mcp-header` annotations, conforming clients **MUST** mirror the
//! designated parameter values into HTTP headers."

use serde_json::Value;

/// The annotation on a property schema of a tool's `inputSchema`.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// Largest integer a JavaScript number holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One annotated parameter: the header's `{Name}` and the property path (a chain of
/// `properties` keys from the schema root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` of `Mcp-Param-{Name}`, as annotated.
    pub name: String,
    /// The property path of the argument it mirrors.
    pub path: Vec<String>,
}

/// The valid `x-mcp-header` annotations of `input_schema`, or why the tool definition is
/// invalid.
///
/// Spec: the value "**MUST NOT** be empty"; "**MUST** match HTTP field-name token syntax
/// (`1*tchar`...)"; "**MUST NOT** contain control characters"; "**MUST** be
/// case-insensitively unique among all `x-mcp-header` values in the `inputSchema`";
/// "**MUST** only be applied to parameters with primitive types (integer, string,
/// boolean). Parameters with type `number` are not permitted"; "**MUST** only be applied
/// to properties that are _statically reachable_ from the schema root: reachable via a
/// chain consisting solely of `properties` keys ... An `x-mcp-header` annotation anywhere
/// else makes the annotation — and thus the tool definition — invalid."
///
/// # Errors
/// The first violation, for the warning the client logs ("including the tool name and the
/// reason for rejection").
pub fn annotations(input_schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(input_schema, &mut Vec::new(), true, &mut found)?;
    let mut seen: Vec<String> = Vec::new();
    for h in &found {
        let lower = h.name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!("x-mcp-header `{}` is not unique", h.name));
        }
        seen.push(lower);
    }
    Ok(found)
}

/// Walk `node`: `path` is its property path while `reachable` (only `properties` keys so
/// far); an annotation off such a chain is an error.
fn walk(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            if let Some(name) = map.get(X_MCP_HEADER) {
                if !reachable || path.is_empty() {
                    return Err(format!(
                        "x-mcp-header {name} is not on a property reachable by `properties` keys alone"
                    ));
                }
                let name = name
                    .as_str()
                    .ok_or_else(|| format!("x-mcp-header {name} is not a string"))?;
                check_name(name)?;
                match map.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header `{name}` is on a parameter of type {}, not integer, \
                             string or boolean",
                            other.unwrap_or("(none)")
                        ));
                    }
                }
                found.push(ParamHeader {
                    name: name.to_owned(),
                    path: path.clone(),
                });
            }
            for (key, child) in map {
                if key == "properties"
                    && reachable
                    && let Value::Object(props) = child
                {
                    for (prop, schema) in props {
                        path.push(prop.clone());
                        let r = walk(schema, path, true, found);
                        path.pop();
                        r?;
                    }
                    continue;
                }
                if key != X_MCP_HEADER {
                    walk(child, path, false, found)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| walk(item, path, false, found)),
        _ => Ok(()),
    }
}

/// RFC 9110 `1*tchar`: no empty name, no space, separator or control character.
fn check_name(name: &str) -> Result<(), String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() {
        return Err("x-mcp-header is empty".to_owned());
    }
    if !name.chars().all(tchar) {
        return Err(format!(
            "x-mcp-header {name:?} is not an HTTP field-name token"
        ));
    }
    Ok(())
}

/// The `(Name, value)` of each header `headers` give for `arguments`, the value as text
/// before its encoding: a string as it is, an integer in decimal, a boolean as `true` or
/// `false`. No value at the path (or `null`): no header ("If no value is present at that
/// path in the call arguments, the header is omitted"); neither is one for a value of
/// another type, or an integer outside the JavaScript-safe range.
pub fn values(headers: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|h| {
            let v = h.path.iter().try_fold(arguments, |v, key| v.get(key))?;
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => {
                    let i = n.as_i64()?;
                    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER)
                        .contains(&i)
                        .then(|| i.to_string())?
                }
                _ => return None,
            };
            Some((h.name.clone(), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(prop: Value) -> Value {
        json!({"type": "object", "properties": {"p": prop, "q": {"type": "string"}}})
    }

    #[test]
    fn valid_annotations_are_found_at_their_property_paths() {
        let s = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"}}},
            "n": {"type": "integer", "x-mcp-header": "N"}
        }});
        let a = annotations(&s).unwrap();
        assert_eq!(a.len(), 3);
        let args = json!({"region": "us-west1", "opts": {"verbose": false}, "n": -7});
        let mut v = values(&a, &args);
        v.sort();
        assert_eq!(
            v,
            vec![
                ("N".into(), "-7".into()),
                ("Region".into(), "us-west1".into()),
                ("Verbose".into(), "false".into())
            ]
        );
        // Absent or null: no header.
        assert!(values(&a, &json!({"region": null})).is_empty());
    }

    #[test]
    fn each_constraint_of_the_spec_invalidates_the_tool() {
        // Property `p` of type `ty` annotated `x-mcp-header: name`.
        let header = |ty: &str, name: &str| schema(json!({"type": ty, "x-mcp-header": name}));
        for (why, s) in [
            ("empty", header("string", "")),
            ("space", header("string", "A B")),
            ("colon", header("string", "A:B")),
            ("non-ascii", header("string", "Rég")),
            ("control", header("string", "A\rB")),
            ("number", header("number", "N")),
            ("object", header("object", "O")),
            ("array", header("array", "A")),
            ("null", header("null", "Z")),
            (
                "duplicate",
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Dup"},
                    "b": {"type": "string", "x-mcp-header": "dup"}}}),
            ),
            (
                "items",
                schema(json!({"type": "array", "items": {"type": "string", "x-mcp-header": "I"}})),
            ),
            (
                "anyOf",
                json!({"type": "object", "anyOf": [{"properties": {
                    "a": {"type": "string", "x-mcp-header": "A"}}}]}),
            ),
            ("root", json!({"type": "object", "x-mcp-header": "Root"})),
        ] {
            assert!(annotations(&s).is_err(), "{why}: {s}");
        }
        assert_eq!(annotations(&schema(json!({"type": "string"}))), Ok(vec![]));
    }
}
