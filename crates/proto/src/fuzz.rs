//! Entry points of the fuzz targets (`fuzz/`, cargo-afl) and of the corpus replay test:
//! not an API. Each takes arbitrary bytes, must never panic, and checks what must hold
//! for any input.

use crate::jsonrpc::Message;

/// The JSON-RPC message decoder: a frame that parses re-encodes to a frame that parses
/// to the same message.
pub fn jsonrpc_decode(bytes: &[u8]) {
    match Message::parse(bytes) {
        Ok(msg) => {
            let again = Message::parse(msg.to_json().as_bytes())
                .unwrap_or_else(|e| panic!("{msg:?} re-encoded does not parse: {e:?}"));
            // The same kind, id and method (floats may move to a neighbouring value: serde_json
            // parses without `float_roundtrip`).
            let key = |m: &Message| match m {
                Message::Request(r) => (0, Some(r.id.clone()), Some(r.method.clone())),
                Message::Notification(n) => (1, None, Some(n.method.clone())),
                Message::Response(r) => (2, Some(r.id.clone()), None),
                Message::Error(e) => (3, e.id.clone(), Some(e.error.code.to_string())),
            };
            assert_eq!(key(&again), key(&msg), "a message changed in a round trip");
        }
        Err(failure) => {
            // The refusal is itself a valid message.
            let reply = failure.into_response();
            Message::parse(reply.to_json().as_bytes()).expect("the error reply parses");
        }
    }
}
