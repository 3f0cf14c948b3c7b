//! The counters the limits read (stored tasks and bytes per quota key, the store's bytes)
//! stay equal to what the tasks table holds, under concurrent creations, transitions,
//! sweeps and orphan failing on two stores sharing one database.

use std::sync::Arc;

use mcp_tasks_core::{Limits, NewTask, OrphanSweep, Outcome, TaskStore, Transition};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_testkit::conformance::{T0, new_task};

use crate::common::TestDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn usage_counters_match_the_tasks_under_concurrency() {
    let db = TestDb::new().await;
    let (a, b) = db.two_stores("pool=4").await;
    let limits = Limits {
        max_active: Some(10_000),
        max_tasks: Some(100_000),
        max_bytes: Some(1 << 30),
        max_total_bytes: Some(1 << 32),
    };
    let mut joins = Vec::new();
    for w in 0..8u32 {
        let store = if w % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        joins.push(tokio::spawn(async move {
            for i in 0..25u32 {
                let owner = format!("o{}", (w + i) % 3);
                let t = NewTask {
                    ttl_ms: Some(u64::from(i % 4) * 10),
                    request: "x".repeat(usize::try_from(i).unwrap() * 7),
                    ..new_task(Some(&owner), if i % 5 == 0 { None } else { Some("live") })
                };
                let id = t.task_id.clone();
                store.create(t, &limits).await.expect("create");
                let outcome = Outcome::result(
                    &serde_json::json!({"n": "y".repeat(usize::try_from(i).unwrap())}),
                );
                let to = [
                    TaskStatus::Completed,
                    TaskStatus::InputRequired,
                    TaskStatus::Failed,
                ][usize::try_from(i % 3).unwrap()];
                let t = Transition {
                    task_id: id,
                    to,
                    status_message: None,
                    outcome: to.is_terminal().then_some(outcome),
                    at_ms: T0 + 1,
                };
                store
                    .transition_within(t, &limits)
                    .await
                    .expect("transition");
                if i % 7 == 0 {
                    store.delete_expired(T0 + 15, 5).await.expect("sweep");
                    store
                        .fail_orphans(OrphanSweep::new(T0 + 2, "gone"))
                        .await
                        .expect("orphans");
                }
            }
        }));
    }
    for j in joins {
        j.await.expect("worker");
    }
    let c = db.client().await;
    crate::batch::assert_counters_match(&c).await;
    // Every delta folded into the base rows: they alone equal the rows.
    c.batch_execute("SELECT mcp_tasks.fold_usage(NULL, NULL)")
        .await
        .expect("fold");
    let keys: i64 = c
        .query_one("SELECT count(*) FROM mcp_tasks.quota_usage", &[])
        .await
        .expect("keys")
        .get(0);
    assert!(keys > 0);
    crate::batch::assert_counters_match(&c).await;
    // Deleting everything (and folding) brings every counter back to zero (and drops the
    // key rows).
    a.delete_expired(i64::MAX, 100_000).await.expect("sweep");
    c.batch_execute("DELETE FROM mcp_tasks.tasks; SELECT mcp_tasks.fold_usage(NULL, NULL)")
        .await
        .expect("delete the rest, fold");
    let left: i64 = c
        .query_one(
            "SELECT (SELECT count(*) FROM mcp_tasks.quota_usage) \
             + (SELECT sum(abs(bytes))::bigint FROM mcp_tasks.store_bytes)",
            &[],
        )
        .await
        .expect("left")
        .get(0);
    assert_eq!(left, 0);
}
