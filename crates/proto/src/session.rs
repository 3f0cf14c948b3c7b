//! A session shared between the replicas of a Streamable HTTP server: the record its
//! session directory keeps from the session's `initialize` to its end.

use serde_json::Value;

/// A session as every replica sees it. `S` is the handler's state: JSON for the
/// transport (the default), its bytes for a store that keeps it as text. Its `Debug`
/// names the session by a digest of its id ([`crate::logged::digest`]): the id is the
/// session's credential and reaches no log line.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedSession<S = Value> {
    /// The session id (`Mcp-Session-Id`).
    pub id: String,
    /// The principal it belongs to (`None` without authentication).
    pub principal: Option<String>,
    /// Whose sessions it counts with against the per-principal bound.
    pub owner: String,
    /// The handler's state.
    pub state: S,
    /// When it expires unless used (milliseconds since the Unix epoch).
    pub expires_ms: i64,
}

impl<S: std::fmt::Debug> std::fmt::Debug for SharedSession<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSession")
            .field("id_digest", &crate::logged::digest(&self.id))
            .field("principal", &self.principal)
            .field("owner", &self.owner)
            .field("state", &self.state)
            .field("expires_ms", &self.expires_ms)
            .finish()
    }
}

impl<S> SharedSession<S> {
    /// A session record.
    pub fn new(
        id: String,
        principal: Option<String>,
        owner: String,
        state: S,
        expires_ms: i64,
    ) -> Self {
        Self {
            id,
            principal,
            owner,
            state,
            expires_ms,
        }
    }

    /// The same session with its state as `state` (e.g. its bytes decoded).
    pub fn with_state<T>(self, state: T) -> SharedSession<T> {
        SharedSession {
            id: self.id,
            principal: self.principal,
            owner: self.owner,
            state,
            expires_ms: self.expires_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_the_session_by_a_digest_of_its_id() {
        let s = SharedSession::new("sess-secret-42".into(), None, "o".into(), Value::Null, 1);
        let shown = format!("{s:?}");
        assert!(!shown.contains("sess-secret-42"), "{shown}");
        assert!(
            shown.contains(&crate::logged::digest("sess-secret-42")),
            "{shown}"
        );
    }
}
