
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
