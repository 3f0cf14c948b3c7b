//! Gateway replicas on PostgreSQL: two `mcp-tasks serve --upstream-url` processes on one
//! database, in front of one HTTP upstream. The note of which upstream task backs a task
//! lives in the database (not in a file beside it), so when the replica following an
//! upstream task is killed, the other adopts the task once the dead one's lease has run
//! out and follows the upstream task to its end, in the upstream session that created it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Stdio, TIMEOUT};
use crate::gateway_common::{HttpUpstream, task_result, text_of, until_terminal};
use crate::replicas_failover::PgDb;

/// The note of `task_id` in the database, if any.
fn note_of(db: &PgDb, task_id: &str) -> Option<Value> {
    let url = db.url("");
    let id = task_id.to_owned();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (pg, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            pg.query_opt(
                "SELECT note FROM mcp_tasks.task_notes WHERE task_id = $1",
                &[&id],
            )
            .await
            .unwrap()
            .map(|r| serde_json::from_slice(r.get::<_, &[u8]>(0)).unwrap())
        })
    })
    .join()
    .unwrap()
}

fn wait_note(db: &PgDb, task_id: &str, present: bool) -> Option<Value> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let n = note_of(db, task_id);
        if n.is_some() == present {
            return n;
        }
        assert!(
            Instant::now() < deadline,
            "the note of {task_id} never {}",
            if present { "appeared" } else { "went away" }
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn another_gateway_replica_follows_the_upstream_task_of_a_killed_one() {
    let up = HttpUpstream::start_with_tokens(&[], "tok-gw gateway");
    let db = PgDb::new("gw_replicas");
    let store = db.url("pool=2");
    let args = [
        "--store",
        store.as_str(),
        "--executor-lease",
        "1s",
        "--upstream-url",
        up.url.as_str(),
        "--upstream-header",
        "Authorization: Bearer tok-gw",
    ];
    let mut a = Stdio::spawn(&args);
    a.initialize();
    let mut b = Stdio::spawn(&args);
    b.initialize();
    let task = a.create_task("sleep", json!({"ms": 4000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let noted = wait_note(&db, &id, true).unwrap();
    assert!(noted["upstreamTaskId"].is_string(), "{noted}");
    let session = noted["upstreamSession"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no upstream session in {noted}"))
        .to_owned();
    // The upstream's log shows session ids as digests.
    let session = mcp_tasks_proto::logged::digest(&session);
    a.child.kill().unwrap();
    let _ = a.child.wait();
    drop(a);

    // B takes it up once A's lease has run out, and gets the upstream's outcome.
    let t = until_terminal(&mut b, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(text_of(&task_result(&mut b, &id)["result"]), "slept 4000");
    wait_note(&db, &id, false);
    // In the upstream session that created it (B's own client has no upstream session:
    // a gateway session connects upstream on its first call).
    let sessions = up.sessions.lock().unwrap().clone();
    assert_eq!(sessions.first(), Some(&session), "{sessions:?}");
}
