//! POST of a request of a stateless revision (2026-07-28, "modern"): no session, the
//! request metadata headers checked against the body, and the modern errors mapped to
//! their HTTP statuses.
//!
//! A request is of a stateless revision when its body's `_meta` names a protocol version,
//! or its `MCP-Protocol-Version` header names a stateless revision (then a body without
//! the `_meta` field is a header mismatch); `post.rs` decides it once per POST
//! ([`header_revision`] and the body). Everything else is served as 2025-11-25 by the session
//! machinery, unchanged. A modern request is answered without a session, by the handler
//! of its principal's modern requests (from the same [`crate::http::SessionFactory`]; see
//! `crate::http::stateless`): no `Mcp-Session-Id` is minted, and one sent is
//! ignored. Spec (streamable HTTP, earlier revisions): "An `Mcp-Session-Id` header on a
//! request: ignore it, and do not mint or echo session IDs."

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::Response;
use mcp_tasks_proto::modern::{self, MODERN_VERSIONS, PROTOCOL_VERSION_META, RequestMeta};
use mcp_tasks_proto::{ErrorObject, Message, Request, Revision, codes, methods};
use serde_json::Value;

use super::response::{
    Accept, MCP_PROTOCOL_VERSION, bad_request, empty, error_body, header_str, http_error,
    json_message_response, json_response, not_acceptable,
};
use crate::http::modern_stream::{self, Streamed};
use crate::http::state::Shared;
use crate::http::stateless;

/// `Mcp-Method`: the JSON-RPC method, mirrored. (Header names as `HeaderName`s: a `&str`
/// would be parsed into one on every lookup.)
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: `params.name`, `params.uri` or (tasks extension) `params.taskId`, mirrored.
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `MCP-Protocol-Version`.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(MCP_PROTOCOL_VERSION);
/// The Base64 sentinel of an encoded header value: `=?base64?...?=`.
const B64_PREFIX: &str = "=?base64?";
const B64_SUFFIX: &str = "?=";
/// The lowercase prefix of the `Mcp-Param-{Name}` headers (header names arrive lowercase).
const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// The stateless revision the `MCP-Protocol-Version` header names, if it names one.
///
/// Spec (versioning): "On HTTP, this is also carried in the `MCP-Protocol-Version`
/// header."
pub(super) fn header_revision(headers: &HeaderMap) -> Option<Revision> {
    header_str(headers, &PROTOCOL_VERSION).and_then(|v| modern::stateless_revision(v.trim()))
}

/// GET or DELETE naming a 2026-07-28 version: 405. That revision has no GET stream and
/// no sessions (long-lived notifications come from `subscriptions/listen`).
///
/// Spec (streamable HTTP, "Earlier Streamable HTTP Revisions"): "HTTP GET or DELETE to
/// the MCP endpoint: respond with `405 Method Not Allowed`."
pub(super) fn no_get_or_delete(method: &axum::http::Method) -> Response {
    let mut r = http_error(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::INVALID_REQUEST,
        format!(
            "Method Not Allowed: {method} has no meaning in 2026-07-28 (no GET stream, no sessions); POST `subscriptions/listen` for notifications"
        ),
    );
    r.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static("POST"),
    );
    r
}

/// A POSTed notification or response naming a 2026-07-28 version in its
/// `MCP-Protocol-Version` header: a notification is accepted (202; nothing in the core
/// protocol is sent this way over HTTP, and a request is cancelled by closing its
/// stream), a response is refused (400, -32600).
///
/// Spec (streamable HTTP): "If the body is a JSON-RPC _notification_: If the server
/// accepts it, the server MUST return HTTP status code `202 Accepted` with no body";
/// "The client MUST NOT send JSON-RPC _responses_"; "This revision of the core protocol
/// defines no client-to-server _notifications_ over Streamable HTTP [...] on Streamable
/// HTTP, closing the SSE response stream is itself the cancellation signal".
pub(super) fn not_a_request(message: &Message) -> Response {
    match message {
        Message::Notification(_) => empty(StatusCode::ACCEPTED),
        _ => bad_request(
            "Bad Request: a 2026-07-28 client sends no JSON-RPC responses (answers travel in `inputResponses` of a retried request or of tasks/update)",
        ),
    }
}

/// Serve one modern request; `checked`: its `_meta`, when read already (see
/// [`mcp_tasks_proto::modern::parse_request`]).
pub(super) async fn post(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    mut req: Request,
    checked: Option<RequestMeta>,
    principal: Option<String>,
    client: Option<std::net::IpAddr>,
    acc: Accept,
) -> Response {
    let id = req.id.clone();
    let refuse = |e: &ErrorObject| json_response(StatusCode::BAD_REQUEST, error_body(Some(&id), e));
    if let Err(e) = check_headers(headers, &req) {
        return refuse(&e);
    }
    let params = match param_headers(headers) {
        Ok(p) => p,
        Err(e) => return refuse(&e),
    };
    // The versions a refusal lists; no list is built per request when the server adds
    // none to the modern ones.
    let extra = &shared.config.protocol_versions;
    let listed: Vec<&str>;
    let supported: &[&str] = if extra.is_empty() {
        MODERN_VERSIONS
    } else {
        listed = MODERN_VERSIONS
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect();
        &listed
    };
    // The checked fields move out of the params (the handler gets them in
    // `RequestContext::request_meta`): no copy of the client's capabilities per request.
    let revision = match checked {
        Some(meta) => Ok(Some(meta)),
        None => modern::take_request_revision(req.params.as_mut(), supported),
    };
    let meta = match revision {
        Ok(Some(mut meta)) => {
            meta.param_headers = Some(params);
            Some(Arc::new(meta))
        }
        // Spec (basic, `_meta`): "A request missing any required field is malformed; the
        // server MUST reject it with JSON-RPC error code `-32602` (Invalid params). On
        // HTTP, the response status MUST be `400 Bad Request`."
        Err(e) => return refuse(&e),
        Ok(None) => None,
    };
    let listen = req.method == modern::methods::SUBSCRIPTIONS_LISTEN;
    if listen && !acc.sse {
        return not_acceptable("text/event-stream (a `subscriptions/listen` answer is a stream)");
    }
    if !listen && !acc.json {
        return not_acceptable("application/json (a 2026-07-28 request is answered as JSON)");
    }
    // No session: the handler of the principal's modern requests serves it in a task of
    // its own (see `crate::http::stateless`), or on a stream of its own when it may send
    // notifications first (`crate::http::modern_stream`).
    let peer = shared
        .stateless
        .get(shared.factory.as_ref(), principal.as_deref(), client);
    let answered = if listen || (acc.sse && may_notify(&req, meta.as_deref())) {
        let handler = Arc::clone(peer.handler());
        match modern_stream::serve(handler, req, meta, listen).await {
            Streamed::Sse(r) => return r,
            Streamed::Json(Ok(body)) => return json_response(StatusCode::OK, body),
            Streamed::Json(Err(error)) => error,
        }
    } else {
        match stateless::serve(peer, req, meta).await {
            Ok(body) => return json_response(StatusCode::OK, body),
            Err(error) => error,
        }
    };
    let status = match &answered {
        Message::Error(e) => status_of(e.error.code),
        _ => StatusCode::OK,
    };
    let mut r = json_message_response(answered);
    if r.status() == StatusCode::OK {
        *r.status_mut() = status;
    }
    r
}

/// Whether the handler of `req` may send notifications tied to it before its answer: it
/// carries a `progressToken`, or asks for log messages (`logLevel`).
///
/// Spec (progress): "The receiver MAY choose not to send any progress notifications";
/// (streamable HTTP) "The server MAY send JSON-RPC _notifications_ — for example,
/// `notifications/progress` or `notifications/message` — before the final response."
fn may_notify(req: &Request, meta: Option<&RequestMeta>) -> bool {
    meta.is_some_and(|m| m.log_level.is_some())
        || req
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .is_some_and(|t| !t.is_null())
}

/// The HTTP status of a modern JSON-RPC error.
///
/// Spec (streamable HTTP): `HeaderMismatch` "MUST return HTTP status `400 Bad Request`";
/// `UnsupportedProtocolVersionError` "MUST respond with `400 Bad Request`"; "If the
/// server does not implement the requested RPC method, it MUST respond with `404 Not
/// Found` and a JSON-RPC error with code `-32601`". Spec (basic): for
/// `MissingRequiredClientCapabilityError` "On HTTP, the response status MUST be `400 Bad
/// Request`". Every other error is a JSON-RPC answer like any other: 200.
fn status_of(code: i64) -> StatusCode {
    match code {
        modern::codes::HEADER_MISMATCH
        | modern::codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | modern::codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// Whether a request of `method` without `Mcp-Name` is served: the tasks methods.
///
/// The transport's table of standard headers requires `Mcp-Name` only for `tools/call`,
/// `resources/read` and `prompts/get`; SEP-2663 puts the `params.taskId` mirror on the
/// client ("the client MUST set the `Mcp-Name` header"), and FastMCP 4.1.4 sends
/// `tasks/get|update|cancel` without it. We accept its absence there (a value that is
/// sent must still match: "Servers that process the request body MUST reject requests
/// where the values specified in the headers do not match").
fn name_may_be_missing(method: &str) -> bool {
    matches!(
        method,
        methods::TASKS_GET | methods::TASKS_CANCEL | modern::methods::TASKS_UPDATE
    )
}

/// Check the request metadata headers against the body.
///
/// Spec (streamable HTTP, "Server Validation"): "Servers that process the request body
/// MUST reject requests where the values specified in the headers do not match the
/// corresponding values in the request body", including when "A required standard
/// header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is missing" or "A header
/// value contains invalid characters"; encoded `Mcp-Name` values are decoded first.
///
/// # Errors
/// `-32020` saying which header and why; `-32602` when the body's `_meta` has no protocol
/// version at all.
fn check_headers(headers: &HeaderMap, req: &Request) -> Result<(), ErrorObject> {
    let version = required(headers, &PROTOCOL_VERSION, "MCP-Protocol-Version")?;
    let body_version = req
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION_META));
    match body_version {
        Some(Value::String(v)) if v == version.trim() => {}
        Some(v) => {
            return Err(modern::header_mismatch(format!(
                "MCP-Protocol-Version header value '{version}' does not match body value {v}"
            )));
        }
        // Spec (basic, `_meta`): "A request missing any required field is malformed; the
        // server MUST reject it with JSON-RPC error code `-32602` (Invalid params). On
        // HTTP, the response status MUST be `400 Bad Request`." Nothing to compare the
        // header with: the body is what is wrong.
        None => {
            return Err(ErrorObject::invalid_params(format!(
                "`_meta[\"{PROTOCOL_VERSION_META}\"]` is required on every 2026-07-28 request (the MCP-Protocol-Version header says '{version}')"
            )));
        }
    }
    let method = required(headers, &MCP_METHOD, "Mcp-Method")?;
    if method != req.method {
        return Err(modern::header_mismatch(format!(
            "Mcp-Method header value '{method}' does not match body value '{}'",
            req.method
        )));
    }
    if let Some(field) = mcp_tasks_proto::modern::mcp_name_field(&req.method) {
        if headers.get(&MCP_NAME).is_none() && name_may_be_missing(&req.method) {
            return Ok(());
        }
        let header = decode(required(headers, &MCP_NAME, "Mcp-Name")?, "Mcp-Name")?;
        let body = req
            .params
            .as_ref()
            .and_then(|p| p.get(field))
            .and_then(Value::as_str);
        if body != Some(&*header) {
            return Err(modern::header_mismatch(format!(
                "Mcp-Name header value '{header}' does not match body value {}",
                body.map_or_else(|| format!("(no `params.{field}`)"), |b| format!("'{b}'"))
            )));
        }
    }
    Ok(())
}

/// The `Mcp-Param-{Name}` headers, `{Name}` lowercased, each value decoded; which of them
/// a tool recognizes, and whether they match the body, is for the server that knows the
/// tool's `inputSchema` (`x-mcp-header`).
///
/// Spec (streamable HTTP): "Servers MUST reject requests with a recognized
/// `Mcp-Param-{Name}` header that contains invalid characters"; "servers MUST decode an
/// encoded `Mcp-Name` or `Mcp-Param-{Name}` value before comparing it to the corresponding
/// request body value". A header no tool recognizes is refused only when it cannot be
/// read at all (not visible ASCII, or a broken Base64 sentinel).
///
/// # Errors
/// `-32020` naming the header.
fn param_headers(headers: &HeaderMap) -> Result<Vec<(String, String)>, ErrorObject> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let Some(suffix) = name.as_str().strip_prefix(MCP_PARAM_PREFIX) else {
            continue;
        };
        let shown = format!("Mcp-Param-{suffix}");
        let value = value.to_str().map_err(|_| {
            modern::header_mismatch(format!("the {shown} header contains invalid characters"))
        })?;
        let decoded = decode(value.trim(), &shown)?;
        out.push((suffix.to_owned(), decoded.into_owned()));
    }
    Ok(out)
}

/// The value of a required header.
fn required<'a>(
    headers: &'a HeaderMap,
    name: &HeaderName,
    shown: &str,
) -> Result<&'a str, ErrorObject> {
    match headers.get(name) {
        None => Err(modern::header_mismatch(format!(
            "the {shown} header is required"
        ))),
        Some(v) => v.to_str().map_err(|_| {
            modern::header_mismatch(format!("the {shown} header contains invalid characters"))
        }),
    }
}

/// A header value (of the header `shown`), Base64-decoded when it has the sentinel form
/// (else borrowed as it is: a value without both markers is literal). The Base64 is the
/// standard alphabet with its `=` padding (RFC 4648, section 4): a value with broken
/// padding or a character outside the alphabet is refused.
fn decode<'a>(value: &'a str, shown: &str) -> Result<Cow<'a, str>, ErrorObject> {
    let Some(inner) = value
        .strip_prefix(B64_PREFIX)
        .and_then(|v| v.strip_suffix(B64_SUFFIX))
    else {
        return Ok(Cow::Borrowed(value));
    };
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(inner)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Cow::Owned)
        .ok_or_else(|| modern::header_mismatch(format!("{shown} has an invalid Base64 value")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_base64_sentinel_of_the_spec_examples() {
        for (header, value) in [
            ("us-west1", "us-west1"),
            ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
            ("=?base64?IHBhZGRlZCA=?=", " padded "),
            ("=?base64?bGluZTEKbGluZTI=?=", "line1\nline2"),
            ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
        ] {
            assert_eq!(decode(header, "Mcp-Name").unwrap(), value, "{header}");
        }
        // Not base64; not UTF-8; broken padding.
        for header in ["=?base64?!!!?=", "=?base64?/w==?=", "=?base64?SGVsbG8?="] {
            assert_eq!(
                decode(header, "Mcp-Name").unwrap_err().code,
                -32020,
                "{header}"
            );
        }
        // Without both markers a value is literal.
        for header in ["SGVsbG8=", "=?base64?SGVsbG8="] {
            assert_eq!(decode(header, "Mcp-Name").unwrap(), header);
        }
    }

    fn request(method: &str, mut params: Value) -> Request {
        params["_meta"] = serde_json::json!({PROTOCOL_VERSION_META: "2026-07-28"});
        Request {
            id: mcp_tasks_proto::RequestId::Number(1),
            method: method.to_owned(),
            params: Some(params),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    /// FastMCP 4.1.4 sends the tasks methods without `Mcp-Name`: accepted there; a value
    /// that is sent must match, and `tools/call` still needs it.
    #[test]
    fn a_missing_mcp_name_is_accepted_only_on_the_tasks_methods() {
        let base = [(MCP_PROTOCOL_VERSION, "2026-07-28")];
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let req = request(method, serde_json::json!({"taskId": "t-1"}));
            let mut h = headers(&base);
            h.insert(MCP_METHOD, method.parse().unwrap());
            assert!(check_headers(&h, &req).is_ok(), "{method} without Mcp-Name");
            h.insert(MCP_NAME, "t-2".parse().unwrap());
            let e = check_headers(&h, &req).unwrap_err();
            assert_eq!(e.code, -32020, "{method} with a foreign Mcp-Name");
            h.insert(MCP_NAME, "t-1".parse().unwrap());
            assert!(check_headers(&h, &req).is_ok(), "{method} with Mcp-Name");
        }
        let req = request("tools/call", serde_json::json!({"name": "echo"}));
        let mut h = headers(&base);
        h.insert(MCP_METHOD, "tools/call".parse().unwrap());
        let e = check_headers(&h, &req).unwrap_err();
        assert_eq!(e.code, -32020);
        assert!(e.message.contains("Mcp-Name"), "{}", e.message);
    }

    /// Every `Mcp-Param-*` header is decoded under its lowercased name; an unreadable one
    /// is -32020.
    #[test]
    fn param_headers_are_decoded_and_a_broken_one_is_refused() {
        let h = headers(&[
            ("Mcp-Param-Region", " us-west1 "),
            ("mcp-param-greeting", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            ("Mcp-Name", "echo"),
        ]);
        let mut got = param_headers(&h).unwrap();
        got.sort();
        assert_eq!(
            got,
            [
                ("greeting".to_owned(), "Hello, 世界".to_owned()),
                ("region".to_owned(), "us-west1".to_owned())
            ]
        );
        let e =
            param_headers(&headers(&[("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=")])).unwrap_err();
        assert_eq!(e.code, -32020);
        assert!(e.message.contains("Mcp-Param-region"), "{}", e.message);
    }

    #[test]
    fn modern_errors_map_to_their_statuses() {
        assert_eq!(status_of(-32020), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(-32021), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(-32022), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(-32601), StatusCode::NOT_FOUND);
        assert_eq!(status_of(-32602), StatusCode::OK);
    }
}
