//! Wake-ups across processes: a waiter on one store wakes on a change made through
//! another store on the same database, by LISTEN/NOTIFY and not by the safety-net poll.

use std::time::{Duration, Instant};

use mcp_tasks_core::{Limits, TaskStore, Transition, TransitionResult};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::new_task;

use crate::common::TestDb;

async fn changed(rx: &mut tokio::sync::watch::Receiver<u64>, what: &str) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), rx.changed())
        .await
        .unwrap_or_else(|_| panic!("{what}: no wake-up within 5 s"))
        .expect("the signal stays");
    rx.borrow_and_update();
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiter_wakes_on_a_change_made_through_another_store() {
    let db = TestDb::new().await;
    // The safety-net poll an hour away: only a notification can wake the waiter in time.
    let url = db.url("fallback_poll=1h&pool=2");
    let a = PgStore::connect(&url).await.expect("store a");
    let b = PgStore::connect(&url).await.expect("store b");
    assert!(a.wait_listening(Duration::from_secs(5)).await, "a listens");
    let t = new_task(Some("w"), Some("exec-b"));
    let id = t.task_id.clone();
    // A creation is not announced (nobody elsewhere waits on a task before it exists):
    // the waiter subscribes to the task once it exists, as every waiter does.
    b.create(t, &Limits::NONE).await.expect("create on b");
    let mut rx = a.subscribe(&id);
    rx.borrow_and_update();
    let mut worst = Duration::ZERO;
    for (to, outcome) in [
        (TaskStatus::InputRequired, None),
        (TaskStatus::Working, None),
        (
            TaskStatus::Completed,
            Some(mcp_tasks_core::Outcome::result(
                &serde_json::json!({"ok": true}),
            )),
        ),
    ] {
        let r = b
            .transition(Transition {
                task_id: id.clone(),
                to,
                status_message: None,
                outcome,
                at_ms: 1,
            })
            .await
            .expect("transition on b");
        assert!(matches!(r, TransitionResult::Applied(_)), "{r:?}");
        worst = worst.max(changed(&mut rx, &format!("-> {to} on b")).await);
        // What woke the waiter is there to read on a.
        assert_eq!(a.get(&id).await.expect("get").expect("exists").status, to);
    }
    assert!(worst < Duration::from_secs(2), "slowest wake-up {worst:?}");
    // A deletion on b wakes a's waiter too.
    let gone = b.delete_expired(i64::MAX - 1, 10).await.expect("sweep");
    assert_eq!(gone, vec![id.clone()]);
    changed(&mut rx, "delete on b").await;
}

/// When the listener's connection is killed, it reconnects by itself and notifications
/// flow again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_listener_reconnects_by_itself() {
    let db = TestDb::new().await;
    let url = db.url("fallback_poll=1h&pool=2&application_name=mcp-tasks-listener-test");
    let a = PgStore::connect(&url).await.expect("store a");
    let b = PgStore::connect(&url).await.expect("store b");
    assert!(a.wait_listening(Duration::from_secs(5)).await);
    // Kill every backend that LISTENs in this database (both listeners).
    let killed: i64 = db
        .client()
        .await
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'LISTEN%') k",
            &[],
        )
        .await
        .expect("terminate")
        .get(0);
    assert!(killed >= 1, "no listener found to kill");
    let until = Instant::now() + Duration::from_secs(5);
    while a.is_listening() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        a.wait_listening(Duration::from_secs(10)).await,
        "a listens again"
    );
    let t = new_task(None, None);
    let id = t.task_id.clone();
    b.create(t, &Limits::NONE).await.expect("create on b");
    let mut rx = a.subscribe(&id);
    rx.borrow_and_update();
    b.transition(Transition {
        task_id: id,
        to: TaskStatus::Cancelled,
        status_message: None,
        outcome: None,
        at_ms: 1,
    })
    .await
    .expect("cancel on b");
    changed(&mut rx, "a change on b after the listener reconnected").await;
}
