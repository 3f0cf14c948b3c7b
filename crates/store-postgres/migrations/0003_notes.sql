
    CREATE TABLE task_notes (
        task_id text PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
        note    bytea NOT NULL
    );
