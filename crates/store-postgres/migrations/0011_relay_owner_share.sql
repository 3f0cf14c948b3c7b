
    ALTER TABLE relayed_messages ADD COLUMN owner text NOT NULL DEFAULT '';
    CREATE INDEX relayed_messages_owner ON relayed_messages (owner);
    -- As relay_store of version 8, and within the owner's share: the owner of the
    -- session's shared record, else the session. Also returns the owner's bytes stored.
    CREATE FUNCTION relay_store(p_channel text, p_session text, p_message bytea, p_now bigint,
                                p_ttl bigint, p_max_total bigint, p_max_owner bigint)
        RETURNS TABLE (row_id bigint, used bigint, owner_used bigint)
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        v_owner text;
    BEGIN
        PERFORM pg_advisory_xact_lock(
            hashtextextended('mcp-tasks relayed_messages ' || current_schema(), 0));
        DELETE FROM relayed_messages WHERE expires_ms <= p_now;
        SELECT coalesce((SELECT s.owner FROM sessions s WHERE s.id = p_session),
                        'session:' || p_session) INTO v_owner;
        SELECT coalesce(sum(octet_length(message)), 0)::bigint INTO used FROM relayed_messages;
        SELECT coalesce(sum(octet_length(message)), 0)::bigint INTO owner_used
            FROM relayed_messages WHERE owner = v_owner;
        row_id := NULL;
        IF used + octet_length(p_message) <= p_max_total
           AND owner_used + octet_length(p_message) <= p_max_owner THEN
            INSERT INTO relayed_messages (session, owner, message, expires_ms)
                VALUES (p_session, v_owner, p_message, p_now + p_ttl) RETURNING id INTO row_id;
            PERFORM pg_notify(p_channel,
                json_build_object('session', p_session, 'row', row_id)::text);
        END IF;
        RETURN NEXT;
    END $$;
