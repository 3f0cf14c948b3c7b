//! The responses the handlers build: JSON-RPC error bodies with their HTTP statuses, the
//! header names of the transport, and what the client's `Accept` header allows.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use mcp_tasks_proto::{ErrorObject, RequestId, codes};
use serde_json::json;

use serde_json::Value;

use crate::http::state::{Refused, Shared};
use mcp_tasks_proto::Message;

pub(super) const MCP_SESSION_ID: &str = "mcp-session-id";

pub(super) const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";

pub(super) const LAST_EVENT_ID: &str = "last-event-id";

pub(super) const EVENT_STREAM: &str = "text/event-stream";

pub(super) const JSON: &str = "application/json";

pub(super) fn header_str(h: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// A JSON-RPC error object as a message; without an id when the request's is unknown.
///
/// Spec: "The HTTP response body MAY comprise a JSON-RPC error response that has no `id`."
pub(super) fn error_body(id: Option<&RequestId>, error: &ErrorObject) -> String {
    let mut v = json!({ "jsonrpc": "2.0", "error": error });
    if let Some(id) = id {
        v["id"] = id.to_value();
    }
    v.to_string()
}

pub(super) fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

pub(super) fn http_error(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    json_response(status, error_body(None, &ErrorObject::new(code, message)))
}

/// 503 with `Retry-After: retry_after` (seconds): the JSON-RPC error
/// [`codes::INTERNAL_ERROR`] with `message`, answering `id` when known.
pub(super) fn unavailable(
    id: Option<&RequestId>,
    message: impl Into<String>,
    retry_after: &'static str,
) -> Response {
    let err = ErrorObject::new(codes::INTERNAL_ERROR, message);
    let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, error_body(id, &err));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(retry_after));
    r
}

/// 503 when the shared session store does not answer: worth a retry in a second.
pub(super) fn store_unavailable() -> Response {
    unavailable(
        None,
        "Service Unavailable: the session store does not answer; try again",
        "1",
    )
}

/// 404 for what this server does not serve (the metrics, the dashboard when off).
pub(super) fn not_served() -> Response {
    http_error(StatusCode::NOT_FOUND, codes::INVALID_REQUEST, "Not found")
}

pub(super) fn bad_request(message: impl Into<String>) -> Response {
    http_error(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
}

pub(super) fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

pub(super) fn text_response(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(super) async fn not_found(State(shared): State<Arc<Shared>>) -> Response {
    http_error(
        StatusCode::NOT_FOUND,
        codes::INVALID_REQUEST,
        format!("Not found: the MCP endpoint is {}", shared.config.path),
    )
}

pub(super) async fn method_not_allowed() -> Response {
    let mut r = http_error(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::INVALID_REQUEST,
        "Method not allowed: use POST, GET or DELETE",
    );
    r.headers_mut().insert(
        header::ALLOW,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    r
}

/// Which answer content types the client accepts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Accept {
    pub(super) json: bool,
    pub(super) sse: bool,
}

pub(super) fn accept(headers: &HeaderMap) -> Accept {
    let Some(v) = header_str(headers, header::ACCEPT) else {
        return Accept {
            json: true,
            sse: true,
        };
    };
    let mut a = Accept {
        json: false,
        sse: false,
    };
    // Compared in place, without a lowered copy of each item, and cut with a plain byte
    // search (`str::split`'s searcher costs more than these short headers): every POST
    // reads this.
    let mut rest = Some(v);
    while let Some(list) = rest {
        let (item, tail) = cut(list, b',');
        rest = tail;
        let (mt, mut params) = cut(item, b';');
        let mt = mt.trim();
        let mut refused = false;
        while let Some(ps) = params {
            let (p, tail) = cut(ps, b';');
            params = tail;
            refused |= refuses(p);
        }
        if refused {
            continue;
        }
        let is = |name: &str| mt.eq_ignore_ascii_case(name);
        if is("*/*") {
            a.json = true;
            a.sse = true;
        } else if is("application/*") || is(JSON) {
            a.json = true;
        } else if is("text/*") || is(EVENT_STREAM) {
            a.sse = true;
        }
    }
    a
}

/// `s` up to the first `sep` (an ASCII byte), and what follows it, if it occurs.
fn cut(s: &str, sep: u8) -> (&str, Option<&str>) {
    match s.bytes().position(|b| b == sep) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// Whether the media-range parameter `p` is a quality of zero (`q=0`, `q=0.0`, `q=0.00`
/// or `q=0.000`, spaces ignored): "not acceptable" (RFC 9110, 12.4.2).
fn refuses(p: &str) -> bool {
    let mut buf = [0_u8; 7];
    let mut n = 0;
    for b in p.trim().bytes().filter(|b| *b != b' ') {
        if n == buf.len() {
            return false;
        }
        buf[n] = b;
        n += 1;
    }
    matches!(&buf[..n], b"q=0" | b"q=0.0" | b"q=0.00" | b"q=0.000")
}

pub(super) fn not_acceptable(what: &str) -> Response {
    http_error(
        StatusCode::NOT_ACCEPTABLE,
        codes::INVALID_REQUEST,
        format!("Not Acceptable: the client must accept {what}"),
    )
}

/// One JSON-RPC answer as a JSON response: status 200, except a rate-limit refusal
/// ([`codes::RATE_LIMITED`], or in 2026-07-28 the -32603 rewritten from it), which is
/// status 429 with `Retry-After` (whole seconds,
/// rounded up, from `data.retryAfterMs`).
pub(super) fn json_message_response(m: Message) -> Response {
    match m {
        Message::Error(e) if mcp_tasks_proto::modern::is_rate_limited(&e.error) => {
            let retry_ms = e
                .error
                .data
                .as_ref()
                .and_then(|d| d.get("retryAfterMs"))
                .and_then(Value::as_u64)
                .unwrap_or(1000);
            let mut r = json_response(StatusCode::TOO_MANY_REQUESTS, Message::Error(e).to_json());
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_ms.div_ceil(1000).max(1)),
            );
            r
        }
        m => json_response(StatusCode::OK, m.to_json()),
    }
}

/// 503 for an `initialize` beyond the session bounds, every session being in use (or a
/// copy of another replica's session that this process has no room for).
pub(super) fn session_refused(id: Option<&RequestId>, why: &Refused) -> Response {
    let message = match why {
        Refused::Total(n) => format!(
            "Service Unavailable: the server holds its maximum of {n} sessions (--max-sessions), all in use; try again later"
        ),
        Refused::Owner(n) => format!(
            "Service Unavailable: this principal (or, without authentication, this client address) holds its maximum of {n} sessions (--max-sessions-per-principal), all in use; end one with DELETE or try again later"
        ),
    };
    unavailable(id, message, "5")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(v: &str) -> (bool, bool) {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, v.parse().unwrap());
        let a = accept(&h);
        (a.json, a.sse)
    }

    /// Media ranges in any case, wildcards, and a quality of zero (in its four spellings,
    /// spaces ignored) refusing its range; no header accepts both.
    #[test]
    fn accept_reads_ranges_and_zero_qualities() {
        assert!(accept(&HeaderMap::new()).json && accept(&HeaderMap::new()).sse);
        assert_eq!(of("application/json, text/event-stream"), (true, true));
        assert_eq!(of("Application/JSON"), (true, false));
        assert_eq!(of("TEXT/EVENT-STREAM;charset=utf-8"), (false, true));
        assert_eq!(of("*/*"), (true, true));
        assert_eq!(of("application/*, text/*"), (true, true));
        assert_eq!(of("text/html"), (false, false));
        for zero in ["q=0", "q=0.0", " q = 0.00 ", "q=0.000"] {
            assert_eq!(
                of(&format!("application/json;{zero}, text/event-stream")),
                (false, true),
                "{zero}"
            );
        }
        for not_zero in ["q=0.5", "q=0.0001", "q=1", "Q=0", "q=0."] {
            assert_eq!(
                of(&format!("application/json;{not_zero}")),
                (true, false),
                "{not_zero}"
            );
        }
    }
}
