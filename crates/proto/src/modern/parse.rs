//! One pass over a well-formed 2026-07-28 request: the JSON-RPC envelope and the modern
//! `_meta` fields read straight into their types, not into a `Value` tree first.
//!
//! Every modern request carries its protocol version, client capabilities and client
//! information in `_meta`; read as a `Value` and then checked ([`super::request_revision`]),
//! that `_meta` made a `tasks/get` cost more than its 2025-11-25 twin
//! (docs/performance.md). [`parse_request`] reads only what is well-formed: anything
//! else (a malformed envelope, a version we do not serve, a `_meta` field of the wrong
//! type, a duplicate key) gives `None`, and the caller parses the body the general way
//! ([`crate::Message::parse`], [`super::take_request_revision`]), which answers it with its
//! precise error. So this path decides nothing the general one would decide otherwise
//! (test `a_fast_parse_is_the_general_one`).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{
    CLIENT_CAPABILITIES_META, CLIENT_INFO_META, ClientCapabilities, Implementation, LOG_LEVEL_META,
    PROTOCOL_VERSION_META, RequestMeta, stateless_revision,
};
use crate::{Request, RequestId};

/// The request in `body` and its checked modern `_meta`, when `body` is one well-formed
/// modern request; `None` for anything else (parse it the general way). The params keep
/// `_meta` with the protocol version and every field that is not one of the checked ones
/// (as [`super::take_request_revision`] leaves them).
pub fn parse_request(body: &[u8]) -> Option<(Request, RequestMeta)> {
    let env: Envelope = serde_json::from_slice(body).ok()?;
    if env.jsonrpc != "2.0" {
        return None;
    }
    let Params { mut rest, meta } = env.params?;
    let meta = meta?;
    let version = meta.protocol_version?;
    let revision = stateless_revision(&version)?;
    let client_capabilities = ClientCapabilities(meta.client_capabilities?);
    let mut kept = meta.others;
    kept.insert(
        PROTOCOL_VERSION_META.to_owned(),
        Value::String(version.clone()),
    );
    rest.insert("_meta".to_owned(), Value::Object(kept));
    let log_level = match meta.log_level {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Some((
        Request {
            id: env.id.0,
            method: env.method,
            params: Some(Value::Object(rest)),
        },
        RequestMeta {
            revision,
            client_capabilities,
            client_info: meta.client_info.and_then(Implementation::from_value),
            log_level,
            param_headers: None,
        },
    ))
}

/// The envelope of a request; any other member is ignored, as the general parse does (a
/// message with a `method` is a request).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Id,
    method: String,
    params: Option<Params>,
}

/// A request id: a string or an integer (not null, not a float).
struct Id(RequestId);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Id, E> {
                Ok(Id(RequestId::Number(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Id, E> {
                i64::try_from(n)
                    .map(|n| Id(RequestId::Number(n)))
                    .map_err(|_| E::custom("id out of range"))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Id, E> {
                Ok(Id(RequestId::String(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Id, E> {
                Ok(Id(RequestId::String(s)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The params: `_meta` read by field, every other member kept as a value.
struct Params {
    rest: Map<String, Value>,
    meta: Option<Meta>,
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}

impl FromObject for Params {
    fn from_object<'de, A: MapAccess<'de>>(mut m: A) -> Result<Self, A::Error> {
        let mut rest = Map::new();
        let mut meta = None;
        while let Some(Key(key)) = m.next_key()? {
            if key == "_meta" {
                if meta.is_some() {
                    return Err(de::Error::custom("duplicate `_meta`"));
                }
                meta = Some(m.next_value::<Meta>()?);
            } else if rest.insert(key.into_owned(), m.next_value()?).is_some() {
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(Params { rest, meta })
    }
}

/// A modern `_meta`: the checked fields typed, every other one kept as a value.
struct Meta {
    protocol_version: Option<String>,
    client_capabilities: Option<Map<String, Value>>,
    client_info: Option<Value>,
    log_level: Option<Value>,
    others: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}

impl FromObject for Meta {
    fn from_object<'de, A: MapAccess<'de>>(mut m: A) -> Result<Self, A::Error> {
        let mut meta = Meta {
            protocol_version: None,
            client_capabilities: None,
            client_info: None,
            log_level: None,
            others: Map::new(),
        };
        while let Some(Key(key)) = m.next_key()? {
            let fresh = match key.as_ref() {
                PROTOCOL_VERSION_META => meta.protocol_version.replace(m.next_value()?).is_none(),
                CLIENT_CAPABILITIES_META => {
                    meta.client_capabilities.replace(m.next_value()?).is_none()
                }
                CLIENT_INFO_META => meta.client_info.replace(m.next_value()?).is_none(),
                LOG_LEVEL_META => meta.log_level.replace(m.next_value()?).is_none(),
                _ => meta
                    .others
                    .insert(key.into_owned(), m.next_value()?)
                    .is_none(),
            };
            if !fresh {
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(meta)
    }
}

/// What is read from a JSON object member by member ([`Params`], [`Meta`]).
trait FromObject: Sized {
    fn from_object<'de, A: MapAccess<'de>>(m: A) -> Result<Self, A::Error>;
}

/// Reads a JSON object into `T`, by [`FromObject`].
struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: FromObject> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<T, A::Error> {
        T::from_object(m)
    }
}

/// A member name, borrowed from the body when it has no escape (the names of the modern
/// `_meta` fields are compared, never kept).
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;
    use crate::modern::{MODERN_VERSIONS, take_request_revision};
    use serde_json::json;

    /// What the general path makes of `body`: the request and its checked `_meta`, or
    /// `None` when it is not a well-formed modern request.
    fn general(body: &str) -> Option<(Request, RequestMeta)> {
        let Ok(Message::Request(mut req)) = Message::parse(body.as_bytes()) else {
            return None;
        };
        match take_request_revision(req.params.as_mut(), MODERN_VERSIONS) {
            Ok(Some(meta)) => Some((req, meta)),
            _ => None,
        }
    }

    /// The fast parse gives what the general one gives for every well-formed modern
    /// request, and declines (`None`) everything the general one refuses or reads as
    /// something else, so that the general path answers it.
    #[test]
    fn a_fast_parse_is_the_general_one() {
        let meta = json!({
            PROTOCOL_VERSION_META: "2026-07-28",
            CLIENT_CAPABILITIES_META: {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            CLIENT_INFO_META: {"name": "c", "version": "1", "title": "C"},
        });
        let well_formed = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "t", "_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": "a\"b", "method": "tools/call", "params": {"name": "x", "arguments": {"a": [1, null]}, "_meta": {
                PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: {}, LOG_LEVEL_META: "info",
                "progressToken": 3, "traceparent": "00-x"}}}),
            json!({"jsonrpc": "2.0", "id": -5, "method": "m", "params": {"_meta": {
                PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: {},
                CLIENT_INFO_META: {"name": 1}, LOG_LEVEL_META: 7}}, "extra": true, "result": {}}),
        ];
        for body in well_formed {
            let text = body.to_string();
            let fast = parse_request(text.as_bytes());
            assert!(fast.is_some(), "{text}");
            assert_eq!(fast, general(&text), "{text}");
        }
        let declined = [
            // Not modern, or not well-formed: the general path answers.
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get"}"#.to_owned(),
            r#"{"jsonrpc":"1.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":null,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            "{not json".to_owned(),
            "[]".to_owned(),
        ];
        for text in declined {
            assert_eq!(parse_request(text.as_bytes()), None, "{text}");
        }
    }
}
