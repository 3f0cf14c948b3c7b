//! The request headers of a 2026-07-28 ("modern") request (transport page, "Standard
//! Request Headers"), taken from its body.

use base64::Engine;
use mcp_tasks_proto::Request;
use mcp_tasks_proto::modern::param_headers;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::MCP_PROTOCOL_VERSION;

/// `Mcp-Method`: the JSON-RPC method.
pub(super) const MCP_METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name`, `params.uri` or (tasks extension) `params.taskId`.
pub(super) const MCP_NAME: &str = "mcp-name";
/// The `_meta` key naming a modern request's protocol version.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` of `req`, and for a `tools/call`
/// of a tool in `params` its `Mcp-Param-{Name}` headers.
///
/// Spec (streamable HTTP): "The client MUST include the `MCP-Protocol-Version` header on
/// all requests"; `Mcp-Method` "All requests"; "These headers are REQUIRED for
/// compliance."
pub(super) fn headers(req: &Request, params_table: &super::ParamHeaderTable) -> HeaderMap {
    let mut h = HeaderMap::new();
    let params = req.params.as_ref();
    if let Some(v) = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION_META))
        .and_then(Value::as_str)
    {
        h.insert(MCP_PROTOCOL_VERSION, encoded(v));
    }
    h.insert(MCP_METHOD, encoded(&req.method));
    let name = mcp_tasks_proto::modern::mcp_name_field(&req.method)
        .and_then(|f| params.and_then(|p| p.get(f)))
        .and_then(Value::as_str);
    if let Some(name) = name {
        h.insert(MCP_NAME, encoded(name));
    }
    let annotated = (req.method == mcp_tasks_proto::methods::TOOLS_CALL)
        .then_some(name)
        .flatten()
        .and_then(|tool| params_table.get(tool));
    if let Some(annotated) = annotated {
        let args = params
            .and_then(|p| p.get("arguments"))
            .unwrap_or(&Value::Null);
        for (name, value) in param_headers::values(annotated, args) {
            // The names were checked as tokens when the tool was listed.
            if let Ok(header) = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()) {
                h.insert(header, encoded(&value));
            }
        }
    }
    h
}

/// `value` as a header value: as it is when header-safe, else the Base64 sentinel form.
///
/// Spec (streamable HTTP, "Value Encoding"): "When a value cannot be safely represented
/// as a plain ASCII header value (e.g., it contains non-ASCII characters, control
/// characters, or has leading/trailing whitespace), clients MUST use Base64 encoding of
/// the UTF-8 representation" as `=?base64?{Base64EncodedValue}?=`. A plain value that
/// itself looks like the sentinel is encoded too, so that it is not decoded.
pub(super) fn encoded(value: &str) -> HeaderValue {
    let safe = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !value.starts_with("=?base64?");
    let text = if safe {
        value.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{b64}?=")
    };
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_proto::RequestId;
    use serde_json::json;

    #[test]
    fn names_are_sent_plain_or_as_the_base64_sentinel() {
        for (value, header) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            assert_eq!(encoded(value).to_str().unwrap(), header, "{value:?}");
        }
    }

    #[test]
    fn headers_mirror_the_body() {
        let req = |method: &str, params: Value| Request {
            id: RequestId::Number(1),
            method: method.into(),
            params: Some(params),
        };
        let none = super::super::ParamHeaderTable::new();
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let h = headers(
            &req(
                "tools/call",
                json!({"name": "sleep", "_meta": meta.clone()}),
            ),
            &none,
        );
        assert_eq!(h[MCP_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(h[MCP_METHOD], "tools/call");
        assert_eq!(h[MCP_NAME], "sleep");
        let h = headers(
            &req("tasks/update", json!({"taskId": "t-1", "_meta": meta})),
            &none,
        );
        assert_eq!(h[MCP_NAME], "t-1");
        let h = headers(&req("server/discover", json!({})), &none);
        assert!(h.get(MCP_NAME).is_none() && h.get(MCP_PROTOCOL_VERSION).is_none());
    }

    /// Spec (streamable HTTP, "Value Encoding"): "`string`: Use the value as-is";
    /// "`integer`: Convert to decimal string representation"; "`boolean`: Convert to
    /// lowercase `"true"` or `"false"`"; a value not header-safe in the Base64 sentinel.
    #[test]
    fn annotated_arguments_of_a_listed_tool_become_mcp_param_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "absent": {"type": "string", "x-mcp-header": "Absent"}
        }});
        let mut table = super::super::ParamHeaderTable::new();
        table.insert("sql".into(), param_headers::annotations(&schema).unwrap());
        let call = |name: &str| Request {
            id: RequestId::Number(1),
            method: "tools/call".into(),
            params: Some(json!({"name": name, "arguments": {
                "region": "us-west1", "greeting": "Hello, 世界", "priority": 42, "verbose": true}})),
        };
        let h = headers(&call("sql"), &table);
        assert_eq!(h["mcp-param-region"], "us-west1");
        assert_eq!(h["mcp-param-greeting"], "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(h["mcp-param-priority"], "42");
        assert_eq!(h["mcp-param-verbose"], "true");
        assert!(h.get("mcp-param-absent").is_none());
        // Another tool's call carries none.
        let h = headers(&call("other"), &table);
        assert!(h.keys().all(|k| !k.as_str().starts_with("mcp-param-")));
    }
}
