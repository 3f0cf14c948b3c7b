//! Opaque, tamper-evident `tasks/list` cursors.
//!
//! A cursor is `base64url(seq || HMAC-SHA256(key, seq || scope)[..16])`: it names the
//! position after which the next page starts and the scope it was issued for. A cursor
//! that was altered, or issued to another requester, fails verification (-32602).
//! Spec: "Requestors MUST treat cursors as opaque tokens".

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::store::ListScope;

const TAG_LEN: usize = 16;

/// Signs and verifies cursors with the store's key.
#[derive(Clone)]
pub struct CursorCodec {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec(..)")
    }
}

impl CursorCodec {
    /// A codec with this key.
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn tag(&self, seq: i64, scope: &ListScope) -> [u8; TAG_LEN] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(&seq.to_be_bytes());
        match scope {
            ListScope::All => mac.update(b"\x00all"),
            ListScope::Owner(o) => {
                mac.update(b"\x01");
                mac.update(o.as_bytes());
            }
        }
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(&full[..TAG_LEN]);
        out
    }

    /// The cursor for the page after `seq`.
    pub fn encode(&self, seq: i64, scope: &ListScope) -> String {
        let mut buf = Vec::with_capacity(8 + TAG_LEN);
        buf.extend_from_slice(&seq.to_be_bytes());
        buf.extend_from_slice(&self.tag(seq, scope));
        URL_SAFE_NO_PAD.encode(buf)
    }

    /// The position a cursor names, if it is genuine and was issued for `scope`.
    pub fn decode(&self, cursor: &str, scope: &ListScope) -> Option<i64> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        if bytes.len() != 8 + TAG_LEN {
            return None;
        }
        let seq = i64::from_be_bytes(bytes[..8].try_into().ok()?);
        let expected = self.tag(seq, scope);
        // Constant-time comparison.
        let diff = expected
            .iter()
            .zip(&bytes[8..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (diff == 0).then_some(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_tampering_and_foreign_scopes() {
        let c = CursorCodec::new([7; 32]);
        let me = ListScope::Owner("alice".into());
        let cur = c.encode(42, &me);
        assert_eq!(c.decode(&cur, &me), Some(42));
        assert_eq!(c.decode(&cur, &ListScope::Owner("bob".into())), None);
        assert_eq!(c.decode(&cur, &ListScope::All), None);
        let mut b = cur.into_bytes();
        b[2] = if b[2] == b'A' { b'B' } else { b'A' };
        assert_eq!(c.decode(std::str::from_utf8(&b).unwrap(), &me), None);
        assert_eq!(c.decode("garbage!", &me), None);
        assert_eq!(
            CursorCodec::new([8; 32]).decode(&c.encode(1, &me), &me),
            None
        );
    }
}
