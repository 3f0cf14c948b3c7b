//! The schema's migrations: `MIGRATIONS[n]` takes a database from version `n` to `n + 1`.
//! Each is run once, in the transaction of [`crate::schema`]'s `migrate`; a released one
//! is never edited (the files written by it hold its text), a change is a new one.

/// Migrations: `MIGRATIONS[n]` takes a database from version `n` to `n + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first schema.
    "
    CREATE TABLE tasks (
        -- Insertion order for keyset pagination; AUTOINCREMENT never reuses a value, so a
        -- cursor never points into rows created later.
        seq              INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id          TEXT NOT NULL UNIQUE,
        owner            TEXT,
        status           TEXT NOT NULL CHECK (status IN
                             ('working', 'input_required', 'completed', 'failed', 'cancelled')),
        status_message   TEXT,
        created_ms       INTEGER NOT NULL,
        last_updated_ms  INTEGER NOT NULL,
        -- u64 milliseconds stored with their bit pattern (i64), NULL = unlimited.
        ttl_ms           INTEGER,
        -- created_ms + ttl_ms, saturating; NULL = never expires.
        expires_at       INTEGER,
        poll_interval_ms INTEGER,
        method           TEXT NOT NULL,
        request          TEXT NOT NULL,
        outcome_kind     TEXT CHECK (outcome_kind IN ('result', 'error')),
        -- The exact bytes of the JSON-RPC result or error object.
        outcome          BLOB,
        executor         TEXT
    );
    CREATE INDEX tasks_owner_seq ON tasks (owner, seq);
    CREATE INDEX tasks_expires ON tasks (expires_at) WHERE expires_at IS NOT NULL;
    CREATE INDEX tasks_active_owner ON tasks (owner)
        WHERE status IN ('working', 'input_required');
    CREATE INDEX tasks_active_executor ON tasks (executor)
        WHERE status IN ('working', 'input_required');
    CREATE TABLE executors (
        instance    TEXT PRIMARY KEY,
        lease_until INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value BLOB NOT NULL
    ) WITHOUT ROWID;
    ",
    // 1 -> 2: per-requester storage quotas. Each task names what it counts against
    // (`quota_key`: the principal, else the session, else 'local' for the stdio peer; tasks
    // stored before were counted by owner, so they keep that) and the bytes it stores
    // (request and outcome). `quota_usage` keeps, per key and in total (key ''), the tasks
    // and bytes stored, maintained by triggers on every insert, outcome and delete (also the
    // sweeps'), so that a creation checks its limits with two primary-key reads.
    "
    ALTER TABLE tasks ADD COLUMN quota_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE tasks SET
        quota_key = CASE WHEN owner IS NULL THEN 'local' ELSE 'principal:' || owner END,
        bytes = length(CAST(request AS BLOB)) + ifnull(length(outcome), 0);
    DROP INDEX tasks_active_owner;
    CREATE INDEX tasks_active_quota ON tasks (quota_key)
        WHERE status IN ('working', 'input_required');
    CREATE TABLE quota_usage (
        quota_key TEXT PRIMARY KEY,
        tasks     INTEGER NOT NULL,
        bytes     INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO quota_usage (quota_key, tasks, bytes)
        SELECT quota_key, count(*), sum(bytes) FROM tasks GROUP BY quota_key;
    INSERT INTO quota_usage (quota_key, tasks, bytes)
        SELECT '', count(*), ifnull(sum(bytes), 0) FROM tasks;
    CREATE TRIGGER quota_usage_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO quota_usage (quota_key, tasks, bytes) VALUES (NEW.quota_key, 1, NEW.bytes)
            ON CONFLICT (quota_key) DO UPDATE SET
                tasks = tasks + 1, bytes = bytes + excluded.bytes;
        UPDATE quota_usage SET tasks = tasks + 1, bytes = bytes + NEW.bytes
            WHERE quota_key = '';
    END;
    CREATE TRIGGER quota_usage_bytes AFTER UPDATE OF bytes ON tasks BEGIN
        UPDATE quota_usage SET bytes = bytes + NEW.bytes - OLD.bytes
            WHERE quota_key IN (NEW.quota_key, '');
    END;
    CREATE TRIGGER quota_usage_delete AFTER DELETE ON tasks BEGIN
        UPDATE quota_usage SET tasks = tasks - 1, bytes = bytes - OLD.bytes
            WHERE quota_key IN (OLD.quota_key, '');
        DELETE FROM quota_usage WHERE quota_key = OLD.quota_key AND quota_key <> ''
            AND tasks <= 0;
    END;
    ",
    // 2 -> 3: each task's status history (the dashboard's detail view), written by
    // triggers in the statement of every insert and status change, so in the same atomic
    // step; the latest 64 entries per task kept (`mcp_tasks_core::HISTORY_MAX`); deleted
    // with the task. Tasks stored before get one entry: their current status.
    "
    CREATE TABLE task_history (
        id             INTEGER PRIMARY KEY,
        task_id        TEXT NOT NULL,
        status         TEXT NOT NULL,
        status_message TEXT,
        at_ms          INTEGER NOT NULL
    );
    CREATE INDEX task_history_task ON task_history (task_id, id);
    INSERT INTO task_history (task_id, status, status_message, at_ms)
        SELECT task_id, status, status_message, last_updated_ms FROM tasks ORDER BY seq;
    CREATE TRIGGER task_history_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO task_history (task_id, status, status_message, at_ms)
            VALUES (NEW.task_id, NEW.status, NEW.status_message, NEW.last_updated_ms);
    END;
    CREATE TRIGGER task_history_update AFTER UPDATE OF status, status_message ON tasks
    WHEN NEW.status IS NOT OLD.status OR NEW.status_message IS NOT OLD.status_message
    BEGIN
        INSERT INTO task_history (task_id, status, status_message, at_ms)
            VALUES (NEW.task_id, NEW.status, NEW.status_message, NEW.last_updated_ms);
        DELETE FROM task_history WHERE task_id = NEW.task_id AND id <= (
            SELECT id FROM task_history WHERE task_id = NEW.task_id
            ORDER BY id DESC LIMIT 1 OFFSET 64);
    END;
    CREATE TRIGGER task_history_delete AFTER DELETE ON tasks BEGIN
        DELETE FROM task_history WHERE task_id = OLD.task_id;
    END;
    ",
    // 3 -> 4: an index on `status`, so that counting the stored tasks by status (the
    // `/metrics` gauge of tasks by status, on every scrape) reads the index, not every
    // row with its request and outcome.
    "
    CREATE INDEX tasks_status ON tasks (status);
    ",
    // 4 -> 5: the history and the quota counts without per-row trigger work. Each task
    // carries its status history in its own row (`history`: one line of JSON per entry,
    // oldest first, `{"s": status, "m": message, "at": ms}`; `history_n` entries, at most
    // 64), appended by the statement that changes the status and deleted with the row;
    // `quota_usage` is written by the writer thread once per batch, in the batch's
    // transaction (see `usage.rs`), from the changes its ops made.
    "
    DROP TRIGGER quota_usage_insert;
    DROP TRIGGER quota_usage_bytes;
    DROP TRIGGER quota_usage_delete;
    DROP TRIGGER task_history_insert;
    DROP TRIGGER task_history_update;
    DROP TRIGGER task_history_delete;
    ALTER TABLE tasks ADD COLUMN history TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN history_n INTEGER NOT NULL DEFAULT 0;
    UPDATE tasks SET
        history = ifnull((SELECT group_concat(
                json_object('s', h.status, 'm', h.status_message, 'at', h.at_ms) || char(10),
                '' ORDER BY h.id)
            FROM task_history h WHERE h.task_id = tasks.task_id), ''),
        history_n = (SELECT count(*) FROM task_history h WHERE h.task_id = tasks.task_id);
    DROP TABLE task_history;
    ",
    // 5 -> 6: the `status` CHECK as comparisons, not an `IN` list. SQLite tests a
    // constant `IN` list of more than two values by building an ephemeral b-tree of it
    // (open, a zeroed 4 KiB page, five inserts, close) in every statement that writes the
    // column: once in each task's `INSERT` and once in each status `UPDATE`, ~6 % of a
    // task creation's instructions. The same five values are accepted. A constraint
    // cannot be altered in place, so the table is rebuilt (every row, every index, the
    // `AUTOINCREMENT` high-water mark of `seq`, so that no cursor ever sees a value again).
    "
    CREATE TABLE tasks_v6 (
        seq              INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id          TEXT NOT NULL UNIQUE,
        owner            TEXT,
        status           TEXT NOT NULL CHECK (status = 'working' OR status = 'input_required'
                             OR status = 'completed' OR status = 'failed'
                             OR status = 'cancelled'),
        status_message   TEXT,
        created_ms       INTEGER NOT NULL,
        last_updated_ms  INTEGER NOT NULL,
        ttl_ms           INTEGER,
        expires_at       INTEGER,
        poll_interval_ms INTEGER,
        method           TEXT NOT NULL,
        request          TEXT NOT NULL,
        outcome_kind     TEXT CHECK (outcome_kind IN ('result', 'error')),
        outcome          BLOB,
        executor         TEXT,
        quota_key        TEXT NOT NULL DEFAULT '',
        bytes            INTEGER NOT NULL DEFAULT 0,
        history          TEXT NOT NULL DEFAULT '',
        history_n        INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO tasks_v6 (seq, task_id, owner, status, status_message, created_ms,
        last_updated_ms, ttl_ms, expires_at, poll_interval_ms, method, request, outcome_kind,
        outcome, executor, quota_key, bytes, history, history_n)
    SELECT seq, task_id, owner, status, status_message, created_ms, last_updated_ms, ttl_ms,
        expires_at, poll_interval_ms, method, request, outcome_kind, outcome, executor,
        quota_key, bytes, history, history_n
    FROM tasks ORDER BY seq;
    DELETE FROM sqlite_sequence WHERE name = 'tasks_v6';
    INSERT INTO sqlite_sequence (name, seq)
        SELECT 'tasks_v6', seq FROM sqlite_sequence WHERE name = 'tasks';
    DROP TABLE tasks;
    ALTER TABLE tasks_v6 RENAME TO tasks;
    CREATE INDEX tasks_owner_seq ON tasks (owner, seq);
    CREATE INDEX tasks_expires ON tasks (expires_at) WHERE expires_at IS NOT NULL;
    CREATE INDEX tasks_active_executor ON tasks (executor)
        WHERE status IN ('working', 'input_required');
    CREATE INDEX tasks_active_quota ON tasks (quota_key)
        WHERE status IN ('working', 'input_required');
    CREATE INDEX tasks_status ON tasks (status);
    ",
    // 6 -> 7: two indexes fewer on every task's write. `tasks_status` (a full index on
    // the status, schema 4) cost an entry in each task's `INSERT` and a delete and an
    // insert in each status `UPDATE` (~5 % of a creation's instructions), for the count
    // by status of a metrics scrape and the orphan sweep: the non-terminal statuses are
    // now counted and swept through the partial index `tasks_active_quota`, and the
    // terminal ones are counted in `status_counts`, written by the writer thread once per
    // batch in the batch's transaction, like `quota_usage` (see `usage.rs`).
    // `tasks_active_executor` was read by no statement since schema 4. The active tasks of
    // a quota key (its `max_active` limit) are counted in `quota_usage.active` by the
    // writer, like its stored tasks and bytes, instead of by a range read of the partial
    // index at every creation (up to the limit's 1,000 entries).
    "
    CREATE TABLE status_counts (
        status TEXT PRIMARY KEY CHECK (status = 'completed' OR status = 'failed'
                   OR status = 'cancelled'),
        tasks  INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO status_counts (status, tasks)
        SELECT s.column1, (SELECT count(*) FROM tasks t WHERE t.status = s.column1)
        FROM (VALUES ('completed'), ('failed'), ('cancelled')) s;
    DROP INDEX tasks_status;
    DROP INDEX tasks_active_executor;
    ALTER TABLE quota_usage ADD COLUMN active INTEGER NOT NULL DEFAULT 0;
    UPDATE quota_usage SET active = (SELECT count(*) FROM tasks t
        WHERE t.quota_key = quota_usage.quota_key AND t.status IN ('working', 'input_required'))
        WHERE quota_key <> '';
    ",
];
