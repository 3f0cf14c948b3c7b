//! A task's summary read once is answered from memory only while the file is unchanged:
//! every commit, by this store, another store on the file or another process, is seen by
//! the next `get_summary`.

use crate::common;

use mcp_tasks_core::{Limits, Outcome, TaskStore, Transition, TransitionResult};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
use mcp_tasks_testkit::conformance::T0;

fn to(id: &str, status: TaskStatus, message: &str) -> Transition {
    Transition {
        task_id: id.to_owned(),
        to: status,
        status_message: Some(message.into()),
        outcome: status
            .is_terminal()
            .then(|| Outcome::result(&serde_json::json!({"content": []}))),
        at_ms: T0 + 10,
    }
}

/// A new task of `s`: its id.
async fn created(s: &SqliteStore) -> String {
    let rec = s.create(common::task(None), &Limits::NONE).await.unwrap();
    rec.task.task_id
}

/// The summary twice: the second answer comes from memory (the kept-read count rises by
/// one) and equals the first.
async fn read_twice(s: &SqliteStore, id: &str) -> mcp_tasks_core::TaskRecord {
    let first = s.get_summary(id).await.unwrap().expect("the task");
    let kept = s.kept_reads();
    let second = s.get_summary(id).await.unwrap().expect("the task");
    assert_eq!(s.kept_reads(), kept + 1, "the second read was not kept");
    assert_eq!(format!("{first:?}"), format!("{second:?}"));
    second
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_summary_is_never_answered_after_a_commit_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kept.db");
    let a = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let b = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let id = created(&a).await;
    assert_eq!(read_twice(&a, &id).await.status, TaskStatus::Working);

    // A change through the same store, then one through another store on the file.
    for (by, status, message) in [
        (&a, TaskStatus::InputRequired, "asked"),
        (&b, TaskStatus::Working, "answered"),
    ] {
        assert!(matches!(
            by.transition(to(&id, status, message)).await.unwrap(),
            TransitionResult::Applied(_)
        ));
        let r = read_twice(&a, &id).await;
        assert_eq!(
            (r.status, r.task.status_message.as_deref()),
            (status, Some(message))
        );
    }

    // A change by another process (the child completes the task through its own store).
    let p = path.to_str().unwrap();
    assert!(common::run_child(
        "cross_process_wake::completer_child",
        &[("MCP_TASKS_DB", p), ("MCP_TASKS_ID", &id)],
        None
    ));
    let r = read_twice(&a, &id).await;
    assert_eq!(
        (r.status, r.task.status_message.as_deref()),
        (TaskStatus::Completed, Some("done elsewhere"))
    );

    // A deletion by a connection of its own, and an unrelated commit: neither is missed.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("DELETE FROM tasks WHERE task_id = ?1", [&id])
        .unwrap();
    assert!(
        a.get_summary(&id).await.unwrap().is_none(),
        "a deleted task was answered"
    );
    let other = created(&a).await;
    read_twice(&a, &other).await;
    raw.execute_batch("BEGIN IMMEDIATE; CREATE TABLE scratch (x); COMMIT")
        .unwrap();
    let kept = a.kept_reads();
    a.get_summary(&other).await.unwrap().expect("the task");
    assert_eq!(a.kept_reads(), kept, "a summary kept across a commit");
}
