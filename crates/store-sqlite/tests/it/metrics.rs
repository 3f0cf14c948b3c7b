//! Metrics of the SQLite store: tasks by status (correct after a reopen and after every
//! kind of write), commit batch sizes reported by the writer thread.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::{Limits, Metrics, Outcome, TaskStore, Transition};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
use mcp_tasks_testkit::conformance::T0;

fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_by_status_survive_a_reopen_and_commits_report_their_batch_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let metrics = Metrics::new();
    {
        let store = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
        store.attach_metrics(&metrics);
        let mut handles = Vec::new();
        for i in 0..20 {
            let store = Arc::clone(&store);
            handles.push(tokio::spawn(async move {
                let rec = store
                    .create(common::task(Some("m")), &Limits::NONE)
                    .await
                    .unwrap();
                if i % 4 != 0 {
                    let to = if i % 2 == 0 {
                        TaskStatus::Failed
                    } else {
                        TaskStatus::Completed
                    };
                    let t = Transition {
                        task_id: rec.task.task_id,
                        to,
                        status_message: None,
                        outcome: Some(Outcome::result(&serde_json::json!({}))),
                        at_ms: T0 + 1,
                    };
                    store.transition(t).await.unwrap();
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        let mut counts = store.count_by_status().await.unwrap();
        counts.sort_by_key(|(s, _)| s.as_str());
        assert_eq!(
            counts,
            [
                (TaskStatus::Completed, 10),
                (TaskStatus::Failed, 5),
                (TaskStatus::Working, 5)
            ]
        );
    }
    let text = metrics.render(None, Duration::from_secs(1)).await;
    // 35 write ops, in at most 35 commits: the sum of the batch sizes is the op count.
    assert_eq!(
        sample(&text, "mcp_tasks_store_commit_batch_size_sum"),
        Some(35.0),
        "{text}"
    );
    let commits = sample(&text, "mcp_tasks_store_commit_batch_size_count").unwrap();
    assert!((1.0..=35.0).contains(&commits), "{commits}");
    // A new process (a new store on the same file) sees the same counts at scrape time.
    let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let fresh = Metrics::new();
    let text = fresh.render(Some(&reopened), Duration::from_secs(1)).await;
    assert_eq!(
        sample(&text, r#"mcp_tasks_tasks{status="completed"}"#),
        Some(10.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"mcp_tasks_tasks{status="failed"}"#),
        Some(5.0)
    );
    assert_eq!(
        sample(&text, r#"mcp_tasks_tasks{status="working"}"#),
        Some(5.0)
    );
    assert_eq!(
        sample(&text, r#"mcp_tasks_tasks{status="input_required"}"#),
        Some(0.0)
    );
}

async fn counted(store: &SqliteStore) -> Vec<(TaskStatus, u64)> {
    let mut c = store.count_by_status().await.unwrap();
    c.sort_by_key(|(s, _)| s.as_str());
    c
}

/// The count by status (terminal statuses from `status_counts`, active ones through the
/// partial index) follows every kind of write: creations, terminal transitions (a second
/// one, refused, counts nothing), the orphan sweep, the deletion of expired tasks of any
/// status, and a reopen; after each it equals a count of the rows themselves.
#[tokio::test]
async fn the_count_by_status_follows_every_write_and_matches_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let rows = || -> Vec<(TaskStatus, u64)> {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.prepare("SELECT status, count(*) FROM tasks GROUP BY status ORDER BY status")
            .unwrap()
            .query_map([], |r| {
                let s: String = r.get(0)?;
                let n: i64 = r.get(1)?;
                Ok((TaskStatus::parse(&s).unwrap(), u64::try_from(n).unwrap()))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let end = |id: &str, to: TaskStatus| Transition {
        task_id: id.to_owned(),
        to,
        status_message: None,
        outcome: (to != TaskStatus::Cancelled).then(|| Outcome::result(&serde_json::json!({}))),
        at_ms: T0 + 1,
    };
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let mut ids = Vec::new();
    for _ in 0..8 {
        let rec = store
            .create(common::task(Some("m")), &Limits::NONE)
            .await
            .unwrap();
        ids.push(rec.task.task_id);
    }
    assert_eq!(counted(&store).await, [(TaskStatus::Working, 8)]);
    for (id, to) in [
        (&ids[0], TaskStatus::Completed),
        (&ids[1], TaskStatus::Completed),
        (&ids[2], TaskStatus::Failed),
        (&ids[3], TaskStatus::Cancelled),
        // Refused: already terminal.
        (&ids[0], TaskStatus::Failed),
        (&ids[3], TaskStatus::Completed),
    ] {
        store.transition(end(id, to)).await.unwrap();
    }
    assert_eq!(counted(&store).await, rows());
    assert_eq!(
        counted(&store).await,
        [
            (TaskStatus::Cancelled, 1),
            (TaskStatus::Completed, 2),
            (TaskStatus::Failed, 1),
            (TaskStatus::Working, 4)
        ]
    );
    // The orphan sweep fails the four working tasks (their executor has no lease).
    let failed = store
        .fail_orphans(mcp_tasks_core::OrphanSweep {
            now_ms: T0 + 2,
            message: "lost".into(),
        })
        .await
        .unwrap();
    assert_eq!(failed.len(), 4);
    assert_eq!(counted(&store).await, rows());
    // Expired tasks of each status go, in two sweeps, and leave the counts.
    assert_eq!(
        store.delete_expired(T0 + 120_000, 3).await.unwrap().len(),
        3
    );
    assert_eq!(counted(&store).await, rows());
    let rec = store
        .create(common::task(Some("m")), &Limits::NONE)
        .await
        .unwrap();
    store
        .transition(end(&rec.task.task_id, TaskStatus::Completed))
        .await
        .unwrap();
    assert_eq!(counted(&store).await, rows());
    drop(store);
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(counted(&store).await, rows());
    assert_eq!(
        store.delete_expired(T0 + 120_000, 100).await.unwrap().len(),
        6
    );
    assert_eq!(counted(&store).await, []);
    assert_eq!(rows(), []);
}
