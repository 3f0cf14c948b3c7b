//! The requests a shared session's peer sent its client and that wait for an answer
//! a client's response POSTed to another replica than the one whose request it
//! answers is relayed only when some replica's copy of the session has a request of that
//! id pending, so that responses to ids nobody asked cannot fill the relay's budget
//! (`relay.rs`) and block other clients' real answers.
//!
//! A row `(session, request_id)` is written by the replica whose peer sends the request,
//! before the request goes out; it is deleted when the answer is relayed (in the same
//! statement that relays it), when the answer reaches that replica directly, when the
//! request is cancelled (its caller went away or timed out: the peer sends
//! `notifications/cancelled`), when the session ends (`ON DELETE CASCADE`), and after
//! [`PENDING_REQUEST_TTL`] by the sessions' sweep. A session keeps at most
//! [`MAX_PENDING_REQUESTS_PER_SESSION`] rows: a new one replaces the oldest.

use std::time::Duration;

/// The most requests of one session recorded as pending at once by default.
pub const MAX_PENDING_REQUESTS_PER_SESSION: usize = 128;
/// How long a pending request is recorded at most by default, unless answered or
/// cancelled first.
pub const PENDING_REQUEST_TTL: Duration = Duration::from_secs(3600);

/// Record a request as pending: session, id, expiry, per-session bound.
pub(crate) const PUT: &str = "SELECT session_request_put($1, $2, $3, $4)";
/// The request was answered here or cancelled.
pub(crate) const DONE: &str = "DELETE FROM session_requests WHERE session = $1 AND request_id = $2";
/// Relay a small answer (carried by the notification) only if its request is pending,
/// which it no longer is: channel, payload, session, id, now. One row when relayed.
pub(crate) const RELAY_SMALL: &str = "WITH answered AS (DELETE FROM session_requests \
     WHERE session = $3 AND request_id = $4 AND expires_ms > $5 RETURNING 1) \
     SELECT pg_notify($1, $2) FROM answered";
/// Relay a large answer through `relayed_messages` only if its request is pending.
pub(crate) const RELAY_LARGE: &str = "SELECT row_id, used, owner_used, pending \
     FROM relay_store_answer($1, $2, $3, $4, $5, $6, $7, $8)";
