
    CREATE TABLE task_inputs (
        -- The request's JSON-RPC id (the inputRequests key).
        key      text PRIMARY KEY,
        task_id  text NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
        seq      bigint GENERATED ALWAYS AS IDENTITY,
        method   text NOT NULL,
        -- The request's params, JSON.
        params   bytea NOT NULL,
        -- Who may answer it over tasks/result (principal:P or session:S).
        answerer text,
        -- The answer, JSON ({"result": ...} or {"error": ...}), until taken.
        response bytea
    );
    CREATE INDEX task_inputs_task ON task_inputs (task_id, seq);
    CREATE TRIGGER task_inputs_notify AFTER INSERT OR UPDATE ON task_inputs
        FOR EACH ROW EXECUTE FUNCTION notify_task_change();
