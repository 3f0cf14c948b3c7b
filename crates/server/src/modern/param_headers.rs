//! `x-mcp-header` tool parameters: the `Mcp-Param-{Name}` headers of a Streamable HTTP
//! `tools/call` checked against the arguments they mirror.

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::modern;
use serde_json::Value;

/// The annotation on a property schema of a tool's `inputSchema`.
pub(crate) const X_MCP_HEADER: &str = "x-mcp-header";

/// Check the `Mcp-Param-{Name}` headers (`headers`: `{Name}` lowercased, values decoded;
/// `None` off HTTP, where nothing is checked) against `args`, for each top-level property
/// of `input_schema` annotated `x-mcp-header`: an argument that is present needs its
/// header with the same value (a string as it is, a number or boolean as its JSON text);
/// a header without its argument is a mismatch too.
///
/// Spec (streamable HTTP): "Any server that processes the message body MUST validate that
/// encoded header values, after decoding if Base64-encoded, match the corresponding
/// values in the request body. Servers MUST reject requests with a `400 Bad Request` HTTP
/// status and JSON-RPC error code `-32020` (`HeaderMismatch`) if any validation fails."
/// The client omits the header "when no value is present".
///
/// # Errors
/// `-32020` naming the header and the property.
pub(crate) fn check(
    input_schema: &Value,
    args: &Value,
    headers: Option<&[(String, String)]>,
) -> Result<(), ErrorObject> {
    let (Some(headers), Some(props)) = (
        headers,
        input_schema.get("properties").and_then(Value::as_object),
    ) else {
        return Ok(());
    };
    for (prop, schema) in props {
        let Some(name) = schema.get(X_MCP_HEADER).and_then(Value::as_str) else {
            continue;
        };
        let sent = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str());
        let body = match args.get(prop) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        };
        if sent != body.as_deref() {
            let show = |v: Option<&str>, what: &str| {
                v.map_or_else(|| what.to_owned(), |v| format!("'{v}'"))
            };
            let header = format!("Mcp-Param-{name}");
            return Err(modern::param_header_mismatch(
                &header,
                format!(
                    "{header} header value {} does not match argument `{prop}` {}",
                    show(sent, "(missing)"),
                    show(body.as_deref(), "(absent)"),
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "plain": {"type": "string"}
        }})
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn matching_headers_pass_and_off_http_nothing_is_checked() {
        let args = json!({"region": "us-west1", "count": 3, "plain": "x"});
        let sent = h(&[("region", "us-west1"), ("count", "3")]);
        assert!(check(&schema(), &args, Some(&sent)).is_ok());
        assert!(check(&schema(), &json!({}), Some(&[])).is_ok());
        assert!(check(&schema(), &args, None).is_ok());
    }

    #[test]
    fn a_missing_or_different_or_extra_header_is_32020() {
        let args = json!({"region": "us-west1"});
        for sent in [
            h(&[]),
            h(&[("region", "eu-west1")]),
            h(&[("region", "us-west1"), ("count", "3")]),
        ] {
            let e = check(&schema(), &args, Some(&sent)).unwrap_err();
            assert_eq!(e.code, -32020, "{sent:?}");
            assert!(e.message.contains("Mcp-Param-"), "{}", e.message);
            // Kept as -32020 on the modern wire (a tool's own -32020 is not).
            assert_eq!(modern::valid_error(e).code, -32020);
        }
    }
}
