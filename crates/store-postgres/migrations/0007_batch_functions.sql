
    CREATE FUNCTION create_tasks(p_ids text[], p_owners text[], p_messages text[],
        p_created bigint[], p_ttl bigint[], p_expires bigint[], p_poll bigint[],
        p_methods text[], p_requests bytea[], p_executors text[], p_keys text[],
        p_bytes bigint[], p_max_active bigint[], p_max_tasks bigint[], p_max_bytes bigint[],
        p_max_total bigint[])
    RETURNS TABLE (row_no integer, new_seq bigint, refused text, n_active bigint,
                   n_tasks bigint, n_bytes bigint, n_total bigint)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        h integer;
        i integer;
    BEGIN
        FOR h IN SELECT DISTINCT hashtext(k) FROM unnest(p_keys) AS k ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1296257108, h);
        END LOOP;
        IF EXISTS (SELECT 1 FROM unnest(p_max_total) AS m WHERE m IS NOT NULL) THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
        END IF;
        FOR i IN SELECT g FROM generate_subscripts(p_ids, 1) AS g
                 ORDER BY hashtext(p_ids[g]) & 63, g LOOP
            RETURN QUERY SELECT i, c.* FROM create_task(p_ids[i], p_owners[i], p_messages[i],
                p_created[i], p_ttl[i], p_expires[i], p_poll[i], p_methods[i], p_requests[i],
                p_executors[i], p_keys[i], p_bytes[i], p_max_active[i], p_max_tasks[i],
                p_max_bytes[i], p_max_total[i]) AS c;
        END LOOP;
    END $$;
    CREATE FUNCTION finish_tasks(p_ids text[], p_to text[], p_messages text[], p_at bigint[],
        p_from text[], p_kinds text[], p_json bytea[], p_max_bytes bigint[],
        p_max_total bigint[], p_ob_messages text[], p_ob_json bytea[],
        p_ot_messages text[], p_ot_json bytea[])
    RETURNS TABLE (row_no integer, rec tasks)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        h integer;
        i integer;
    BEGIN
        FOR h IN SELECT DISTINCT hashtext(t.quota_key) FROM tasks t
                 WHERE t.task_id = ANY(p_ids) ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1296257108, h);
        END LOOP;
        IF EXISTS (SELECT 1 FROM unnest(p_max_total) AS m WHERE m IS NOT NULL) THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
        END IF;
        FOR i IN SELECT g FROM generate_subscripts(p_ids, 1) AS g
                 ORDER BY hashtext(p_ids[g]) & 63, g LOOP
            RETURN QUERY SELECT i, f FROM finish_task(p_ids[i], p_to[i], p_messages[i],
                p_at[i], string_to_array(p_from[i], ','), p_kinds[i], p_json[i],
                p_max_bytes[i], p_max_total[i], p_ob_messages[i], p_ob_json[i],
                p_ot_messages[i], p_ot_json[i]) AS f;
        END LOOP;
    END $$;
