//! Entry point of the cursor fuzz target (`fuzz/`, cargo-afl) and of the corpus replay
//! test: not an API. Takes arbitrary bytes, must never panic.

use crate::cursor::CursorCodec;
use crate::store::ListScope;

/// The `tasks/list` cursor: arbitrary text is either refused or names a position that
/// re-encodes to the very same cursor (nothing but a cursor this codec issued is
/// accepted), and is never accepted for another scope.
pub fn cursor(bytes: &[u8]) {
    let codec = CursorCodec::new([7; 32]);
    let alice = ListScope::Owner("alice".into());
    let text = String::from_utf8_lossy(bytes);
    for scope in [&ListScope::All, &alice] {
        if let Some(seq) = codec.decode(&text, scope) {
            assert_eq!(
                codec.encode(seq, scope),
                text,
                "a cursor not issued was accepted"
            );
            let other = if matches!(scope, ListScope::All) {
                &alice
            } else {
                &ListScope::All
            };
            assert_eq!(codec.decode(&text, other), None, "a cursor crossed scopes");
        }
    }
    // The position of the first 8 bytes survives a round trip in either scope.
    if let Some(head) = bytes.get(..8) {
        let seq = i64::from_be_bytes(head.try_into().expect("8 bytes"));
        for scope in [&ListScope::All, &alice] {
            assert_eq!(codec.decode(&codec.encode(seq, scope), scope), Some(seq));
        }
    }
}
