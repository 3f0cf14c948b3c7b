
    CREATE TABLE tasks (
        -- Insertion order for keyset pagination; a sequence never hands a value out twice.
        seq              bigserial PRIMARY KEY,
        task_id          text NOT NULL UNIQUE,
        owner            text,
        -- What the task counts against for the per-requester limits.
        quota_key        text NOT NULL,
        status           text NOT NULL CHECK (status IN
                             ('working', 'input_required', 'completed', 'failed', 'cancelled')),
        status_message   text,
        created_ms       bigint NOT NULL,
        last_updated_ms  bigint NOT NULL,
        -- u64 milliseconds stored with their bit pattern (i64), NULL = unlimited.
        ttl_ms           bigint,
        -- created_ms + ttl_ms, saturating; NULL = never expires.
        expires_at       bigint,
        poll_interval_ms bigint,
        method           text NOT NULL,
        -- The exact bytes of the request's params (JSON).
        request          bytea NOT NULL,
        outcome_kind     text CHECK (outcome_kind IN ('result', 'error')),
        -- The exact bytes of the JSON-RPC result or error object.
        outcome          bytea,
        -- The bytes of request and outcome (what the byte limits count).
        bytes            bigint NOT NULL,
        executor         text,
        CHECK ((outcome_kind IS NULL) = (outcome IS NULL))
    );
    CREATE INDEX tasks_owner_seq ON tasks (owner, seq);
    CREATE INDEX tasks_expires ON tasks (expires_at) WHERE expires_at IS NOT NULL;
    CREATE INDEX tasks_active_quota ON tasks (quota_key)
        WHERE status IN ('working', 'input_required');
    CREATE INDEX tasks_active_seq ON tasks (seq)
        WHERE status IN ('working', 'input_required');
    CREATE TABLE executors (
        instance    text PRIMARY KEY,
        lease_until bigint NOT NULL
    );
    CREATE TABLE meta (
        key   text PRIMARY KEY,
        value bytea NOT NULL
    );
    -- Every committed change of a task wakes its waiters in every process: the
    -- notification is sent by the transaction of the change, at its commit, on the channel
    -- named after the schema, with the task id as payload.
    CREATE FUNCTION notify_task_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            PERFORM pg_notify(TG_TABLE_SCHEMA, OLD.task_id);
        ELSE
            PERFORM pg_notify(TG_TABLE_SCHEMA, NEW.task_id);
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER tasks_notify AFTER INSERT OR UPDATE OR DELETE ON tasks
        FOR EACH ROW EXECUTE FUNCTION notify_task_change();
    -- What the limits count, kept in the transaction of every change (the functions keep
    -- the store's schema as their search path: a statement of an operator's session, on
    -- another search path, keeps the counters right too): per quota key its
    -- stored tasks and bytes, and the store's bytes in 64 shards (by task id), so that
    -- writers of different keys and shards never wait for one counter row. Statement
    -- triggers lock the counter rows they change in key order, then in shard order: two
    -- statements touching several (two sweeps) cannot deadlock.
    CREATE TABLE quota_usage (
        quota_key text PRIMARY KEY,
        tasks     bigint NOT NULL,
        bytes     bigint NOT NULL
    );
    CREATE TABLE store_bytes (
        shard smallint PRIMARY KEY,
        bytes bigint NOT NULL
    );
    INSERT INTO store_bytes (shard, bytes) SELECT g, 0 FROM generate_series(0, 63) g;
    CREATE FUNCTION usage_add(d_tasks bigint[], d_keys text[], d_bytes bigint[],
                              s_shards smallint[], s_bytes bigint[]) RETURNS void
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM 1 FROM quota_usage WHERE quota_key = ANY(d_keys) ORDER BY quota_key FOR UPDATE;
        INSERT INTO quota_usage AS u (quota_key, tasks, bytes)
            SELECT k, t, b FROM unnest(d_keys, d_tasks, d_bytes) AS x(k, t, b) ORDER BY k
            ON CONFLICT (quota_key) DO UPDATE
                SET tasks = u.tasks + excluded.tasks, bytes = u.bytes + excluded.bytes;
        DELETE FROM quota_usage WHERE quota_key = ANY(d_keys) AND tasks <= 0;
        PERFORM 1 FROM store_bytes WHERE shard = ANY(s_shards) ORDER BY shard FOR UPDATE;
        UPDATE store_bytes s SET bytes = s.bytes + x.b
            FROM unnest(s_shards, s_bytes) AS x(sh, b) WHERE s.shard = x.sh;
    END $$;
    CREATE FUNCTION usage_insert() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM usage_add(
            (SELECT array_agg(n ORDER BY k) FROM (SELECT quota_key k, count(*) n FROM new_rows GROUP BY 1) q),
            (SELECT array_agg(k ORDER BY k) FROM (SELECT DISTINCT quota_key k FROM new_rows) q),
            (SELECT array_agg(b ORDER BY k) FROM (SELECT quota_key k, sum(bytes)::bigint b FROM new_rows GROUP BY 1) q),
            (SELECT array_agg(sh ORDER BY sh) FROM (SELECT (hashtext(task_id) & 63)::smallint sh FROM new_rows GROUP BY 1) q),
            (SELECT array_agg(b ORDER BY sh) FROM (SELECT (hashtext(task_id) & 63)::smallint sh, sum(bytes)::bigint b FROM new_rows GROUP BY 1) q));
        RETURN NULL;
    END $$;
    CREATE FUNCTION usage_delete() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM usage_add(
            (SELECT array_agg(-n ORDER BY k) FROM (SELECT quota_key k, count(*) n FROM old_rows GROUP BY 1) q),
            (SELECT array_agg(k ORDER BY k) FROM (SELECT DISTINCT quota_key k FROM old_rows) q),
            (SELECT array_agg(-b ORDER BY k) FROM (SELECT quota_key k, sum(bytes)::bigint b FROM old_rows GROUP BY 1) q),
            (SELECT array_agg(sh ORDER BY sh) FROM (SELECT (hashtext(task_id) & 63)::smallint sh FROM old_rows GROUP BY 1) q),
            (SELECT array_agg(-b ORDER BY sh) FROM (SELECT (hashtext(task_id) & 63)::smallint sh, sum(bytes)::bigint b FROM old_rows GROUP BY 1) q));
        RETURN NULL;
    END $$;
    -- An update changes bytes only by adding an outcome (quota keys and ids never change).
    CREATE FUNCTION usage_update() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM usage_add(
            (SELECT array_agg(0::bigint ORDER BY k) FROM (SELECT DISTINCT n.quota_key k FROM new_rows n JOIN old_rows o ON o.seq = n.seq WHERE n.bytes <> o.bytes) q),
            (SELECT array_agg(k ORDER BY k) FROM (SELECT DISTINCT n.quota_key k FROM new_rows n JOIN old_rows o ON o.seq = n.seq WHERE n.bytes <> o.bytes) q),
            (SELECT array_agg(b ORDER BY k) FROM (SELECT n.quota_key k, sum(n.bytes - o.bytes)::bigint b FROM new_rows n JOIN old_rows o ON o.seq = n.seq WHERE n.bytes <> o.bytes GROUP BY 1) q),
            (SELECT array_agg(sh ORDER BY sh) FROM (SELECT (hashtext(n.task_id) & 63)::smallint sh FROM new_rows n JOIN old_rows o ON o.seq = n.seq WHERE n.bytes <> o.bytes GROUP BY 1) q),
            (SELECT array_agg(b ORDER BY sh) FROM (SELECT (hashtext(n.task_id) & 63)::smallint sh, sum(n.bytes - o.bytes)::bigint b FROM new_rows n JOIN old_rows o ON o.seq = n.seq WHERE n.bytes <> o.bytes GROUP BY 1) q));
        RETURN NULL;
    END $$;
    -- Keyset pages never skip a task that commits late: every insert holds the fence
    -- (shared) from before its `seq` is drawn until its commit, and a page is read after
    -- taking the fence (exclusive), so no insert that drew a smaller `seq` is still in
    -- flight when the page's snapshot is taken.
    CREATE FUNCTION list_fence() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock_shared(1296257109, 0);
        RETURN NULL;
    END $$;
    CREATE TRIGGER tasks_list_fence BEFORE INSERT ON tasks
        FOR EACH STATEMENT EXECUTE FUNCTION list_fence();
    CREATE FUNCTION list_page(after bigint, lim bigint, who text) RETURNS SETOF tasks
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(1296257109, 0);
        IF who IS NULL THEN
            RETURN QUERY SELECT * FROM tasks WHERE seq > after ORDER BY seq LIMIT lim;
        ELSE
            RETURN QUERY SELECT * FROM tasks WHERE owner = who AND seq > after
                ORDER BY seq LIMIT lim;
        END IF;
    END $$;
    -- A creation checked against its limits in one call (one round trip, the locks held
    -- only while the server runs it and commits): the quota key's lock (and the store's,
    -- under a store-wide byte limit), then the counts, each read in a snapshot taken after
    -- the locks, then the insert when within every limit. Refused: no row inserted, and
    -- the counts are returned so that the caller names the limit (`Limits::check_create`,
    -- whose order of checks this follows).
    CREATE FUNCTION create_task(p_task_id text, p_owner text, p_status_message text,
        p_created bigint, p_ttl bigint, p_expires bigint, p_poll bigint, p_method text,
        p_request bytea, p_executor text, p_key text, p_bytes bigint,
        max_active bigint, max_tasks bigint, max_bytes bigint, max_total bigint)
    RETURNS TABLE (new_seq bigint, refused text, n_active bigint, n_tasks bigint,
                   n_bytes bigint, n_total bigint)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        v_active bigint := 0;
        v_tasks bigint := 0;
        v_bytes bigint := 0;
        v_total bigint := 0;
        v_seq bigint;
    BEGIN
        PERFORM pg_advisory_xact_lock(1296257108, hashtext(p_key));
        IF max_total IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
            SELECT coalesce(sum(s.bytes), 0) INTO v_total FROM store_bytes s;
        END IF;
        IF EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = p_task_id) THEN
            RETURN QUERY SELECT NULL::bigint, 'duplicate'::text, 0::bigint, 0::bigint,
                0::bigint, 0::bigint;
            RETURN;
        END IF;
        IF max_active IS NOT NULL THEN
            SELECT count(*) INTO v_active FROM tasks t
                WHERE t.quota_key = p_key AND t.status IN ('working', 'input_required');
        END IF;
        SELECT coalesce(max(u.tasks), 0), coalesce(max(u.bytes), 0) INTO v_tasks, v_bytes
            FROM quota_usage u WHERE u.quota_key = p_key;
        IF (max_active IS NOT NULL AND v_active >= max_active)
            OR (max_tasks IS NOT NULL AND v_tasks >= max_tasks)
            OR (max_bytes IS NOT NULL AND v_bytes + p_bytes > max_bytes)
            OR (max_total IS NOT NULL AND v_total + p_bytes > max_total) THEN
            RETURN QUERY SELECT NULL::bigint, 'limit'::text, v_active, v_tasks, v_bytes,
                v_total;
            RETURN;
        END IF;
        INSERT INTO tasks (task_id, owner, status, status_message, created_ms,
            last_updated_ms, ttl_ms, expires_at, poll_interval_ms, method, request, executor,
            quota_key, bytes)
        VALUES (p_task_id, p_owner, 'working', p_status_message, p_created, p_created, p_ttl,
            p_expires, p_poll, p_method, p_request, p_executor, p_key, p_bytes)
        RETURNING tasks.seq INTO v_seq;
        RETURN QUERY SELECT v_seq, NULL::text, v_active, v_tasks, v_bytes, v_total;
    END $$;
    -- A terminal transition whose outcome is checked against the byte limits, in one call:
    -- the quota key's lock (and the store's, under a store-wide limit), the counters read
    -- after them, then the compare-and-swap of the transition as asked or, over a limit,
    -- of the `failed` one the caller prepared for that limit (`within_limits`).
    CREATE FUNCTION finish_task(p_task_id text, p_to text, p_message text, p_at bigint,
        p_from text[], p_kind text, p_json bytea, max_bytes bigint, max_total bigint,
        over_bytes_message text, over_bytes_json bytea,
        over_total_message text, over_total_json bytea)
    RETURNS SETOF tasks LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        v_key text;
        v_bytes bigint := 0;
        v_total bigint := 0;
        v_adding bigint := coalesce(octet_length(p_json), 0);
        r tasks%ROWTYPE;
    BEGIN
        SELECT t.quota_key INTO v_key FROM tasks t WHERE t.task_id = p_task_id;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock(1296257108, hashtext(v_key));
        IF max_total IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
            SELECT coalesce(sum(s.bytes), 0) INTO v_total FROM store_bytes s;
        END IF;
        SELECT coalesce(max(u.bytes), 0) INTO v_bytes FROM quota_usage u
            WHERE u.quota_key = v_key;
        IF max_bytes IS NOT NULL AND v_bytes + v_adding > max_bytes THEN
            p_to := 'failed';
            p_message := over_bytes_message;
            p_kind := 'error';
            p_json := over_bytes_json;
        ELSIF max_total IS NOT NULL AND v_total + v_adding > max_total THEN
            p_to := 'failed';
            p_message := over_total_message;
            p_kind := 'error';
            p_json := over_total_json;
        END IF;
        FOR r IN UPDATE tasks t SET status = p_to, status_message = p_message,
                last_updated_ms = greatest(p_at, t.last_updated_ms), outcome_kind = p_kind,
                outcome = p_json, bytes = t.bytes + coalesce(octet_length(p_json), 0),
                executor = NULL
            WHERE t.task_id = p_task_id AND t.status = ANY(p_from) RETURNING t.*
        LOOP
            RETURN NEXT r;
        END LOOP;
    END $$;
    CREATE TRIGGER tasks_usage_insert AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION usage_insert();
    CREATE TRIGGER tasks_usage_update AFTER UPDATE ON tasks
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION usage_update();
    CREATE TRIGGER tasks_usage_delete AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION usage_delete();
    