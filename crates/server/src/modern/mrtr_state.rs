//! The `requestState` of a direct 2026-07-28 call that asked the client something: what
//! any replica needs to go on with the call, bound by a keyed hash.
//!
//! `requestState` = `1.` base64url(JSON payload) `.` base64url(HMAC-SHA256(key, `1.` +
//! the payload's base64url)). The payload names the parked call (its handle, for the
//! replica that still holds it), binds the state to the caller, the tool and its
//! arguments (a SHA-256 digest), carries an expiry, the answers collected so far (by
//! question number, with the method each answered) and the questions now asked (number and
//! method). The key is derived from the store's key (`TaskStore::cursor_key`, shared by
//! every replica on one database), so a state issued by one replica verifies on all of
//! them; without a task store it is random per process.
//!
//! Spec (MRTR): "servers MUST treat `requestState` as an attacker-controlled input. If
//! `requestState` influences authorization, resource access, or business logic, servers
//! MUST protect its integrity (e.g. HMAC or AEAD) and MUST reject state that fails
//! verification." and "servers SHOULD include the following inside the
//! integrity-protected `requestState` payload and verify each on receipt: the
//! authenticated principal ...; a short expiry (TTL) ...; an identifier for the
//! originating request, e.g. the method name and a digest of its salient parameters".

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use mcp_tasks_proto::ErrorObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The longest `requestState` issued or accepted (bytes): it carries every answer the call
/// has been given, and travels with each retry. A call whose answers outgrow it fails
/// with -32602 naming the size; a longer state presented is refused before decoding.
pub const MAX_REQUEST_STATE_BYTES: usize = 64 * 1024;

/// The format version, first in the state and under the hash.
const VERSION: &str = "1";

/// What the key of the states is derived from the store's key with.
const PURPOSE: &[u8] = b"mcp-tasks 2026-07-28 requestState v1";

/// An answer the handler was given: the question's method and the client's response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Recorded {
    #[serde(rename = "m")]
    pub method: String,
    #[serde(rename = "r")]
    pub response: Value,
}

/// The payload of a state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    /// The parked call's handle on the replica that issued the state.
    #[serde(rename = "h")]
    pub handle: String,
    /// [`binding`] of the call.
    #[serde(rename = "b")]
    pub binding: String,
    /// Milliseconds since the epoch after which the state is not honoured.
    #[serde(rename = "e")]
    pub expires_ms: i64,
    /// The answers given so far, by question number.
    #[serde(rename = "a")]
    pub answers: BTreeMap<u64, Recorded>,
    /// The questions now waiting for answers: number -> method.
    #[serde(rename = "q")]
    pub asked: BTreeMap<u64, String>,
    /// The keys the handler named its waiting questions by (the others are `q<n>`).
    #[serde(rename = "k", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub keys: BTreeMap<u64, String>,
}

/// The key that signs states, from the store's key.
pub(crate) fn derive_key(store_key: &[u8; 32]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(store_key).expect("any key length");
    mac.update(PURPOSE);
    mac.finalize().into_bytes().into()
}

/// A random key (a server without a task store: states verify in this process only).
pub(crate) fn random_key() -> [u8; 32] {
    let mut k = [0u8; 32];
    if getrandom::fill(&mut k).is_err() {
        // Without the OS generator, fall back to the 122 random bits of two task ids.
        let seed = format!(
            "{}{}",
            mcp_tasks_core::engine::new_task_id(),
            mcp_tasks_core::engine::new_task_id()
        );
        k = Sha256::digest(seed.as_bytes()).into();
    }
    k
}

/// What a state is bound to: the caller's principal, the tool and its arguments (their
/// canonical JSON, object keys sorted), as a SHA-256 digest; and the size of that
/// canonical JSON of the arguments (bytes), what a parked call counts for them.
pub(crate) fn binding(principal: Option<&str>, tool: &str, args: &Value) -> (String, usize) {
    let mut h = Sha256::new();
    match principal {
        Some(p) => {
            h.update(b"\x01");
            h.update(p.len().to_be_bytes());
            h.update(p.as_bytes());
        }
        None => h.update(b"\x00"),
    }
    h.update(tool.len().to_be_bytes());
    h.update(tool.as_bytes());
    let mut canon = Vec::new();
    canonical(args, &mut canon);
    h.update(&canon);
    (URL_SAFE_NO_PAD.encode(h.finalize()), canon.len())
}

fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(v, out);
            }
            out.push(b']');
        }
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

fn tag(key: &[u8; 32], signed: &str) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    mac.update(signed.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `now` + `ttl`, in milliseconds since the epoch.
pub(crate) fn expiry(ttl: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// The signed text of `state`.
///
/// # Errors
/// -32602 when it is over `max` bytes (the answers collected so far are too large).
pub(crate) fn encode(key: &[u8; 32], state: &State, max: usize) -> Result<String, ErrorObject> {
    let json = serde_json::to_vec(state).map_err(ErrorObject::internal)?;
    let signed = format!("{VERSION}.{}", URL_SAFE_NO_PAD.encode(json));
    let text = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag(key, &signed)));
    if text.len() > max {
        return Err(ErrorObject::invalid_params(format!(
            "the answers given so far make a requestState of {} bytes, over the {max}-byte bound; \
             the call cannot go on (answer with less data)",
            text.len()
        )));
    }
    Ok(text)
}

/// The state `text` carries, if this server (or a replica sharing its store) issued it
/// unaltered.
///
/// # Errors
/// -32602 when it is over `max` bytes, malformed, or fails verification.
pub(crate) fn decode(key: &[u8; 32], text: &str, max: usize) -> Result<State, ErrorObject> {
    if text.len() > max {
        return Err(ErrorObject::invalid_params(format!(
            "requestState is {} bytes, over the {max}-byte bound",
            text.len()
        )));
    }
    let failed = || {
        ErrorObject::invalid_params(
            "requestState failed verification: it was altered, or not issued by this server",
        )
    };
    let (signed, mac) = text.rsplit_once('.').ok_or_else(failed)?;
    let (version, payload) = signed.split_once('.').ok_or_else(failed)?;
    let mac = URL_SAFE_NO_PAD.decode(mac).map_err(|_| failed())?;
    let expected = tag(key, signed);
    // Constant-time comparison.
    let same = mac.len() == expected.len()
        && mac
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same || version != VERSION {
        return Err(failed());
    }
    let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| failed())?;
    serde_json::from_slice(&json).map_err(|_| failed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> State {
        State {
            handle: "h".into(),
            binding: binding(Some("alice"), "ask", &json!({"b": 1, "a": [2]})).0,
            expires_ms: 5,
            answers: BTreeMap::from([(
                1,
                Recorded {
                    method: "elicitation/create".into(),
                    response: json!({"action": "accept", "content": {"name": "Ada"}}),
                },
            )]),
            asked: BTreeMap::from([(2, "sampling/createMessage".into())]),
            keys: BTreeMap::new(),
        }
    }

    #[test]
    fn a_state_round_trips_and_any_change_fails_verification() {
        let key = derive_key(&[7; 32]);
        let text = encode(&key, &sample(), MAX_REQUEST_STATE_BYTES).unwrap();
        let back = decode(&key, &text, MAX_REQUEST_STATE_BYTES).unwrap();
        assert_eq!(back.answers, sample().answers);
        assert_eq!(back.asked, sample().asked);
        // Another key (another store) does not verify it.
        let other = derive_key(&[8; 32]);
        assert!(decode(&other, &text, MAX_REQUEST_STATE_BYTES).is_err());
        // An altered payload (an answer changed, re-encoded) fails verification.
        let (signed, mac) = text.rsplit_once('.').unwrap();
        let mut forged = sample();
        forged.answers.get_mut(&1).unwrap().response =
            json!({"action": "accept", "content": {"name": "Eve"}});
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        let e = decode(&key, &format!("1.{payload}.{mac}"), MAX_REQUEST_STATE_BYTES).unwrap_err();
        assert!(e.message.contains("failed verification"), "{e:?}");
        assert!(decode(&key, &format!("{signed}.AAAA"), MAX_REQUEST_STATE_BYTES).is_err());
        assert!(decode(&key, "junk", MAX_REQUEST_STATE_BYTES).is_err());
    }

    #[test]
    fn the_binding_ignores_key_order_but_not_values_caller_or_tool() {
        let b = binding(Some("a"), "t", &json!({"x": 1, "y": {"p": 1, "q": 2}}));
        // The size of the arguments' canonical JSON comes with it.
        assert_eq!(b.1, r#"{"x":1,"y":{"p":1,"q":2}}"#.len());
        assert_eq!(
            b,
            binding(Some("a"), "t", &json!({"y": {"q": 2, "p": 1}, "x": 1}))
        );
        assert_ne!(
            b,
            binding(Some("a"), "t", &json!({"x": 2, "y": {"p": 1, "q": 2}}))
        );
        assert_ne!(
            b,
            binding(None, "t", &json!({"x": 1, "y": {"p": 1, "q": 2}}))
        );
        assert_ne!(
            b,
            binding(Some("a"), "u", &json!({"x": 1, "y": {"p": 1, "q": 2}}))
        );
    }

    #[test]
    fn states_over_the_bound_are_refused_both_ways() {
        let key = derive_key(&[7; 32]);
        let text = encode(&key, &sample(), MAX_REQUEST_STATE_BYTES).unwrap();
        let e = encode(&key, &sample(), text.len() - 1).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(
            e.message.contains(&format!("{} bytes", text.len())),
            "{e:?}"
        );
        let e = decode(&key, &text, text.len() - 1).unwrap_err();
        assert!(e.message.contains("over the"), "{e:?}");
    }
}
