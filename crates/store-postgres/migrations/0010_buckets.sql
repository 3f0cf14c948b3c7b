
    CREATE TABLE rate_buckets (
        key    text PRIMARY KEY,
        -- Theoretical arrival time of the next admission, ms since the epoch.
        tat_ms double precision NOT NULL
    );
    CREATE INDEX rate_buckets_tat ON rate_buckets (tat_ms);
    -- Spend one from bucket p_key (emission interval and tolerance in ms) at p_now: 0
    -- when admitted, else the ms until one would be (nothing spent).
    CREATE FUNCTION rate_spend(p_key text, p_emission double precision,
                               p_tolerance double precision, p_now bigint)
        RETURNS double precision
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        tat double precision;
    BEGIN
        DELETE FROM rate_buckets WHERE key IN
            (SELECT key FROM rate_buckets WHERE tat_ms < p_now AND key <> p_key LIMIT 16);
        INSERT INTO rate_buckets (key, tat_ms) VALUES (p_key, p_now)
            ON CONFLICT (key) DO NOTHING;
        SELECT greatest(tat_ms, p_now) INTO tat FROM rate_buckets WHERE key = p_key FOR UPDATE;
        IF tat - p_now > p_tolerance THEN
            RETURN tat - p_now - p_tolerance;
        END IF;
        UPDATE rate_buckets SET tat_ms = tat + p_emission WHERE key = p_key;
        RETURN 0;
    END $$;
