
    CREATE OR REPLACE FUNCTION create_tasks(p_ids text[], p_owners text[], p_messages text[],
        p_created bigint[], p_ttl bigint[], p_expires bigint[], p_poll bigint[],
        p_methods text[], p_requests bytea[], p_executors text[], p_keys text[],
        p_bytes bigint[], p_max_active bigint[], p_max_tasks bigint[], p_max_bytes bigint[],
        p_max_total bigint[])
    RETURNS TABLE (row_no integer, new_seq bigint, refused text, n_active bigint,
                   n_tasks bigint, n_bytes bigint, n_total bigint)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        n integer := coalesce(array_length(p_ids, 1), 0);
        h integer;
        i integer;
        j integer;
        any_total boolean;
        k_keys text[];
        k_active bigint[];
        k_tasks bigint[];
        k_bytes bigint[];
        v_total bigint := 0;
        v_taken text[];
        v_ok boolean[] := array_fill(false, ARRAY[n]);
        v_why text[] := array_fill(NULL::text, ARRAY[n]);
        v_a bigint[] := array_fill(0::bigint, ARRAY[n]);
        v_t bigint[] := array_fill(0::bigint, ARRAY[n]);
        v_b bigint[] := array_fill(0::bigint, ARRAY[n]);
        v_s bigint[] := array_fill(0::bigint, ARRAY[n]);
        r_ids text[];
        r_seqs bigint[];
    BEGIN
        IF n = 0 THEN
            RETURN;
        END IF;
        -- Every lock first, in the global order: keys' advisory locks, the store-wide
        -- one, the keys' counter rows, the shards' counter rows.
        FOR h IN SELECT DISTINCT hashtext(k) FROM unnest(p_keys) AS k ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1296257108, h);
        END LOOP;
        any_total := EXISTS (SELECT 1 FROM unnest(p_max_total) AS m WHERE m IS NOT NULL);
        IF any_total THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
        END IF;
        PERFORM 1 FROM quota_usage u WHERE u.quota_key = ANY(p_keys)
            ORDER BY u.quota_key FOR UPDATE;
        PERFORM 1 FROM store_bytes s
            WHERE s.shard IN (SELECT (hashtext(x) & 63)::smallint FROM unnest(p_ids) AS x)
            ORDER BY s.shard FOR UPDATE;
        -- The counts, once.
        IF any_total THEN
            SELECT coalesce(sum(s.bytes), 0) INTO v_total FROM store_bytes s;
        END IF;
        SELECT array_agg(q.k ORDER BY q.k), array_agg(coalesce(u.tasks, 0) ORDER BY q.k),
               array_agg(coalesce(u.bytes, 0) ORDER BY q.k)
            INTO k_keys, k_tasks, k_bytes
            FROM (SELECT DISTINCT k FROM unnest(p_keys) AS k) q
            LEFT JOIN quota_usage u ON u.quota_key = q.k;
        IF EXISTS (SELECT 1 FROM unnest(p_max_active) AS m WHERE m IS NOT NULL) THEN
            SELECT array_agg((SELECT count(*) FROM tasks t WHERE t.quota_key = q.k
                    AND t.status IN ('working', 'input_required')) ORDER BY q.k)
                INTO k_active FROM unnest(k_keys) AS q(k);
        ELSE
            k_active := array_fill(0::bigint, ARRAY[array_length(k_keys, 1)]);
        END IF;
        SELECT coalesce(array_agg(t.task_id), '{}') INTO v_taken FROM tasks t
            WHERE t.task_id = ANY(p_ids);
        -- Each row in the batch's order, on running counts.
        FOR i IN 1..n LOOP
            IF p_ids[i] = ANY(v_taken) THEN
                v_why[i] := 'duplicate';
                CONTINUE;
            END IF;
            j := array_position(k_keys, p_keys[i]);
            IF p_max_active[i] IS NOT NULL THEN
                v_a[i] := k_active[j];
            END IF;
            v_t[i] := k_tasks[j];
            v_b[i] := k_bytes[j];
            IF p_max_total[i] IS NOT NULL THEN
                v_s[i] := v_total;
            END IF;
            IF (p_max_active[i] IS NOT NULL AND k_active[j] >= p_max_active[i])
                OR (p_max_tasks[i] IS NOT NULL AND k_tasks[j] >= p_max_tasks[i])
                OR (p_max_bytes[i] IS NOT NULL AND k_bytes[j] + p_bytes[i] > p_max_bytes[i])
                OR (p_max_total[i] IS NOT NULL AND v_total + p_bytes[i] > p_max_total[i]) THEN
                v_why[i] := 'limit';
                CONTINUE;
            END IF;
            v_ok[i] := true;
            v_taken := v_taken || p_ids[i];
            k_active[j] := k_active[j] + 1;
            k_tasks[j] := k_tasks[j] + 1;
            k_bytes[j] := k_bytes[j] + p_bytes[i];
            v_total := v_total + p_bytes[i];
        END LOOP;
        -- One insert for the accepted rows: the statement triggers run once.
        IF true = ANY(v_ok) THEN
            WITH ins AS (
                INSERT INTO tasks (task_id, owner, status, status_message, created_ms,
                    last_updated_ms, ttl_ms, expires_at, poll_interval_ms, method, request,
                    executor, quota_key, bytes)
                SELECT p_ids[g], p_owners[g], 'working', p_messages[g], p_created[g],
                    p_created[g], p_ttl[g], p_expires[g], p_poll[g], p_methods[g],
                    p_requests[g], p_executors[g], p_keys[g], p_bytes[g]
                FROM generate_subscripts(p_ids, 1) AS g WHERE v_ok[g] ORDER BY g
                ON CONFLICT (task_id) DO NOTHING
                RETURNING tasks.task_id AS id, tasks.seq AS s)
            SELECT array_agg(ins.id), array_agg(ins.s) INTO r_ids, r_seqs FROM ins;
        END IF;
        RETURN QUERY SELECT g,
                CASE WHEN v_ok[g] THEN r_seqs[array_position(r_ids, p_ids[g])] END,
                CASE WHEN v_ok[g] AND array_position(r_ids, p_ids[g]) IS NULL
                     THEN 'duplicate' ELSE v_why[g] END,
                v_a[g], v_t[g], v_b[g], v_s[g]
            FROM generate_subscripts(p_ids, 1) AS g ORDER BY g;
    END $$;
