//! What goes over the wire around one call of the bench's client ([`crate::client`]):
//! the revision's names on the command line and its `_meta` ([`era_name`],
//! [`parse_era`]), where the server is ([`Endpoint`]), and what a call gives back
//! ([`Reply`], [`CallError`], [`response_of`]).

use std::time::Instant;

use hyper::{StatusCode, Uri};
use serde_json::Value;

use mcp_tasks_proto::{Revision, RevisionChoice};

/// The protocol revision the bench speaks in the legacy era.
pub const PROTOCOL_VERSION: &str = Revision::V2025_11_25.as_str();

/// The protocol revision the bench speaks in the modern era.
pub use mcp_tasks_proto::modern::PROTOCOL_VERSION as MODERN_PROTOCOL_VERSION;

/// The name of the protocol revision the bench speaks, on the command line and in
/// reports (`--era`, the `era` of the JSON report): `legacy` for 2025-11-25, one MCP
/// session per virtual client (`initialize`, `Mcp-Session-Id`), task-augmented
/// `tools/call`, `tasks/result`, `tasks/list`; `modern` for 2026-07-28 with the tasks
/// extension (SEP-2663): no session; every request carries the protocol version, client
/// info and capabilities (the extension declared) in its `_meta`, and the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers; the server decides which
/// `tools/call` becomes a task; results come inline in `tasks/get`.
pub fn era_name(revision: Revision) -> &'static str {
    if revision.is_stateless() {
        "modern"
    } else {
        "legacy"
    }
}

/// The revision `--era` names: `legacy`, `modern` or a dated revision.
///
/// # Errors
/// Any other word (`auto` too: the bench speaks one revision).
pub fn parse_era(s: &str) -> Result<Revision, String> {
    match s.parse::<RevisionChoice>() {
        Ok(RevisionChoice::Fixed(r)) => Ok(r),
        _ => Err(format!("unknown era `{s}` (legacy or modern)")),
    }
}

/// The `_meta` every modern request of the bench carries, as JSON text.
///
/// Spec (basic, `_meta`): "Client requests carry the following `io.modelcontextprotocol/*`
/// fields in `_meta`; fields marked as required MUST be included on every request"; the
/// tasks extension is declared in the capabilities (SEP-2663: "A server MUST NOT return
/// `CreateTaskResult` to a client that did not include the extension capability on its
/// request").
pub(crate) fn modern_meta() -> String {
    use mcp_tasks_proto::modern::{ClientCapabilities, Implementation, TASKS_EXTENSION};
    let mut caps = serde_json::Map::new();
    caps.insert(
        "extensions".into(),
        serde_json::json!({ TASKS_EXTENSION: {} }),
    );
    mcp_tasks_proto::modern::request_meta_value(
        &Implementation::new("mcp-tasks-bench", env!("CARGO_PKG_VERSION")),
        &ClientCapabilities(caps),
    )
    .to_string()
}

/// Whether `value` can be sent as a plain header value (the transport's "Value
/// Encoding": printable ASCII, no leading or trailing whitespace, not the Base64
/// sentinel form). The bench sends only such values: tool names and server-made task ids.
pub(crate) fn header_safe(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !value.starts_with("=?base64?")
}

/// `params` (a JSON object) with the modern `_meta` first, as JSON text.
pub(crate) fn with_meta(meta: &str, params: &Value) -> String {
    let text = params.to_string();
    match text.strip_prefix('{') {
        Some("}") => format!(r#"{{"_meta":{meta}}}"#),
        Some(rest) => format!(r#"{{"_meta":{meta},{rest}"#),
        None => text,
    }
}

/// Why a call did not give a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// A JSON-RPC error response.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// An answer that is not the JSON-RPC response it should be (or a result whose shape
    /// is wrong for the method).
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// An HTTP status other than the one expected.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The connection failed or timed out.
    #[error("transport: {0}")]
    Transport(String),
}

impl CallError {
    /// The class used to count errors: `jsonrpc <code>`, `malformed`, `http <status>`,
    /// `transport`.
    pub fn class(&self) -> String {
        match self {
            Self::Rpc { code, .. } => format!("jsonrpc {code}"),
            Self::Malformed(_) => "malformed".into(),
            Self::Http { status, .. } => format!("http {status}"),
            Self::Transport(_) => "transport".into(),
        }
    }
}

/// Where the server is.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port` to connect to.
    pub addr: String,
    /// The `Host` header.
    pub authority: String,
    /// The request path (`/mcp`).
    pub path: String,
    /// A bearer token, if any.
    pub token: Option<String>,
}

impl Endpoint {
    /// Parse an `http://host:port/path` URL.
    ///
    /// # Errors
    /// Anything but a plain `http` URL with a host.
    pub fn parse(url: &str, token: Option<String>) -> Result<Self, String> {
        let uri: Uri = url.parse().map_err(|e| format!("bad URL `{url}`: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("`{url}`: only http:// URLs are supported"));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("`{url}` has no host"))?
            .as_str()
            .to_owned();
        let addr = if uri.port().is_some() {
            authority.clone()
        } else {
            format!("{authority}:80")
        };
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Self {
            addr,
            authority,
            path,
            token,
        })
    }
}

/// A successful call: its `result`, and when it arrived.
#[derive(Debug)]
pub struct Reply {
    /// The `result` member.
    pub result: Value,
    /// When the response message was read (before the rest of an SSE stream was drained).
    pub arrived: Instant,
}

pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    s.into_owned()
}

pub(crate) fn http_error(status: StatusCode, body: &[u8]) -> CallError {
    CallError::Http {
        status: status.as_u16(),
        body: excerpt(body),
    }
}

/// The `result` of the JSON-RPC response `msg` to request `id`.
///
/// # Errors
/// Its error, or [`CallError::Malformed`] when it is not a response to `id`.
pub fn response_of(id: u64, msg: Value) -> Result<Value, CallError> {
    let Value::Object(mut obj) = msg else {
        return Err(CallError::Malformed("response is not a JSON object".into()));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(CallError::Malformed(
            "response lacks `\"jsonrpc\": \"2.0\"`".into(),
        ));
    }
    if let Some(err) = obj.get("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(CallError::Rpc {
                code,
                message: message.to_owned(),
            }),
            _ => Err(CallError::Malformed(format!("bad error object: {err}"))),
        };
    }
    if obj.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(CallError::Malformed(format!(
            "response id {:?} is not the request's ({id})",
            obj.get("id")
        )));
    }
    match obj.remove("result") {
        Some(r @ Value::Object(_)) => Ok(r),
        Some(other) => Err(CallError::Malformed(format!(
            "`result` is not an object: {other}"
        ))),
        None => Err(CallError::Malformed(
            "response has neither `result` nor `error`".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_parsing() {
        let e = Endpoint::parse("http://127.0.0.1:8080/mcp", None).unwrap();
        assert_eq!(e.addr, "127.0.0.1:8080");
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(e.path, "/mcp");
        let e = Endpoint::parse("http://localhost/x", Some("t".into())).unwrap();
        assert_eq!(e.addr, "localhost:80");
        assert!(Endpoint::parse("https://localhost/mcp", None).is_err());
        assert!(Endpoint::parse("not a url", None).is_err());
    }

    #[test]
    fn modern_params_carry_the_meta_first() {
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        let p: Value = serde_json::from_str(&with_meta(meta, &json!({"taskId": "t-1"}))).unwrap();
        assert_eq!(p["taskId"], "t-1");
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let p: Value = serde_json::from_str(&with_meta(meta, &json!({}))).unwrap();
        assert_eq!(
            p,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        );
        // The whole `_meta` of the bench: version, capabilities with the extension, info.
        let m: Value = serde_json::from_str(&modern_meta()).unwrap();
        assert_eq!(m["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        assert!(
            m["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"]
                .is_object()
        );
        assert_eq!(
            m["io.modelcontextprotocol/clientInfo"]["name"],
            "mcp-tasks-bench"
        );
        assert_eq!(
            mcp_tasks_proto::modern::mcp_name_field("tasks/get"),
            Some("taskId")
        );
        assert_eq!(
            mcp_tasks_proto::modern::mcp_name_field("tools/call"),
            Some("name")
        );
        assert_eq!(
            mcp_tasks_proto::modern::mcp_name_field("server/discover"),
            None
        );
        assert!(header_safe("0b4f2a8c-6d2e-4f7a-9c51-3e2f1a0b9d77"));
        for bad in ["naïve", " x", "a\nb", "=?base64?x?="] {
            assert!(!header_safe(bad), "{bad}");
        }
        assert_eq!(parse_era("modern"), Ok(Revision::V2026_07_28));
        assert_eq!(parse_era("2025-11-25"), Ok(Revision::V2025_11_25));
        assert!(parse_era("x").is_err());
        assert!(parse_era("auto").is_err());
        assert_eq!(era_name(Revision::V2025_11_25), "legacy");
        assert_eq!(era_name(Revision::V2026_07_28), "modern");
    }

    #[test]
    fn responses_are_checked() {
        let ok = json!({"jsonrpc": "2.0", "id": 3, "result": {"x": 1}});
        assert_eq!(response_of(3, ok.clone()).unwrap(), json!({"x": 1}));
        assert!(matches!(response_of(4, ok), Err(CallError::Malformed(_))));
        let err = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}});
        assert_eq!(
            response_of(3, err),
            Err(CallError::Rpc {
                code: -32602,
                message: "bad".into()
            })
        );
        for bad in [
            json!([]),
            json!({"id": 3, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 3}),
            json!({"jsonrpc": "2.0", "id": 3, "result": 5}),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}}),
        ] {
            assert!(
                matches!(response_of(3, bad.clone()), Err(CallError::Malformed(_))),
                "{bad}"
            );
        }
    }
}
