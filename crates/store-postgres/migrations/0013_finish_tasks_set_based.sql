
    CREATE OR REPLACE FUNCTION finish_tasks(p_ids text[], p_to text[], p_messages text[],
        p_at bigint[], p_from text[], p_kinds text[], p_json bytea[], p_max_bytes bigint[],
        p_max_total bigint[], p_ob_messages text[], p_ob_json bytea[],
        p_ot_messages text[], p_ot_json bytea[])
    RETURNS TABLE (row_no integer, rec tasks)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        n integer := coalesce(array_length(p_ids, 1), 0);
        h integer;
        i integer;
        j integer;
        k integer;
        any_total boolean;
        v_locked integer[];
        s_ids text[];
        s_status text[];
        s_keys text[];
        k_keys text[];
        k_bytes bigint[];
        v_total bigint := 0;
        v_adding bigint;
        v_to text;
        v_msg text;
        v_kind text;
        v_json bytea;
        w_no integer[] := '{}';
        w_ids text[] := '{}';
        w_to text[] := '{}';
        w_msg text[] := '{}';
        w_at bigint[] := '{}';
        w_from text[] := '{}';
        w_kind text[] := '{}';
        w_json bytea[] := '{}';
    BEGIN
        IF n = 0 THEN
            RETURN;
        END IF;
        -- Every lock first, in the global order: keys' advisory locks, the store-wide
        -- one, the tasks' rows in shard order.
        SELECT coalesce(array_agg(DISTINCT hashtext(t.quota_key)), '{}') INTO v_locked
            FROM tasks t WHERE t.task_id = ANY(p_ids);
        FOR h IN SELECT x FROM unnest(v_locked) AS x ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1296257108, h);
        END LOOP;
        any_total := EXISTS (SELECT 1 FROM unnest(p_max_total) AS m WHERE m IS NOT NULL);
        IF any_total THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
        END IF;
        SELECT coalesce(array_agg(l.task_id), '{}'), coalesce(array_agg(l.status), '{}'),
               coalesce(array_agg(l.quota_key), '{}')
            INTO s_ids, s_status, s_keys
            FROM (SELECT t.task_id, t.status, t.quota_key FROM tasks t
                  WHERE t.task_id = ANY(p_ids)
                  ORDER BY hashtext(t.task_id) & 63, t.task_id FOR UPDATE) l;
        -- A task stored after its key was looked up (not one of the keys locked above):
        -- its key's lock now, as `finish_task` would take it.
        FOR h IN SELECT DISTINCT hashtext(x) FROM unnest(s_keys) AS x
                 WHERE NOT hashtext(x) = ANY(v_locked) ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1296257108, h);
        END LOOP;
        -- The counts, once.
        IF any_total THEN
            SELECT coalesce(sum(s.bytes), 0) INTO v_total FROM store_bytes s;
        END IF;
        SELECT coalesce(array_agg(q.k), '{}'), coalesce(array_agg(coalesce(u.bytes, 0)), '{}')
            INTO k_keys, k_bytes
            FROM (SELECT DISTINCT x AS k FROM unnest(s_keys) AS x) q
            LEFT JOIN quota_usage u ON u.quota_key = q.k;
        -- Each row in the row-by-row order, on running statuses and counts.
        FOR i IN SELECT g FROM generate_subscripts(p_ids, 1) AS g
                 ORDER BY hashtext(p_ids[g]) & 63, g LOOP
            j := array_position(s_ids, p_ids[i]);
            IF j IS NULL OR NOT s_status[j] = ANY(string_to_array(p_from[i], ',')) THEN
                CONTINUE;
            END IF;
            IF p_ids[i] = ANY(w_ids) THEN
                RAISE EXCEPTION 'finish_tasks: two transitions of task % apply in one batch',
                    p_ids[i];
            END IF;
            k := array_position(k_keys, s_keys[j]);
            v_to := p_to[i];
            v_msg := p_messages[i];
            v_kind := p_kinds[i];
            v_json := p_json[i];
            v_adding := coalesce(octet_length(v_json), 0);
            IF p_max_bytes[i] IS NOT NULL AND k_bytes[k] + v_adding > p_max_bytes[i] THEN
                v_to := 'failed';
                v_msg := p_ob_messages[i];
                v_kind := 'error';
                v_json := p_ob_json[i];
            ELSIF p_max_total[i] IS NOT NULL AND v_total + v_adding > p_max_total[i] THEN
                v_to := 'failed';
                v_msg := p_ot_messages[i];
                v_kind := 'error';
                v_json := p_ot_json[i];
            END IF;
            w_no := w_no || i;
            w_ids := w_ids || p_ids[i];
            w_to := w_to || v_to;
            w_msg := w_msg || v_msg;
            w_at := w_at || p_at[i];
            w_from := w_from || p_from[i];
            w_kind := w_kind || v_kind;
            w_json := w_json || v_json;
            k_bytes[k] := k_bytes[k] + coalesce(octet_length(v_json), 0);
            v_total := v_total + coalesce(octet_length(v_json), 0);
            s_status[j] := v_to;
        END LOOP;
        IF cardinality(w_no) = 0 THEN
            RETURN;
        END IF;
        -- One update for the applied rows: the statement triggers run once.
        RETURN QUERY
            WITH up AS (
                UPDATE tasks t SET status = x.st, status_message = x.msg,
                    last_updated_ms = greatest(x.at, t.last_updated_ms), outcome_kind = x.kind,
                    outcome = x.js, bytes = t.bytes + coalesce(octet_length(x.js), 0),
                    executor = NULL
                FROM unnest(w_no, w_ids, w_to, w_msg, w_at, w_from, w_kind, w_json)
                    AS x(g, id, st, msg, at, fr, kind, js)
                WHERE t.task_id = x.id AND t.status = ANY(string_to_array(x.fr, ','))
                RETURNING x.g AS g, t AS r)
            SELECT up.g, up.r FROM up ORDER BY up.g;
    END $$;
