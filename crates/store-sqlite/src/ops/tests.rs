//! Unit tests of `ops`.

use super::*;

fn plan(conn: &Connection, sql: &str) -> String {
    let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let n = st.parameter_count();
    let params: Vec<i64> = vec![1; n];
    let rows: Vec<String> = st
        .query_map(rusqlite::params_from_iter(params), |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.join(" | ")
}

/// The hot statements use their indexes (no full scan of the tasks table).
#[test]
fn statements_use_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.db");
    let conn = crate::schema::open_writer(&path, &crate::SqliteOptions::default()).unwrap();
    crate::schema::prepare(&conn, &path).unwrap();
    let cases = [
        (
            format!("SELECT {COLS} FROM tasks WHERE owner = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"),
            "tasks_owner_seq",
        ),
        (
            format!("SELECT {COLS} FROM tasks WHERE seq > ?1 ORDER BY seq LIMIT ?2"),
            "INTEGER PRIMARY KEY",
        ),
        (
            "DELETE FROM tasks WHERE seq IN (SELECT seq FROM tasks WHERE expires_at <= ?1 \
             ORDER BY expires_at LIMIT ?2)"
                .into(),
            "tasks_expires",
        ),
        (
            format!(
                "UPDATE tasks INDEXED BY tasks_active_quota SET status = 'failed' WHERE status IN {ACTIVE} AND (executor IS \
                 NULL OR executor NOT IN (SELECT instance FROM executors WHERE lease_until >= ?1))"
            ),
            // The partial index of active tasks (schema 7: no status index).
            "tasks_active_quota",
        ),
        (
            format!(
                "SELECT {COLS} FROM tasks INDEXED BY tasks_active_quota WHERE status IN {ACTIVE} \
                 AND (executor IS NULL OR \
                 executor NOT IN (SELECT instance FROM executors WHERE lease_until >= ?1)) \
                 ORDER BY seq LIMIT ?2"
            ),
            "tasks_active_quota",
        ),
        (
            format!(
                "SELECT status, count(*) FROM tasks INDEXED BY tasks_active_quota \
                 WHERE status IN {ACTIVE} GROUP BY status \
                 UNION ALL SELECT status, tasks FROM status_counts WHERE tasks > 0"
            ),
            "tasks_active_quota",
        ),
        (
            "UPDATE tasks SET status = 'failed' WHERE task_id = ?1 AND status IN ('working')"
                .into(),
            "(task_id=?)",
        ),
    ];
    for (sql, index) in cases {
        let p = plan(&conn, &sql);
        assert!(
            p.contains(index),
            "{sql}\n  plan: {p}\n  expected to use {index}"
        );
        assert!(
            !p.contains("SCAN tasks |") && !p.ends_with("SCAN tasks"),
            "{sql}: full scan: {p}"
        );
    }
}
