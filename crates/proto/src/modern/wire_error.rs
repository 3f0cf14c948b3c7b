//! Errors as a 2026-07-28 answer may carry them: the codes that era reserves are used only
//! as it defines them.
//!
//! Spec (basic, "Error Codes"): "`-32020` to `-32099` — reserved for the MCP
//! specification. [...] Implementations MUST NOT emit any code from this sub-range that is
//! not defined by this specification and MUST use defined codes only with their specified
//! meanings"; "`-32000` to `-32019` — legacy. [...] new implementations SHOULD NOT use
//! codes from this sub-range at all"; "Implementations of this protocol version MUST NOT
//! emit these codes: `-32002` [...] `-32042`". And: "New error codes for purposes not
//! defined by this specification SHOULD be allocated outside the JSON-RPC reserved range
//! (`-32768` to `-32000`)".
//!
//! So an error of ours from the implementation-defined range (a rate limit, -32029; a task
//! quota, -32003) and one a tool raised with such a code go out as -32603 (Internal error),
//! the original code in `data.originalCode` beside the original `data` fields: a rate
//! limit keeps `data.limit` and `data.retryAfterMs` (over HTTP it is still status 429
//! with `Retry-After`). A defined code goes out only when it has the `data` its schema
//! requires.

use serde_json::{Map, Value, json};

use super::{MissingCapabilityData, UnsupportedVersionData};
use crate::{ErrorObject, codes};

/// The key of `data` that keeps the code an error was rewritten from.
pub const ORIGINAL_CODE: &str = "originalCode";

/// `e` as a 2026-07-28 answer may carry it: unchanged when its code is outside the
/// server-error range, or -32021/-32022 with the `data` their schema requires; else
/// [`rewritten`]. A -32020 (`HeaderMismatch`) is rewritten too, unless its
/// `data.header` names an `Mcp-Param-{Name}` header ([`super::param_header_mismatch`]:
/// the server's check of those against the tool's arguments, which needs the tool): the
/// transport answers every other mismatch before any handler runs.
pub fn valid_error(e: ErrorObject) -> ErrorObject {
    let keep = match e.code {
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY => e
            .data
            .clone()
            .and_then(|d| serde_json::from_value::<MissingCapabilityData>(d).ok())
            .is_some(),
        codes::UNSUPPORTED_PROTOCOL_VERSION => e
            .data
            .clone()
            .and_then(|d| serde_json::from_value::<UnsupportedVersionData>(d).ok())
            .is_some(),
        codes::HEADER_MISMATCH => e
            .data
            .as_ref()
            .and_then(|d| d.get(super::MISMATCHED_HEADER))
            .and_then(Value::as_str)
            .is_some_and(|h| {
                h.get(..10)
                    .is_some_and(|p| p.eq_ignore_ascii_case("mcp-param-"))
            }),
        -32099..=-32000 => false,
        _ => true,
    };
    if keep { e } else { rewritten(e) }
}

/// `e` as -32603 (Internal error) with its message, its code in `data.originalCode` and
/// the fields of its `data` (an object's fields, any other value under `data.data`).
pub fn rewritten(e: ErrorObject) -> ErrorObject {
    let mut data = Map::new();
    match e.data {
        Some(Value::Object(fields)) => data = fields,
        Some(other) => {
            data.insert("data".to_owned(), other);
        }
        None => {}
    }
    data.insert(ORIGINAL_CODE.to_owned(), json!(e.code));
    ErrorObject::new(codes::INTERNAL_ERROR, e.message).with_data(Value::Object(data))
}

/// Whether `e` is a rate-limit refusal (-32029, or one [`rewritten`] from it): over HTTP,
/// status 429 with `Retry-After`.
pub fn is_rate_limited(e: &ErrorObject) -> bool {
    e.code == codes::RATE_LIMITED
        || (e.code == codes::INTERNAL_ERROR
            && e.data
                .as_ref()
                .and_then(|d| d.get(ORIGINAL_CODE))
                .and_then(Value::as_i64)
                == Some(codes::RATE_LIMITED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modern::{
        header_mismatch, missing_tasks_extension, param_header_mismatch, unsupported_version,
    };

    /// Our own implementation-defined codes and a tool's reserved ones become -32603 with
    /// the original code and data kept; the defined codes pass with their data, and are
    /// rewritten without it; standard codes pass unchanged.
    #[test]
    fn only_defined_codes_with_their_data_leave_the_reserved_range() {
        let limited = ErrorObject::new(codes::RATE_LIMITED, "Rate limited")
            .with_data(json!({"limit": "requests", "retryAfterMs": 1500}));
        let r = valid_error(limited);
        assert_eq!(r.code, -32603);
        assert_eq!(r.message, "Rate limited");
        assert_eq!(
            r.data,
            Some(json!({"limit": "requests", "retryAfterMs": 1500, "originalCode": -32029}))
        );
        assert!(is_rate_limited(&r));
        for code in [-32003, -32002, -32042, -32001, -32000, -32099, -32020] {
            let r = valid_error(ErrorObject::new(code, "m"));
            assert_eq!(r.code, -32603, "{code}");
            assert_eq!(r.data, Some(json!({"originalCode": code})), "{code}");
            assert!(!is_rate_limited(&r));
        }
        let odd = valid_error(ErrorObject::new(-32050, "m").with_data(json!([1])));
        assert_eq!(odd.data, Some(json!({"originalCode": -32050, "data": [1]})));
        // Defined codes with their data pass; without it they are rewritten.
        let missing = missing_tasks_extension("x");
        assert_eq!(valid_error(missing.clone()), missing);
        let version = unsupported_version("1999-01-01", &["2026-07-28"]);
        assert_eq!(valid_error(version.clone()), version);
        // A -32020 passes only naming an `Mcp-Param-*` header (the server's own check).
        let param = param_header_mismatch("Mcp-Param-Region", "x");
        assert_eq!(valid_error(param.clone()), param);
        let other = header_mismatch("x").with_data(json!({"header": "Mcp-Name"}));
        assert_eq!(valid_error(other).code, -32603);
        for code in [-32021, -32022] {
            let bare = valid_error(ErrorObject::new(code, "from a tool"));
            assert_eq!(bare.code, -32603, "{code}");
            let wrong = valid_error(ErrorObject::new(code, "t").with_data(json!({"x": 1})));
            assert_eq!(wrong.code, -32603, "{code}");
        }
        // Standard and application codes pass unchanged.
        for code in [-32700, -32600, -32601, -32602, -32603, -31000, 1, 0] {
            let e = ErrorObject::new(code, "m");
            assert_eq!(valid_error(e.clone()), e, "{code}");
        }
    }
}
