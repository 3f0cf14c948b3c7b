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

/// Schema: the requests of shared sessions waiting for their answer, and the relay of an
/// answer to one of them (appended to the migrations of `schema.rs`).
pub(crate) const MIGRATION: &str = "
    CREATE TABLE session_requests (
        session    text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        request_id bigint NOT NULL,
        -- Milliseconds since the epoch; swept after it.
        expires_ms bigint NOT NULL,
        PRIMARY KEY (session, request_id)
    );
    CREATE INDEX session_requests_expires ON session_requests (expires_ms);
    -- Record request p_request of session p_session as pending (when the session exists),
    -- keeping the session's p_max newest rows (under the session's advisory lock, so that
    -- concurrent records on any replicas never exceed it).
    CREATE FUNCTION session_request_put(p_session text, p_request bigint, p_expires bigint,
                                        p_max bigint)
        RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(
            hashtextextended('mcp-tasks session_requests ' || p_session, 0));
        INSERT INTO session_requests (session, request_id, expires_ms)
            SELECT p_session, p_request, p_expires
            WHERE EXISTS (SELECT 1 FROM sessions WHERE id = p_session)
            ON CONFLICT (session, request_id) DO UPDATE SET expires_ms = excluded.expires_ms;
        DELETE FROM session_requests WHERE session = p_session AND request_id IN (
            SELECT request_id FROM session_requests WHERE session = p_session
            ORDER BY expires_ms DESC, request_id DESC OFFSET greatest(p_max, 1));
    END $$;
    -- relay_store (version 11) for an answer to request p_request of session p_session:
    -- only when that request is pending (not expired at p_now); the request is no longer
    -- pending once its answer is stored. `pending` says whether it was.
    CREATE FUNCTION relay_store_answer(p_channel text, p_session text, p_request bigint,
                                       p_message bytea, p_now bigint, p_ttl bigint,
                                       p_max_total bigint, p_max_owner bigint)
        RETURNS TABLE (row_id bigint, used bigint, owner_used bigint, pending boolean)
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        row_id := NULL;
        used := 0;
        owner_used := 0;
        PERFORM 1 FROM session_requests q
            WHERE q.session = p_session AND q.request_id = p_request AND q.expires_ms > p_now
            FOR UPDATE;
        pending := FOUND;
        IF pending THEN
            SELECT r.row_id, r.used, r.owner_used INTO row_id, used, owner_used
                FROM relay_store(p_channel, p_session, p_message, p_now, p_ttl, p_max_total,
                                 p_max_owner) r;
            IF row_id IS NOT NULL THEN
                DELETE FROM session_requests q
                    WHERE q.session = p_session AND q.request_id = p_request;
            END IF;
        END IF;
        RETURN NEXT;
    END $$;
";

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
