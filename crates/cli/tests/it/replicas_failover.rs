//! Replica failure on PostgreSQL: three `mcp-tasks serve` replicas on one database, tasks
//! running on each (one waiting in `input_required`), one replica killed with SIGKILL.
//! Once its executor lease (`--executor-lease`) has run out, another replica fails its
//! unfinished tasks with the message used for every orphan, and never re-runs them;
//! every finished result stays readable from the others; the other replicas' tasks go
//! on. Then all three are killed and one is restarted: nothing acknowledged is lost.
//!
//! Needs PostgreSQL: the admin URL is `MCP_TASKS_TEST_PG` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test creates a database of its
//! own and drops it at the end. The replicas are addressed directly (no proxy): each
//! client holds a session on one replica.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub(crate) use crate::common::pg::{PgDb, admin_url};
use crate::http_common::{Client, Server, TIMEOUT};

/// The status message of a task whose executor stopped (`mcp_tasks_core::engine::ORPHAN_MESSAGE`).
pub(crate) const ORPHAN: &str = "The server stopped before the task finished; it was not re-run.";

/// A replica on `url` whose executor lease runs out 2 s after its last renewal (renewed
/// every third of it: a loaded CI machine that delays one renewal by a second must not
/// make a live replica's tasks look orphaned).
fn replica(url: &str) -> Server {
    Server::start(&["--store", url, "--executor-lease", "2s"])
}

/// Poll `tasks/get` until the task is terminal.
async fn terminal(c: &mut Client, id: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let t = c.task(id).await["result"].clone();
        if matches!(
            t["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return t;
        }
        assert!(Instant::now() < deadline, "{id} never ended: {t}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn kill(s: &mut Server) {
    s.child.kill().expect("SIGKILL");
    let _ = s.child.wait();
}

/// An orphan, seen from `c`: failed with the orphan message, its result the stored
/// -32603 error with the same message.
async fn assert_orphaned(c: &mut Client, id: &str) -> Value {
    let t = terminal(c, id).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["statusMessage"], ORPHAN, "{t}");
    let (_, resp) = c.request("tasks/result", json!({ "taskId": id })).await;
    let m = resp.json().await;
    assert_eq!(m["error"]["code"], -32603, "{m}");
    assert_eq!(m["error"]["message"], ORPHAN, "{m}");
    t
}

/// Spec (2025-11-25, tasks): "Receivers MUST ... retain task results until the TTL
/// expires"; and the server's own rule for orphans: a task whose executor stopped ends
/// `failed` once that executor's lease has run out, and is never re-run silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_fails_its_tasks_on_another_and_nothing_acknowledged_is_lost() {
    let db = PgDb::new("failover");
    let url = db.url("pool=4");
    let mut reps: Vec<Server> = (0..3).map(|_| replica(&url)).collect();
    let mut clients = Vec::new();
    for r in &reps {
        let mut c = Client::new(r);
        c.initialize().await;
        clients.push(c);
    }
    // On each replica: a finished task whose result the client has read, and a long one.
    let mut done: Vec<(String, Value)> = Vec::new();
    let mut running = Vec::new();
    for c in &mut clients {
        let id = c.start_task("sleep", json!({ "ms": 10 })).await;
        c.wait_status(&id, "completed").await;
        let r = c.rpc("tasks/result", json!({ "taskId": id })).await;
        done.push((id, r["result"].clone()));
        running.push(c.start_task("sleep", json!({ "ms": 600_000 })).await);
    }
    // And one on A waiting for its requestor's answer.
    let asking = clients[0]
        .start_task("ask", json!({ "question": "Go on?" }))
        .await;
    clients[0].wait_status(&asking, "input_required").await;
    let a_session = clients[0].session.clone();

    kill(&mut reps[0]);
    let killed = Instant::now();
    // B fails A's unfinished tasks, not before A's lease ran out (its last renewal was at
    // most a third of the lease before the kill).
    let t = assert_orphaned(&mut clients[1], &running[0]).await;
    assert!(
        killed.elapsed() >= Duration::from_millis(1200),
        "failed {:?} after the kill, before the 2 s lease could run out",
        killed.elapsed()
    );
    let asked = assert_orphaned(&mut clients[2], &asking).await;
    // A's finished result, read from B and C, byte for byte what A answered.
    for c in &mut clients[1..] {
        let r = c.rpc("tasks/result", json!({ "taskId": done[0].0 })).await;
        assert_eq!(r["result"], done[0].1);
    }
    // A's session is shared through the store (ADR 0006): B serves it after A died, and
    // the task's result reads the same through it.
    let mut ghost = clients[1].clone();
    ghost.session = a_session;
    let r = ghost
        .post(&json!({"jsonrpc": "2.0", "id": 99, "method": "tasks/get",
                       "params": {"taskId": done[0].0}}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let read = ghost.rpc("tasks/get", json!({ "taskId": done[0].0 })).await;
    assert_eq!(read["result"]["status"], "completed", "{read}");

    // Several leases later: B's and C's own tasks still run (their leases are renewed in
    // time), and A's stay failed, unchanged: nothing re-ran them.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for i in 1..3 {
        let t = clients[i].task(&running[i]).await;
        assert_eq!(t["result"]["status"], "working", "{t}");
    }
    assert_eq!(clients[1].task(&running[0]).await["result"], t);
    assert_eq!(clients[1].task(&asking).await["result"], asked);

    // All three die; one comes back: every answer given before is still there.
    kill(&mut reps[1]);
    kill(&mut reps[2]);
    drop(reps);
    let d = replica(&url);
    let mut c = Client::new(&d);
    c.initialize().await;
    for (id, result) in &done {
        let r = c.rpc("tasks/result", json!({ "taskId": id })).await;
        assert_eq!(r["result"], *result, "{id}");
    }
    for id in &running[1..] {
        assert_orphaned(&mut c, id).await;
    }
    assert_eq!(c.task(&running[0]).await["result"], t);
    assert_eq!(c.task(&asking).await["result"], asked);
    // And the new replica works.
    let id = c.start_task("sleep", json!({ "ms": 10 })).await;
    c.wait_status(&id, "completed").await;
}
