//! The request headers of a 2026-07-28 ("modern") request (transport page, "Standard
//! Request Headers"), taken from its body.

use base64::Engine;
use mcp_tasks_proto::Request;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::MCP_PROTOCOL_VERSION;

/// `Mcp-Method`: the JSON-RPC method.
pub(super) const MCP_METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name`, `params.uri` or (tasks extension) `params.taskId`.
pub(super) const MCP_NAME: &str = "mcp-name";
/// The `_meta` key naming a modern request's protocol version.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` of `req`.
///
/// Spec (streamable HTTP): "The client MUST include the `MCP-Protocol-Version` header on
/// all requests"; `Mcp-Method` "All requests"; "These headers are REQUIRED for
/// compliance."
pub(super) fn headers(req: &Request) -> HeaderMap {
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
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let h = headers(&req(
            "tools/call",
            json!({"name": "sleep", "_meta": meta.clone()}),
        ));
        assert_eq!(h[MCP_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(h[MCP_METHOD], "tools/call");
        assert_eq!(h[MCP_NAME], "sleep");
        let h = headers(&req(
            "tasks/update",
            json!({"taskId": "t-1", "_meta": meta}),
        ));
        assert_eq!(h[MCP_NAME], "t-1");
        let h = headers(&req("server/discover", json!({})));
        assert!(h.get(MCP_NAME).is_none() && h.get(MCP_PROTOCOL_VERSION).is_none());
    }
}
