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
            assert_eq!(again, msg, "a message changed in a round trip");
        }
        Err(failure) => {
            // The refusal is itself a valid message.
            let reply = failure.into_response();
            Message::parse(reply.to_json().as_bytes()).expect("the error reply parses");
        }
    }
}
