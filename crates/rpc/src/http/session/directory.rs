//! Sessions shared between replicas: a [`SessionDirectory`] (a table in the task store's
//! database) that every replica of a server asks when a request names a session it does
//! not hold, so that any replica serves any request with no affinity at the load balancer.
//!
//! A session lives in the directory from its successful `initialize` to its end: a
//! `DELETE`, its idle expiry (`expires_ms`, pushed forward as the session is used), or
//! its replacement beyond the session bounds. A replica that meets an unknown session id
//! looks it up once and keeps a local copy (its handler rebuilt from the shared state:
//! negotiated version, client capabilities, principal); the directory tells every replica
//! when a session ends, and each ends its copy. Streams (SSE replay buffers, requests in
//! flight) stay on the replica that holds them.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

/// A session as every replica sees it; its `state` is the handler's
/// ([`crate::Handler::shared_state`]).
pub use mcp_tasks_proto::session::SharedSession;

/// Why [`SessionDirectory::relay`] did not pass a message on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayFailure {
    /// Over one of the directory's bounds (too large, or too much in flight): the client
    /// is told (HTTP 400 with a JSON-RPC error), since the message is otherwise lost.
    Refused(String),
    /// The directory failed (logged; the message is still applied locally).
    Failed(String),
}

/// What the directory tells the replicas about ended sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// This session ended (on any replica).
    Session(String),
    /// Ends may have been missed (the directory's connection was lost): check every local
    /// copy with [`SessionDirectory::existing`].
    Unknown,
    /// Another replica received `message` (a response, or `notifications/cancelled`) from
    /// the client of `session` and did not hold what it answers or cancels
    /// ([`SessionDirectory::relay`]).
    Relayed {
        /// The session whose client sent it.
        session: String,
        /// The JSON-RPC message.
        message: Value,
    },
}

/// Called with each [`Ended`].
pub type EndedCallback = Arc<dyn Fn(Ended) + Send + Sync>;

/// Where the sessions of every replica are kept. Errors are messages for logs and for
/// the client (they never carry a secret).
#[async_trait]
pub trait SessionDirectory: Send + Sync + 'static {
    /// Record the new session `s`. Beyond `per_owner` sessions of its owner, the owner's
    /// sessions closest to expiry end to make room (as a single server replaces its idlest
    /// session); their ids are returned.
    async fn insert(&self, s: &SharedSession, per_owner: usize) -> Result<Vec<String>, String>;

    /// The session `id`, if it exists and has not expired at `now_ms`.
    async fn find(&self, id: &str, now_ms: i64) -> Result<Option<SharedSession>, String>;

    /// The session `id` was used: it expires at `expires_at_ms` at the earliest. `false`
    /// when it no longer exists.
    async fn touch(&self, id: &str, expires_at_ms: i64) -> Result<bool, String>;

    /// End session `id` everywhere.
    async fn remove(&self, id: &str) -> Result<(), String>;

    /// End the sessions expired at `now_ms`; their ids.
    async fn sweep(&self, now_ms: i64) -> Result<Vec<String>, String>;

    /// Which of `ids` still exist.
    async fn existing(&self, ids: &[String]) -> Result<Vec<String>, String>;

    /// Call `f` for every session that ends from now on (on any replica), and for every
    /// message relayed by another replica.
    fn on_ended(&self, f: EndedCallback);

    /// Pass `message`, a response or a `notifications/cancelled` the client of `session`
    /// sent to this replica about a request this replica does not hold, to every replica
    /// (as [`Ended::Relayed`]): the one whose request it answers or cancels applies it.
    /// A directory without replicas does nothing.
    ///
    /// # Errors
    /// [`RelayFailure::Refused`] when the message is over a bound of the directory.
    async fn relay(&self, session: &str, message: &Value) -> Result<(), RelayFailure> {
        let _ = (session, message);
        Ok(())
    }

    /// The copy of `session` on this replica sends request `id` to the client: record it
    /// as pending until [`Self::request_done`] (bounded per session by the directory), so
    /// that the client's answer reaching another replica is relayed
    /// ([`Self::relay_answer`]). Awaited before the request goes out.
    async fn request_sent(&self, session: &str, id: i64) -> Result<(), String> {
        let _ = (session, id);
        Ok(())
    }

    /// Request `id` of `session` is no longer pending: answered on this replica, or
    /// cancelled.
    async fn request_done(&self, session: &str, id: i64) -> Result<(), String> {
        let _ = (session, id);
        Ok(())
    }

    /// As [`Self::relay`] for `message`, the client's answer to request `id` of
    /// `session`, which this replica did not send: passed on only when a replica's copy of
    /// the session recorded it pending ([`Self::request_sent`]), which it then no longer
    /// is. `Ok(false)`: pending nowhere, nothing passed on. The default relays it.
    ///
    /// # Errors
    /// As [`Self::relay`].
    async fn relay_answer(
        &self,
        session: &str,
        id: i64,
        message: &Value,
    ) -> Result<bool, RelayFailure> {
        let _ = id;
        self.relay(session, message).await.map(|()| true)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
