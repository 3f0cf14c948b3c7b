
    CREATE TABLE task_history (
        id             bigserial PRIMARY KEY,
        task_id        text NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
        status         text NOT NULL,
        status_message text,
        at_ms          bigint NOT NULL
    );
    CREATE INDEX task_history_task ON task_history (task_id, id);
    INSERT INTO task_history (task_id, status, status_message, at_ms)
        SELECT task_id, status, status_message, last_updated_ms FROM tasks ORDER BY seq;
    CREATE FUNCTION history_insert() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO task_history (task_id, status, status_message, at_ms)
            SELECT task_id, status, status_message, last_updated_ms FROM new_rows ORDER BY seq;
        RETURN NULL;
    END $$;
    CREATE FUNCTION history_update() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO task_history (task_id, status, status_message, at_ms)
            SELECT n.task_id, n.status, n.status_message, n.last_updated_ms
            FROM new_rows n JOIN old_rows o ON o.seq = n.seq
            WHERE n.status IS DISTINCT FROM o.status
               OR n.status_message IS DISTINCT FROM o.status_message
            ORDER BY n.seq;
        DELETE FROM task_history h USING (
            SELECT x.task_id, (SELECT y.id FROM task_history y WHERE y.task_id = x.task_id
                               ORDER BY y.id DESC OFFSET 64 LIMIT 1) AS cut
            FROM (SELECT DISTINCT n.task_id FROM new_rows n JOIN old_rows o ON o.seq = n.seq
                  WHERE n.status IS DISTINCT FROM o.status
                     OR n.status_message IS DISTINCT FROM o.status_message) x
        ) c WHERE h.task_id = c.task_id AND h.id <= c.cut;
        RETURN NULL;
    END $$;
    CREATE TRIGGER tasks_history_insert AFTER INSERT ON tasks
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION history_insert();
    CREATE TRIGGER tasks_history_update AFTER UPDATE ON tasks
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION history_update();
    