//! The JSON-RPC 2.0 envelope.
//!
//! Parsing classifies one incoming frame into a [`Message`] or a [`ParseFailure`] that
//! already carries the error to send back (-32700 for bad JSON, -32600 for anything that
//! is JSON but not a single JSON-RPC message, a batch array included: 2025-11-25 removed
//! batching). Params and results stay raw [`Value`]s: the envelope never drops a field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ErrorObject;

/// A request id: JSON-RPC allows strings and numbers (we accept integers).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

/// For log lines and error messages: a number as it is, a string quoted and, past
/// [`crate::logged::LOG_FIELD_MAX`] bytes, cut (a client chooses its ids, and the id of a
/// request is a field of every log line of it).
impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{:?}", crate::logged::capped(s)),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl RequestId {
    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::String(s) => Value::from(s.clone()),
        }
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Number),
            _ => None,
        }
    }
}

const JSONRPC: &str = "2.0";

/// A well-formed request as most frames are, read straight into its fields: the envelope
/// is not built as a `Value` map first (its keys allocated, then looked up and removed)
/// as [`Message::from_value`] does; on every request that cost about a twentieth of a
/// `tasks/get` (docs/performance.md, "The get, trimmed").
///
/// It takes only what [`Message::from_value`] would take as the same request: `jsonrpc`
/// exactly `"2.0"` (unescaped), an `id` that is a string or an integer, a `method`
/// string, `params` absent or an object or an array; unknown keys ignored as there. Any
/// other frame (a notification, a response, a repeated key, anything malformed) is `None`
/// and goes the general way, which says what is wrong with it (test
/// `requests_read_straight_are_what_the_general_way_reads`).
#[derive(Deserialize)]
struct InRequest<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: String,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
}

/// A key that is present is `Some`, `null` included (a plain `Option` reads `null` as
/// absent, and `from_value` refuses a `null` id or `params`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl InRequest<'_> {
    fn read(bytes: &[u8]) -> Option<Request> {
        let r: InRequest<'_> = serde_json::from_slice(bytes).ok()?;
        if r.jsonrpc != JSONRPC
            || r.params
                .as_ref()
                .is_some_and(|p| !p.is_object() && !p.is_array())
        {
            return None;
        }
        let id = match r.id? {
            Value::String(s) => RequestId::String(s),
            Value::Number(n) => RequestId::Number(n.as_i64()?),
            _ => return None,
        };
        Some(Request {
            id,
            method: r.method,
            params: r.params,
        })
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    id: &'a RequestId,
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct WireNotification<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct WireResponse<'a> {
    id: &'a RequestId,
    jsonrpc: &'static str,
    result: &'a Value,
}

#[derive(Serialize)]
struct WireError<'a> {
    error: WireErrorObject<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    jsonrpc: &'static str,
}

#[derive(Serialize)]
struct WireErrorObject<'a> {
    code: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    message: &'a str,
}

/// A request: expects a response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response must carry.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params, unchanged.
    pub params: Option<Value>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params, unchanged.
    pub params: Option<Value>,
}

/// A successful response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered.
    pub id: RequestId,
    /// The result, unchanged.
    pub result: Value,
}

/// An error response. `id` is `None` (JSON `null`) when the request's id could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request answered, if known.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// Why a frame is not a message, with the error response to send back.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseFailure {
    /// The id of the offending request if it could be read, else `None` (sent as `null`).
    pub id: Option<RequestId>,
    /// The error to send.
    pub error: ErrorObject,
}

impl ParseFailure {
    /// The error response to send back.
    pub fn into_response(self) -> Message {
        Message::Error(ErrorResponse {
            id: self.id,
            error: self.error,
        })
    }
}

impl Message {
    /// Parse one frame.
    ///
    /// # Errors
    /// A [`ParseFailure`] holding -32700 (not JSON) or -32600 (not one JSON-RPC message).
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseFailure> {
        if let Some(req) = InRequest::read(bytes) {
            return Ok(Self::Request(req));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| ParseFailure {
            id: None,
            error: ErrorObject::parse_error(e),
        })?;
        Self::from_value(value)
    }

    /// Classify an already-parsed JSON value.
    ///
    /// # Errors
    /// A [`ParseFailure`] holding -32600 when the value is not one JSON-RPC message.
    pub fn from_value(value: Value) -> Result<Self, ParseFailure> {
        let invalid = |id: Option<RequestId>, why: &str| ParseFailure {
            id,
            error: ErrorObject::invalid_request(why),
        };
        let mut obj = match value {
            Value::Object(o) => o,
            Value::Array(_) => {
                return Err(invalid(
                    None,
                    "batch arrays are not supported (MCP 2025-11-25 removed JSON-RPC batching)",
                ));
            }
            _ => return Err(invalid(None, "a JSON-RPC message must be a JSON object")),
        };
        let id_value = obj.remove("id");
        let id = match &id_value {
            None | Some(Value::Null) => None,
            Some(v) => match RequestId::from_value(v) {
                Some(id) => Some(id),
                None => return Err(invalid(None, "`id` must be a string or an integer")),
            },
        };
        match obj.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            _ => return Err(invalid(id, "`jsonrpc` must be \"2.0\"")),
        }
        let params = obj.remove("params");
        if let Some(p) = &params
            && !p.is_object()
            && !p.is_array()
        {
            return Err(invalid(id, "`params` must be an object or an array"));
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(invalid(id, "`method` must be a string"));
            };
            return Ok(match (id, id_value) {
                (Some(id), _) => Self::Request(Request { id, method, params }),
                (None, Some(Value::Null)) => {
                    return Err(invalid(None, "a request `id` must not be null"));
                }
                (None, _) => Self::Notification(Notification { method, params }),
            });
        }
        if let Some(result) = obj.remove("result") {
            let Some(id) = id else {
                return Err(invalid(None, "a response must carry the id of its request"));
            };
            return Ok(Self::Response(Response { id, result }));
        }
        if let Some(error) = obj.remove("error") {
            let error: ErrorObject = serde_json::from_value(error)
                .map_err(|e| invalid(id.clone(), &format!("malformed `error`: {e}")))?;
            return Ok(Self::Error(ErrorResponse { id, error }));
        }
        Err(invalid(
            id,
            "not a request, notification or response (no `method`, `result` or `error`)",
        ))
    }

    /// The message as a JSON value.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(4);
        m.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Self::Request(r) => {
                m.insert("id".into(), r.id.to_value());
                m.insert("method".into(), Value::from(r.method.clone()));
                if let Some(p) = &r.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Self::Notification(n) => {
                m.insert("method".into(), Value::from(n.method.clone()));
                if let Some(p) = &n.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Self::Response(r) => {
                m.insert("id".into(), r.id.to_value());
                m.insert("result".into(), r.result.clone());
            }
            Self::Error(e) => {
                // JSON-RPC 2.0 writes `"id": null` when the request's id could not be read;
                // the MCP 2025-11-25 schema makes `id` optional and non-nullable, and the
                // TypeScript SDK rejects a null id. We follow MCP: omit it (docs/adr/0001).
                if let Some(id) = &e.id {
                    m.insert("id".into(), id.to_value());
                }
                m.insert(
                    "error".into(),
                    serde_json::to_value(&e.error).unwrap_or(Value::Null),
                );
            }
        }
        Value::Object(m)
    }

    /// The message serialized as one line of JSON (no trailing newline).
    pub fn to_json(&self) -> String {
        // Written from borrowed fields: no intermediate tree is built (the params or result
        // of a response can be large). Keys in the order `to_value` gives them (sorted), so
        // both forms are the same bytes.
        let out = match self {
            Self::Request(r) => serde_json::to_string(&WireRequest {
                id: &r.id,
                jsonrpc: JSONRPC,
                method: &r.method,
                params: r.params.as_ref(),
            }),
            Self::Notification(n) => serde_json::to_string(&WireNotification {
                jsonrpc: JSONRPC,
                method: &n.method,
                params: n.params.as_ref(),
            }),
            Self::Response(r) => serde_json::to_string(&WireResponse {
                id: &r.id,
                jsonrpc: JSONRPC,
                result: &r.result,
            }),
            Self::Error(e) => serde_json::to_string(&WireError {
                error: WireErrorObject {
                    code: e.error.code,
                    data: e.error.data.as_ref(),
                    message: &e.error.message,
                },
                id: e.id.as_ref(),
                jsonrpc: JSONRPC,
            }),
        };
        // Serializing `Value`s and strings into a `String` cannot fail.
        out.unwrap_or_else(|_| self.to_value().to_string())
    }

    /// Shorthand for a request.
    pub fn request(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        Self::Request(Request {
            id,
            method: method.into(),
            params,
        })
    }

    /// Shorthand for a notification.
    pub fn notification(method: impl Into<String>, params: Option<Value>) -> Self {
        Self::Notification(Notification {
            method: method.into(),
            params,
        })
    }

    /// An error response without an id (the request's id could not be read).
    pub fn reply_null(error: ErrorObject) -> Self {
        Self::Error(ErrorResponse { id: None, error })
    }

    /// Shorthand for a response to `id`: `Ok` a result, `Err` an error.
    pub fn reply(id: RequestId, outcome: Result<Value, ErrorObject>) -> Self {
        match outcome {
            Ok(result) => Self::Response(Response { id, result }),
            Err(error) => Self::Error(ErrorResponse {
                id: Some(id),
                error,
            }),
        }
    }
}

/// The response to `id` with `result`, the JSON text of a result, as one line of JSON:
/// the bytes [`Message::to_json`] writes for the same response (keys in the same order),
/// without the result ever being a [`Value`] tree (a transport that answers at once
/// writes a handler's serialized result this way). `result` must be JSON text: it is
/// copied, not checked.
pub fn response_json(id: &RequestId, result: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(result.len() + 64);
    out.push_str("{\"id\":");
    match id {
        // Writing into a `String` cannot fail.
        RequestId::Number(n) => {
            let _ = write!(out, "{n}");
        }
        RequestId::String(s) => {
            out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "null".to_owned()));
        }
    }
    out.push_str(",\"jsonrpc\":\"2.0\",\"result\":");
    out.push_str(result);
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use serde_json::json;

    /// The requests read straight into their fields are what the general way reads, and
    /// every frame it does not take still gets the general way's answer.
    #[test]
    fn requests_read_straight_are_what_the_general_way_reads() {
        let general = |b: &str| -> Result<Message, ParseFailure> {
            let v: Value = serde_json::from_str(b).map_err(|e| ParseFailure {
                id: None,
                error: ErrorObject::parse_error(e),
            })?;
            Message::from_value(v)
        };
        let straight = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}"#,
            r#"{"method":"m","params":[1,"x"],"id":"s-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{},"extra":[1,{"a":null}]}"#,
            r#" { "jsonrpc" : "2.0" , "id" : "a\"b" , "method" : "m\u00e9" } "#,
        ];
        for b in straight {
            assert!(
                InRequest::read(b.as_bytes()).is_some(),
                "read straight: {b}"
            );
            assert_eq!(Message::parse(b.as_bytes()), general(b), "{b}");
        }
        let general_way = [
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"m"}"#,
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m""#,
            "not json",
        ];
        for b in general_way {
            assert!(InRequest::read(b.as_bytes()).is_none(), "general way: {b}");
            assert_eq!(Message::parse(b.as_bytes()), general(b), "{b}");
        }
    }

    fn code(bytes: &str) -> i64 {
        Message::parse(bytes.as_bytes()).unwrap_err().error.code
    }

    #[test]
    fn classifies_messages() {
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert_eq!(m, Message::request(RequestId::Number(1), "ping", None));
        let m = Message::parse(br#"{"jsonrpc":"2.0","method":"x","params":{"a":1}}"#).unwrap();
        assert_eq!(m, Message::notification("x", Some(json!({"a":1}))));
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(m, Message::Response(_)));
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}"#)
            .unwrap();
        assert!(matches!(m, Message::Error(ErrorResponse { id: None, .. })));
    }

    #[test]
    fn rejects_bad_frames_with_the_right_code() {
        assert_eq!(code("{not json"), codes::PARSE_ERROR);
        assert_eq!(code("[]"), codes::INVALID_REQUEST);
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(code("42"), codes::INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), codes::INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#),
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn keeps_the_id_of_an_invalid_request() {
        let f = Message::parse(br#"{"jsonrpc":"1.0","id":"q","method":"ping"}"#).unwrap_err();
        assert_eq!(f.id, Some(RequestId::String("q".into())));
    }

    #[test]
    fn round_trips_params_unchanged() {
        let text = r#"{"jsonrpc":"2.0","id":5,"method":"m","params":{"z":[1,{"x":null}],"_meta":{"k":"v"},"unknown":true}}"#;
        let m = Message::parse(text.as_bytes()).unwrap();
        let back: Value = serde_json::from_str(&m.to_json()).unwrap();
        let orig: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn to_json_writes_what_to_value_holds_byte_for_byte() {
        let big = json!({"content": [{"type": "text", "text": "a\"b\n\u{e9}"}], "_meta": {"z": 1, "a": [null, 1.5, -2]}});
        let err = ErrorObject::new(-32602, "Task not found").with_data(json!({"taskId": "x"}));
        for m in [
            Message::request(RequestId::Number(7), "tools/call", Some(big.clone())),
            Message::request(RequestId::String("s-1".into()), "ping", None),
            Message::notification("notifications/progress", Some(big.clone())),
            Message::notification("notifications/initialized", None),
            Message::reply(RequestId::Number(-3), Ok(big)),
            Message::reply(RequestId::String("r".into()), Err(err.clone())),
            Message::reply(RequestId::Number(1), Err(ErrorObject::new(-32603, "x"))),
            Message::reply_null(err),
        ] {
            assert_eq!(m.to_json(), m.to_value().to_string());
            assert_eq!(Message::parse(m.to_json().as_bytes()).unwrap(), m);
        }
    }

    /// A serialized result makes the same bytes as the response holding it as a `Value`.
    #[test]
    fn response_json_writes_what_to_json_writes() {
        let result = json!({"content": [{"type": "text", "text": "a\"b\n\u{e9}"}], "z": null});
        let text = result.to_string();
        for id in [
            RequestId::Number(-3),
            RequestId::String("r\"1\u{e9}".into()),
        ] {
            assert_eq!(
                response_json(&id, &text),
                Message::reply(id.clone(), Ok(result.clone())).to_json()
            );
        }
    }
}
