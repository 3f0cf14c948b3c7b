//! Group commit: concurrent writes share transactions, and no caller hears of a change
//! before it is committed.

use crate::common;

use std::sync::Arc;

use mcp_tasks_core::{Limits, Outcome, TaskStore, Transition, TransitionResult};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
use mcp_tasks_testkit::conformance::T0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_commits_and_are_committed_when_answered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gc.db");
    let store = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let before = store.stats();
    let mut handles = Vec::new();
    for i in 0..256 {
        let store = Arc::clone(&store);
        let path = path.clone();
        handles.push(tokio::spawn(async move {
            let rec = store
                .create(common::task(Some("gc")), &Limits::NONE)
                .await
                .unwrap();
            let t = Transition {
                task_id: rec.task.task_id.clone(),
                to: TaskStatus::Completed,
                status_message: None,
                outcome: Some(Outcome::result(&serde_json::json!({ "i": i }))),
                at_ms: T0 + 1,
            };
            let TransitionResult::Applied(done) = store.transition(t).await.unwrap() else {
                panic!("not applied");
            };
            // Answered means committed: an independent connection sees it at once.
            let c = rusqlite::Connection::open(&path).unwrap();
            let (status, outcome): (String, Vec<u8>) = c
                .query_row(
                    "SELECT status, outcome FROM tasks WHERE task_id = ?1",
                    [&done.task.task_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(status, "completed");
            assert_eq!(outcome, done.outcome.unwrap().json.into_bytes());
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let after = store.stats();
    let ops = after.ops - before.ops;
    let batches = after.batches - before.batches;
    eprintln!("{ops} write ops in {batches} commits");
    assert_eq!(ops, 512);
    assert!(
        batches < ops,
        "group commit must put several writes in one transaction ({batches} commits for {ops} ops)"
    );
}
