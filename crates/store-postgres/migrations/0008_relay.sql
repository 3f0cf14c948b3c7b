
    CREATE TABLE relayed_messages (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session    text NOT NULL,
        -- The JSON-RPC message, as JSON text.
        message    bytea NOT NULL,
        -- Milliseconds since the epoch; swept after it.
        expires_ms bigint NOT NULL
    );
    CREATE INDEX relayed_messages_expires ON relayed_messages (expires_ms);
    -- Store a relayed message within the total bound (under the store's advisory lock, so
    -- concurrent relays on any replicas never exceed it), after sweeping expired rows, and
    -- announce its row on the sessions' channel. Returns the row id (NULL when the total
    -- bound refuses it) and the bytes stored before it.
    CREATE FUNCTION relay_store(p_channel text, p_session text, p_message bytea, p_now bigint,
                                p_ttl bigint, p_max_total bigint)
        RETURNS TABLE (row_id bigint, used bigint)
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(
            hashtextextended('mcp-tasks relayed_messages ' || current_schema(), 0));
        DELETE FROM relayed_messages WHERE expires_ms <= p_now;
        SELECT coalesce(sum(octet_length(message)), 0)::bigint INTO used FROM relayed_messages;
        row_id := NULL;
        IF used + octet_length(p_message) <= p_max_total THEN
            INSERT INTO relayed_messages (session, message, expires_ms)
                VALUES (p_session, p_message, p_now + p_ttl) RETURNING id INTO row_id;
            PERFORM pg_notify(p_channel,
                json_build_object('session', p_session, 'row', row_id)::text);
        END IF;
        RETURN NEXT;
    END $$;
