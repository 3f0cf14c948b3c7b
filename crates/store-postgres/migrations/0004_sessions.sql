
    CREATE TABLE sessions (
        id         text PRIMARY KEY,
        principal  text,
        -- Whose sessions it counts with against the per-principal bound.
        owner      text NOT NULL,
        -- The handler's state (negotiated version, client capabilities, ...) as JSON.
        state      bytea NOT NULL,
        -- Milliseconds since the epoch; the session ends after it unless used.
        expires_ms bigint NOT NULL
    );
    CREATE INDEX sessions_owner ON sessions (owner, expires_ms);
    CREATE INDEX sessions_expires ON sessions (expires_ms);
    CREATE FUNCTION sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify(TG_TABLE_SCHEMA || '_sessions', OLD.id);
        RETURN NULL;
    END $$;
    CREATE TRIGGER sessions_ended AFTER DELETE ON sessions
        FOR EACH ROW EXECUTE FUNCTION sessions_notify();
    -- Insert a session; beyond $6 sessions of its owner, end the owner's sessions closest
    -- to expiry first (under the owner's advisory lock, so concurrent inserts on any
    -- replicas never exceed the bound). Returns the ids it ended.
    CREATE FUNCTION session_insert(p_id text, p_principal text, p_owner text, p_state bytea,
                                   p_expires bigint, p_per_owner bigint)
        RETURNS SETOF text LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        victim text;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('mcp-tasks session ' || p_owner, 0));
        FOR victim IN DELETE FROM sessions WHERE id IN (
            SELECT id FROM sessions WHERE owner = p_owner
            ORDER BY expires_ms DESC OFFSET greatest(p_per_owner - 1, 0)
        ) RETURNING id LOOP
            RETURN NEXT victim;
        END LOOP;
        INSERT INTO sessions (id, principal, owner, state, expires_ms)
            VALUES (p_id, p_principal, p_owner, p_state, p_expires);
    END $$;
