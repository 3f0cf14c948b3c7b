//! Crash safety: the HTTP server on SQLite, under a 64-client load with 1,000 completed and
//! 200 running tasks, is killed with SIGKILL and restarted. Every state a client was told
//! survives, the 1,000 results are byte-identical, the 200 are `failed` with a message
//! saying the server stopped, and `PRAGMA integrity_check` is `ok`.

use crate::http_common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use http_common::{Client, Server};
use serde_json::{Value, json};

const CLIENTS: usize = 64;
const COMPLETED: usize = 1000;
const RUNNING: usize = 200;

/// What the first server told a client about one task.
struct Told {
    created: Value,
    result: Option<String>,
}

async fn load(server: &Server) -> HashMap<String, Told> {
    let mut joins = Vec::new();
    for c in 0..CLIENTS {
        let mut client = Client::new(server);
        joins.push(tokio::spawn(async move {
            client.initialize().await;
            let mut told = Vec::new();
            // Completed tasks: created, then their result fetched (tasks/result blocks).
            let share = COMPLETED / CLIENTS + usize::from(c < COMPLETED % CLIENTS);
            for i in 0..share {
                let m = client.rpc("tools/call", json!({"name": "sleep", "arguments": {"ms": (c * 1000 + i) % 3}, "task": {"ttl": 3_600_000}})).await;
                let task = m["result"]["task"].clone();
                let id = task["taskId"].as_str().unwrap().to_owned();
                let (rid, resp) = client.request("tasks/result", json!({"taskId": id})).await;
                let msg = if resp.is_sse() {
                    let mut sse = resp.sse();
                    sse.until_response().await.into_iter().filter_map(|e| e.message()).find(|m| m["id"] == json!(rid)).unwrap()
                } else {
                    resp.json().await
                };
                let result = msg["result"].to_string();
                told.push((id, Told { created: task, result: Some(result) }));
            }
            let share = RUNNING / CLIENTS + usize::from(c < RUNNING % CLIENTS);
            for _ in 0..share {
                let m = client.rpc("tools/call", json!({"name": "sleep", "arguments": {"ms": 3_600_000}, "task": {"ttl": 3_600_000}})).await;
                let task = m["result"]["task"].clone();
                told.push((task["taskId"].as_str().unwrap().to_owned(), Told { created: task, result: None }));
            }
            told
        }));
    }
    let mut all = HashMap::new();
    for j in joins {
        all.extend(j.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_that_was_told() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let store = format!("sqlite:{}", db.display());
    let args = [
        "--store",
        store.as_str(),
        "--executor-lease",
        "1s",
        "--max-active-tasks",
        "10000",
    ];

    let mut first = Server::start(&args);
    let told = load(&first).await;
    assert_eq!(told.len(), COMPLETED + RUNNING);
    first.child.kill().unwrap(); // SIGKILL
    first.child.wait().unwrap();

    let second = Server::start(&args);
    let mut client = Client::new(&second);
    client.initialize().await;
    // The dead process's lease runs out after 1 s; the restarted one fails its tasks.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut checked = 0;
    for (id, t) in &told {
        let got = loop {
            let m = client.rpc("tasks/get", json!({"taskId": id})).await;
            let task = m["result"].clone();
            if t.result.is_some() || task["status"] != "working" || Instant::now() > deadline {
                break task;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(got["createdAt"], t.created["createdAt"], "{id}");
        assert_eq!(got["ttl"], t.created["ttl"], "{id}");
        assert_eq!(got["pollInterval"], t.created["pollInterval"], "{id}");
        match &t.result {
            Some(result) => {
                assert_eq!(got["status"], "completed", "{id}: {got}");
                let m = client.rpc("tasks/result", json!({"taskId": id})).await;
                assert_eq!(
                    &m["result"].to_string(),
                    result,
                    "{id}: result changed across the crash"
                );
            }
            None => {
                assert_eq!(got["status"], "failed", "{id}: {got}");
                let msg = got["statusMessage"].as_str().unwrap();
                assert!(msg.contains("server stopped"), "{msg}");
                let m = client.rpc("tasks/result", json!({"taskId": id})).await;
                assert_eq!(m["error"]["code"], -32603, "{m}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, COMPLETED + RUNNING);
    drop(second);

    let conn = rusqlite::Connection::open(&db).unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}
