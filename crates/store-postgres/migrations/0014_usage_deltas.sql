
    -- The usage counters as a base plus committed deltas (`usage`): a statement that
    -- changes tasks inserts what it changed per quota key into `usage_deltas` (insert-only:
    -- no counter row is locked or updated by a writer), and the usage of a key is its
    -- `quota_usage` row plus the sum of its deltas, the store's bytes the sum of
    -- `store_bytes` plus the sum of every delta's bytes, each read in one statement (one
    -- snapshot). `fold_usage` moves committed deltas into the base rows, in one
    -- transaction, so that every snapshot sees base + deltas unchanged.
    CREATE TABLE usage_deltas (
        quota_key text NOT NULL,
        tasks     bigint NOT NULL,
        bytes     bigint NOT NULL
    );
    CREATE INDEX usage_deltas_key ON usage_deltas (quota_key);
    CREATE OR REPLACE FUNCTION usage_insert() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO usage_deltas (quota_key, tasks, bytes)
            SELECT quota_key, count(*), sum(bytes) FROM new_rows GROUP BY 1;
        RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION usage_delete() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO usage_deltas (quota_key, tasks, bytes)
            SELECT quota_key, -count(*), -sum(bytes) FROM old_rows GROUP BY 1;
        RETURN NULL;
    END $$;
    -- An update changes bytes only by adding an outcome (quota keys and ids never change).
    CREATE OR REPLACE FUNCTION usage_update() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO usage_deltas (quota_key, tasks, bytes)
            SELECT n.quota_key, 0, sum(n.bytes - o.bytes)
            FROM new_rows n JOIN old_rows o ON o.seq = n.seq
            WHERE n.bytes <> o.bytes GROUP BY 1;
        RETURN NULL;
    END $$;
    -- Fold the committed deltas of `p_keys` (NULL: of every key), at most `p_limit` of
    -- them, into the base rows; the deltas another fold holds are skipped (it folds them),
    -- so folds never wait for each other's deltas. The base rows are locked in key order,
    -- then the `store_bytes` shards (a key's bytes go to shard `hashtext(key) & 63`) in
    -- shard order: two folds cannot deadlock. A base row left at zero tasks and bytes is
    -- deleted; a negative one is kept (another fold may hold the deltas that bring it
    -- back). Returns the number of deltas folded.
    CREATE FUNCTION fold_usage(p_keys text[], p_limit integer) RETURNS bigint
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        v_tids tid[];
        k_keys text[];
        k_tasks bigint[];
        k_bytes bigint[];
        v_n bigint;
    BEGIN
        IF p_keys IS NULL THEN
            v_tids := ARRAY(SELECT d.ctid FROM usage_deltas d LIMIT p_limit
                            FOR UPDATE SKIP LOCKED);
        ELSE
            v_tids := ARRAY(SELECT d.ctid FROM usage_deltas d WHERE d.quota_key = ANY(p_keys)
                            LIMIT p_limit FOR UPDATE SKIP LOCKED);
        END IF;
        IF cardinality(v_tids) = 0 THEN
            RETURN 0;
        END IF;
        WITH gone AS (DELETE FROM usage_deltas d WHERE d.ctid = ANY(v_tids)
                      RETURNING d.quota_key, d.tasks, d.bytes)
        SELECT array_agg(q.k ORDER BY q.k), array_agg(q.t ORDER BY q.k),
               array_agg(q.b ORDER BY q.k), sum(q.c)::bigint
            INTO k_keys, k_tasks, k_bytes, v_n
            FROM (SELECT g.quota_key k, sum(g.tasks)::bigint t, sum(g.bytes)::bigint b,
                         count(*) c
                  FROM gone g GROUP BY 1) q;
        PERFORM 1 FROM quota_usage u WHERE u.quota_key = ANY(k_keys)
            ORDER BY u.quota_key FOR UPDATE;
        INSERT INTO quota_usage AS u (quota_key, tasks, bytes)
            SELECT k, t, b FROM unnest(k_keys, k_tasks, k_bytes) AS x(k, t, b) ORDER BY k
            ON CONFLICT (quota_key) DO UPDATE
                SET tasks = u.tasks + excluded.tasks, bytes = u.bytes + excluded.bytes;
        DELETE FROM quota_usage u WHERE u.quota_key = ANY(k_keys)
            AND u.tasks = 0 AND u.bytes = 0;
        PERFORM 1 FROM store_bytes s
            WHERE s.shard IN (SELECT (hashtext(k) & 63)::smallint FROM unnest(k_keys) AS k)
            ORDER BY s.shard FOR UPDATE;
        UPDATE store_bytes s SET bytes = s.bytes + x.b
            FROM (SELECT (hashtext(y.k) & 63)::smallint sh, sum(y.b)::bigint b
                  FROM unnest(k_keys, k_bytes) AS y(k, b) GROUP BY 1) x
            WHERE s.shard = x.sh;
        RETURN v_n;
    END $$;
    -- The stored tasks and bytes of each of `p_keys` (each once, in key order), read in one
    -- snapshot: base + deltas. Called by a limited writer holding the keys' locks; with
    -- `p_fold` it folds the keys' deltas first when they are many, so that the reads stay
    -- short. A transaction folds at most once (`store_usage` or here), so that it takes
    -- the base rows in key order and then the shards in shard order, as every fold does:
    -- folds cannot deadlock.
    CREATE FUNCTION key_usage(p_keys text[], p_fold boolean)
    RETURNS TABLE (k text, n_tasks bigint, n_bytes bigint)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        IF p_fold AND (SELECT count(*) FROM (SELECT 1 FROM usage_deltas d
                       WHERE d.quota_key = ANY(p_keys) LIMIT 65) x) > 64 THEN
            PERFORM fold_usage(p_keys, NULL);
        END IF;
        RETURN QUERY
            SELECT q.k, coalesce(u.tasks, 0) + coalesce(d.t, 0),
                   coalesce(u.bytes, 0) + coalesce(d.b, 0)
            FROM (SELECT DISTINCT x AS k FROM unnest(p_keys) AS x) q
            LEFT JOIN quota_usage u ON u.quota_key = q.k
            LEFT JOIN (SELECT e.quota_key, sum(e.tasks)::bigint t, sum(e.bytes)::bigint b
                       FROM usage_deltas e WHERE e.quota_key = ANY(p_keys) GROUP BY 1) d
                ON d.quota_key = q.k
            ORDER BY q.k;
    END $$;
    -- The store's bytes, read in one snapshot: base + every delta. Called by a writer
    -- holding the store-wide lock; it folds every delta first when they are many.
    CREATE FUNCTION store_usage() RETURNS bigint
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        IF (SELECT count(*) FROM (SELECT 1 FROM usage_deltas LIMIT 257) x) > 256 THEN
            PERFORM fold_usage(NULL, NULL);
        END IF;
        RETURN (SELECT coalesce(sum(s.bytes), 0) FROM store_bytes s)
            + (SELECT coalesce(sum(d.bytes), 0) FROM usage_deltas d);
    END $$;
    -- The four lanes of a quota key (`hashtext` `h`): lane 0 is the key's lock of the
    -- versions before (1296257108, h), lanes 1 to 3 are (1296257110 to 1296257112, h).
    -- Every lock is taken in one global order, (key's hash, lane), then the store-wide one
    -- (1296257108, 0): `key_lock_all` takes the four lanes in order (the key alone, as the
    -- key's lock did); `key_lock_lane` takes one, trying each without waiting from lane
    -- `pid % 4` on, and waits for that lane only when all four are held. A writer of
    -- several keys takes them in `hashtext` order, one lane each or all four.
    CREATE FUNCTION key_lock_all(h integer) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(1296257108, h);
        PERFORM pg_advisory_xact_lock(1296257110, h);
        PERFORM pg_advisory_xact_lock(1296257111, h);
        PERFORM pg_advisory_xact_lock(1296257112, h);
    END $$;
    CREATE FUNCTION key_lock_lane(h integer) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        s integer := pg_backend_pid() % 4;
        l integer;
    BEGIN
        FOR l IN 0..3 LOOP
            IF pg_try_advisory_xact_lock(CASE (s + l) % 4 WHEN 0 THEN 1296257108
                                         ELSE 1296257109 + (s + l) % 4 END, h) THEN
                RETURN;
            END IF;
        END LOOP;
        PERFORM pg_advisory_xact_lock(CASE s WHEN 0 THEN 1296257108 ELSE 1296257109 + s END, h);
    END $$;
    -- The counts of a batch of creations: its keys (each once, in key order), the stored
    -- tasks and bytes of those among them under a limit on them (`l_keys`; 0 for the
    -- others: a refused row's counts only name the limit it passed), and, with
    -- `p_active`, every key's active tasks.
    CREATE FUNCTION batch_counts(p_keys text[], l_keys text[], p_active boolean,
        p_fold boolean, OUT k_keys text[], OUT k_tasks bigint[], OUT k_bytes bigint[],
        OUT k_active bigint[])
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        SELECT array_agg(q.k ORDER BY q.k) INTO k_keys
            FROM (SELECT DISTINCT k FROM unnest(p_keys) AS k) q;
        IF cardinality(l_keys) = 0 THEN
            k_tasks := array_fill(0::bigint, ARRAY[cardinality(k_keys)]);
            k_bytes := k_tasks;
        ELSE
            SELECT array_agg(coalesce(u.n_tasks, 0) ORDER BY q.k),
                   array_agg(coalesce(u.n_bytes, 0) ORDER BY q.k)
                INTO k_tasks, k_bytes
                FROM unnest(k_keys) AS q(k)
                LEFT JOIN key_usage(l_keys, p_fold) u ON u.k = q.k;
        END IF;
        IF p_active THEN
            SELECT array_agg((SELECT count(*) FROM tasks t WHERE t.quota_key = q.k
                    AND t.status IN ('working', 'input_required')) ORDER BY q.k)
                INTO k_active FROM unnest(k_keys) AS q(k);
        ELSE
            k_active := array_fill(0::bigint, ARRAY[cardinality(k_keys)]);
        END IF;
    END $$;
    -- One creation is a batch of one (`create_tasks`: its locks, its lanes, and a
    -- duplicate inserted meanwhile answered as one).
    CREATE OR REPLACE FUNCTION create_task(p_task_id text, p_owner text, p_status_message text,
        p_created bigint, p_ttl bigint, p_expires bigint, p_poll bigint, p_method text,
        p_request bytea, p_executor text, p_key text, p_bytes bigint,
        max_active bigint, max_tasks bigint, max_bytes bigint, max_total bigint)
    RETURNS TABLE (new_seq bigint, refused text, n_active bigint, n_tasks bigint,
                   n_bytes bigint, n_total bigint)
    LANGUAGE sql SET search_path FROM CURRENT AS $$
        SELECT b.new_seq, b.refused, b.n_active, b.n_tasks, b.n_bytes, b.n_total
        FROM create_tasks(ARRAY[p_task_id], ARRAY[p_owner], ARRAY[p_status_message],
            ARRAY[p_created], ARRAY[p_ttl], ARRAY[p_expires], ARRAY[p_poll], ARRAY[p_method],
            ARRAY[p_request], ARRAY[p_executor], ARRAY[p_key], ARRAY[p_bytes],
            ARRAY[max_active], ARRAY[max_tasks], ARRAY[max_bytes], ARRAY[max_total]) AS b
    $$;
    -- A terminal transition takes its key's lock, and reads the key's bytes, only under a
    -- per-key byte limit; the store-wide lock only under a store-wide one.
    CREATE OR REPLACE FUNCTION finish_task(p_task_id text, p_to text, p_message text,
        p_at bigint, p_from text[], p_kind text, p_json bytea, max_bytes bigint,
        max_total bigint, over_bytes_message text, over_bytes_json bytea,
        over_total_message text, over_total_json bytea)
    RETURNS SETOF tasks LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        v_key text;
        v_bytes bigint := 0;
        v_total bigint := 0;
        v_adding bigint := coalesce(octet_length(p_json), 0);
        r tasks%ROWTYPE;
    BEGIN
        IF max_bytes IS NOT NULL THEN
            SELECT t.quota_key INTO v_key FROM tasks t WHERE t.task_id = p_task_id;
            IF NOT FOUND THEN
                RETURN;
            END IF;
            PERFORM key_lock_all(hashtext(v_key));
        END IF;
        IF max_total IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(1296257108, 0);
            v_total := store_usage();
        END IF;
        IF max_bytes IS NOT NULL THEN
            SELECT ku.n_bytes INTO v_bytes
                FROM key_usage(ARRAY[v_key], max_total IS NULL) ku;
        END IF;
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
    -- A batch of creations takes the locks of the keys of its limited rows only (a row
    -- with any limit), and reads the counts of those keys only: a batch with no limit
    -- takes no lock and waits for no other writer.
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
        any_active boolean;
        fast boolean;
        l_keys text[];
        c_keys text[];
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
        -- The keys of the limited rows.
        SELECT coalesce(array_agg(DISTINCT x.k), '{}') INTO l_keys
            FROM unnest(p_keys, p_max_active, p_max_tasks, p_max_bytes, p_max_total)
                AS x(k, a, t, b, s)
            WHERE x.a IS NOT NULL OR x.t IS NOT NULL OR x.b IS NOT NULL OR x.s IS NOT NULL;
        -- The keys whose stored tasks or bytes are limited: their counters are read.
        SELECT coalesce(array_agg(DISTINCT x.k), '{}') INTO c_keys
            FROM unnest(p_keys, p_max_tasks, p_max_bytes) AS x(k, t, b)
            WHERE x.t IS NOT NULL OR x.b IS NOT NULL;
        any_total := EXISTS (SELECT 1 FROM unnest(p_max_total) AS m WHERE m IS NOT NULL);
        any_active := EXISTS (SELECT 1 FROM unnest(p_max_active) AS m WHERE m IS NOT NULL);
        -- One lane per limited key when only counts of tasks are limited (no byte limit),
        -- with at most 64 rows of the key here, and the counts read under the lanes leave
        -- room for this batch and 3 more such batches in flight (`usage`); otherwise (the
        -- lanes released with the block) every lane of each limited key, then the
        -- store-wide lock: the counts are then exact, no other limited writer of these
        -- keys being in flight.
        fast := cardinality(l_keys) > 0 AND NOT any_total
            AND NOT EXISTS (SELECT 1 FROM unnest(p_max_bytes) AS m WHERE m IS NOT NULL)
            AND NOT EXISTS (SELECT 1 FROM unnest(p_keys) AS k WHERE k = ANY(l_keys)
                            GROUP BY k HAVING count(*) > 64);
        IF fast THEN
            BEGIN
                FOR h IN SELECT DISTINCT hashtext(k) FROM unnest(l_keys) AS k ORDER BY 1 LOOP
                    PERFORM key_lock_lane(h);
                END LOOP;
                SELECT * INTO k_keys, k_tasks, k_bytes, k_active
                    FROM batch_counts(p_keys, c_keys, any_active, true);
                IF EXISTS (
                    SELECT 1
                    FROM (SELECT x.k, count(*) AS n, min(x.a) AS ma, min(x.t) AS mt
                          FROM unnest(p_keys, p_max_active, p_max_tasks) AS x(k, a, t)
                          WHERE x.k = ANY(l_keys) GROUP BY 1) r
                    JOIN unnest(k_keys, k_active, k_tasks) AS c(k, a, t) ON c.k = r.k
                    WHERE (r.ma IS NOT NULL AND c.a + r.n + 3 * 64 > r.ma)
                       OR (r.mt IS NOT NULL AND c.t + r.n + 3 * 64 > r.mt)) THEN
                    RAISE EXCEPTION USING ERRCODE = 'MT001', MESSAGE = 'near a limit';
                END IF;
            EXCEPTION WHEN SQLSTATE 'MT001' THEN
                fast := false;
            END;
        END IF;
        IF NOT fast THEN
            FOR h IN SELECT DISTINCT hashtext(k) FROM unnest(l_keys) AS k ORDER BY 1 LOOP
                PERFORM key_lock_all(h);
            END LOOP;
            IF any_total THEN
                PERFORM pg_advisory_xact_lock(1296257108, 0);
                v_total := store_usage();
            END IF;
            SELECT * INTO k_keys, k_tasks, k_bytes, k_active
                FROM batch_counts(p_keys, c_keys, any_active, NOT any_total);
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
    -- A batch of terminal transitions takes the locks of the keys of its rows under a
    -- per-key byte limit only, and reads those keys' bytes only: a batch with no byte limit
    -- takes no key lock and waits only for the rows of its own tasks.
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
        l_keys text[];
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
        -- Every lock first, in the global order: the advisory locks of the keys of the
        -- rows under a byte limit, the store-wide one, the tasks' rows in shard order.
        IF EXISTS (SELECT 1 FROM unnest(p_max_bytes) AS m WHERE m IS NOT NULL) THEN
            SELECT coalesce(array_agg(DISTINCT hashtext(t.quota_key)), '{}') INTO v_locked
                FROM tasks t JOIN unnest(p_ids, p_max_bytes) AS x(id, mb) ON t.task_id = x.id
                WHERE x.mb IS NOT NULL;
        ELSE
            v_locked := '{}';
        END IF;
        FOR h IN SELECT x FROM unnest(v_locked) AS x ORDER BY 1 LOOP
            PERFORM key_lock_all(h);
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
        -- The keys under a byte limit; a task stored after its key was looked up (not one
        -- of the keys locked above): its key's lock now, as `finish_task` would take it.
        SELECT coalesce(array_agg(DISTINCT s.k), '{}') INTO l_keys
            FROM unnest(s_ids, s_keys) AS s(id, k)
            JOIN unnest(p_ids, p_max_bytes) AS x(id, mb) ON x.id = s.id
            WHERE x.mb IS NOT NULL;
        FOR h IN SELECT DISTINCT hashtext(x) FROM unnest(l_keys) AS x
                 WHERE NOT hashtext(x) = ANY(v_locked) ORDER BY 1 LOOP
            PERFORM key_lock_all(h);
        END LOOP;
        -- The counts, once.
        IF any_total THEN
            v_total := store_usage();
        END IF;
        SELECT coalesce(array_agg(DISTINCT x), '{}') INTO k_keys FROM unnest(s_keys) AS x;
        IF cardinality(l_keys) = 0 THEN
            k_bytes := array_fill(0::bigint, ARRAY[cardinality(k_keys)]);
        ELSE
            SELECT array_agg(coalesce(u.n_bytes, 0) ORDER BY q.o) INTO k_bytes
                FROM unnest(k_keys) WITH ORDINALITY AS q(k, o)
                LEFT JOIN key_usage(l_keys, NOT any_total) u ON u.k = q.k;
        END IF;
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
    -- The history's trim (the latest 64 entries per task) by the index on (task_id, id):
    -- the tasks whose status changed in an array, each one's entries past the 64th
    -- deleted, whatever the planner guesses of the transition tables' sizes (the join of
    -- version 2 could scan the whole history).
    CREATE OR REPLACE FUNCTION history_update() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    DECLARE
        v_ids text[];
    BEGIN
        SELECT coalesce(array_agg(n.task_id ORDER BY n.seq), '{}') INTO v_ids
            FROM new_rows n JOIN old_rows o ON o.seq = n.seq
            WHERE n.status IS DISTINCT FROM o.status
               OR n.status_message IS DISTINCT FROM o.status_message;
        IF cardinality(v_ids) = 0 THEN
            RETURN NULL;
        END IF;
        INSERT INTO task_history (task_id, status, status_message, at_ms)
            SELECT n.task_id, n.status, n.status_message, n.last_updated_ms
            FROM new_rows n JOIN old_rows o ON o.seq = n.seq
            WHERE n.status IS DISTINCT FROM o.status
               OR n.status_message IS DISTINCT FROM o.status_message
            ORDER BY n.seq;
        DELETE FROM task_history h WHERE h.task_id = ANY(v_ids)
            AND h.id <= (SELECT y.id FROM task_history y WHERE y.task_id = h.task_id
                         ORDER BY y.id DESC OFFSET 64 LIMIT 1);
        RETURN NULL;
    END $$;
