//! Metrics of the SQLite store: tasks by status from one `GROUP BY` (correct after a
//! reopen), commit batch sizes reported by the writer thread.

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
