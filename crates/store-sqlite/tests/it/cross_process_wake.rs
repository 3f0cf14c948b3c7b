//! Waiters wake on changes committed by another process (or another store) sharing the
//! file: the writer thread watches `PRAGMA data_version` while anyone is subscribed.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks_core::{Limits, Outcome, TaskStore, Transition, TransitionResult};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
use mcp_tasks_testkit::conformance::T0;

fn complete(id: &str) -> Transition {
    Transition {
        task_id: id.to_owned(),
        to: TaskStatus::Completed,
        status_message: Some("done elsewhere".into()),
        outcome: Some(Outcome::result(
            &serde_json::json!({"content": [], "by": "other"}),
        )),
        at_ms: T0 + 50,
    }
}

async fn wait_terminal(store: &SqliteStore, id: &str, within: Duration) -> Duration {
    let started = Instant::now();
    let mut rx = store.subscribe(id);
    loop {
        let rec = store.get(id).await.unwrap().expect("the task exists");
        if rec.status.is_terminal() {
            return started.elapsed();
        }
        tokio::time::timeout(within.saturating_sub(started.elapsed()), rx.changed())
            .await
            .expect("no wake-up for a change committed elsewhere")
            .expect("the signal is alive");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_wakes_on_a_change_made_through_another_store_on_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let b = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let rec = a.create(common::task(None), &Limits::NONE).await.unwrap();
    let waiter = {
        let a = Arc::clone(&a);
        let id = rec.task.task_id.clone();
        tokio::spawn(async move { wait_terminal(&a, &id, Duration::from_secs(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "woke before anything happened");
    let changed = Instant::now();
    assert!(matches!(
        b.transition(complete(&rec.task.task_id)).await.unwrap(),
        TransitionResult::Applied(_)
    ));
    waiter.await.unwrap();
    let latency = changed.elapsed();
    eprintln!("remote wake-up latency: {latency:?}");
    assert!(latency < Duration::from_secs(2), "{latency:?}");
}

/// The child half: complete the task named in the environment, through its own store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completer_child() {
    let (Ok(path), Ok(id)) = (std::env::var("MCP_TASKS_DB"), std::env::var("MCP_TASKS_ID")) else {
        return;
    };
    let store = SqliteStore::open(std::path::Path::new(&path), SqliteOptions::default()).unwrap();
    assert!(matches!(
        store.transition(complete(&id)).await.unwrap(),
        TransitionResult::Applied(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_wakes_on_a_change_made_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let store = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let rec = store
        .create(common::task(None), &Limits::NONE)
        .await
        .unwrap();
    let waiter = {
        let s = Arc::clone(&store);
        let id = rec.task.task_id.clone();
        tokio::spawn(async move { wait_terminal(&s, &id, Duration::from_secs(20)).await })
    };
    let p = path.display().to_string();
    let id = rec.task.task_id.clone();
    let ok = tokio::task::spawn_blocking(move || {
        common::run_child(
            "cross_process_wake::completer_child",
            &[("MCP_TASKS_DB", &p), ("MCP_TASKS_ID", &id)],
            None,
        )
    })
    .await
    .unwrap();
    assert!(ok, "the child process failed");
    waiter.await.unwrap();
    let rec = store.get(&rec.task.task_id).await.unwrap().unwrap();
    assert_eq!(rec.status, TaskStatus::Completed);
    assert_eq!(rec.task.status_message.as_deref(), Some("done elsewhere"));
}
