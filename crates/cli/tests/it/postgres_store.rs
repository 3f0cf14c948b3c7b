//! `serve --store postgres://...`: a task's result outlives the server, read back by a
//! new server on the same database (named by `MCP_TASKS_STORE` this time). Needs
//! PostgreSQL: the admin URL is `MCP_TASKS_TEST_PG` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); the test creates a database of its own
//! and drops it at the end.

use crate::common::Stdio;

use serde_json::json;

fn admin_url() -> String {
    std::env::var("MCP_TASKS_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Run `sql` on the admin database.
fn admin(sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&admin_url(), tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL: {e}"));
        tokio::spawn(conn);
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    });
}

/// A database of its own, dropped at the end.
struct Db(String);

impl Db {
    fn new() -> Self {
        let name = format!(
            "mcp_tasks_cli_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        admin(&format!("CREATE DATABASE {name}"));
        Self(name)
    }

    fn url(&self) -> String {
        let base = admin_url();
        let base = base.split_once('?').map_or(base.as_str(), |(b, _)| b);
        let (scheme, rest) = base.split_once("://").unwrap();
        let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
        format!("{scheme}://{authority}/{}?pool=4", self.0)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.0));
    }
}

/// Spec: "Receivers MUST ... retain task results until the TTL expires"; with the
/// PostgreSQL store a result is in the database, not in the process: a server restarted
/// on the same database returns it byte for byte.
#[test]
fn a_task_result_survives_a_restart_on_postgres() {
    let db = Db::new();
    let url = db.url();
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
