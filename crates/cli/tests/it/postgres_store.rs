//! `serve --store postgres://...`: a task's result outlives the server, read back by a
//! new server on the same database (named by `MCP_TASKS_STORE` this time). Needs
//! PostgreSQL: the admin URL is `MCP_TASKS_TEST_PG` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); the test creates a database of its own
//! and drops it at the end.

use crate::common::Stdio;

use crate::common::pg::PgDb;
use serde_json::json;

/// Spec: "Receivers MUST ... retain task results until the TTL expires"; with the
/// PostgreSQL store a result is in the database, not in the process: a server restarted
/// on the same database returns it byte for byte.
#[test]
fn a_task_result_survives_a_restart_on_postgres() {
    let db = PgDb::new("cli");
    let url = db.url("pool=4");
    let (id, result) = {
        let mut s = Stdio::spawn(&["--store", &url]);
        s.initialize();
        let task = s.create_task("sleep", json!({"ms": 20}));
        let id = task["taskId"].as_str().unwrap().to_owned();
        s.poll_until(&id, "completed", |t| t["status"] == "completed");
        let result = s.ok("tasks/result", json!({"taskId": id}));
        (id, result)
    };
    // A new server, the store named by the environment this time.
    let mut s = Stdio::spawn_args(&["serve", "--stdio"], &[("MCP_TASKS_STORE", &url)]);
    s.initialize();
    let again = s.ok("tasks/result", json!({"taskId": id}));
    assert_eq!(again, result, "the stored result comes back unchanged");
    let task = s.get_task(&id);
    assert_eq!(task["status"], "completed", "{task}");
    let listed = s.ok("tasks/list", json!({}));
    assert!(
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == json!(id)),
        "{listed}"
    );
    drop(s);
}
