//! The stored-task and stored-byte counts that the limits are checked against: kept by the
//! writer thread in memory and written once per batch, they stay exact across a reopen,
//! across a failed op, and while another store (another process) writes the same file.

use crate::common;

use mcp_tasks_core::{Limits, StoreError, TaskStore};
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
use mcp_tasks_testkit::conformance::T0;

/// At most `n` stored tasks per requester, nothing else.
fn tasks_at_most(n: u64) -> Limits {
    Limits {
        max_tasks: Some(n),
        ..Limits::NONE
    }
}

async fn create(store: &SqliteStore, limits: &Limits) -> Result<String, StoreError> {
    store
        .create(common::task(Some("q")), limits)
        .await
        .map(|r| r.task.task_id)
}

fn refused(r: Result<String, StoreError>) -> bool {
    matches!(r, Err(StoreError::LimitExceeded { .. }))
}

/// Another store on the same file (as another process would) creates and deletes tasks:
/// this store's next creations see its commits, in both directions.
#[tokio::test]
async fn counts_follow_the_commits_of_another_store_on_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let a = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let b = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let two = tasks_at_most(2);
    create(&a, &two).await.unwrap();
    create(&b, &two).await.unwrap();
    assert!(
        refused(create(&a, &two).await),
        "a sees b's task: 2 stored already"
    );
    // b deletes what expired (both tasks, 60 s TTL): a may create again.
    let gone = b.delete_expired(T0 + 120_000, 10).await.unwrap();
    assert_eq!(gone.len(), 2);
    create(&a, &two).await.unwrap();
    create(&a, &two).await.unwrap();
    assert!(refused(create(&b, &two).await), "b sees a's two new tasks");
}

/// The counts are in the file: a reopened store refuses what the limit refuses.
#[tokio::test]
async fn counts_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let two = tasks_at_most(2);
    {
        let s = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        create(&s, &Limits::NONE).await.unwrap();
        create(&s, &Limits::NONE).await.unwrap();
    }
    let s = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(refused(create(&s, &two).await));
}

/// An op that fails (here a duplicate task id) is rolled back to its savepoint, and what
/// it would have counted is not counted.
#[tokio::test]
async fn a_failed_creation_counts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("q.db"), SqliteOptions::default()).unwrap();
    let two = tasks_at_most(2);
    let t = common::task(Some("q"));
    s.create(t.clone(), &two).await.unwrap();
    assert!(matches!(
        s.create(t, &two).await,
        Err(StoreError::Duplicate(_))
    ));
    create(&s, &two).await.unwrap();
    assert!(refused(create(&s, &two).await));
}

/// At most `n` active tasks per requester, nothing else.
fn active_at_most(n: u32) -> Limits {
    Limits {
        max_active: Some(n),
        ..Limits::NONE
    }
}

/// The active tasks of a quota key (its `max_active` limit) are counted by the writer:
/// a task that ends, is failed by the orphan sweep or is deleted when it expires frees
/// its place, a refused second end frees nothing, and the count survives a reopen and is
/// seen by another store on the file.
#[tokio::test]
async fn active_counts_follow_every_end_of_a_task() {
    use mcp_tasks_core::{OrphanSweep, Outcome, Transition};
    use mcp_tasks_proto::mcp::TaskStatus;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let s = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let two = active_at_most(2);
    let end = |id: &str, to: TaskStatus| Transition {
        task_id: id.to_owned(),
        to,
        status_message: None,
        outcome: Some(Outcome::result(&serde_json::json!({}))),
        at_ms: T0 + 1,
    };
    let a = create(&s, &two).await.unwrap();
    let b = create(&s, &two).await.unwrap();
    assert!(refused(create(&s, &two).await), "two active");
    // Waiting for input is still active.
    s.transition(end(&a, TaskStatus::InputRequired))
        .await
        .unwrap();
    assert!(refused(create(&s, &two).await), "input_required is active");
    s.transition(end(&a, TaskStatus::Completed)).await.unwrap();
    // A second end of the same task is refused and frees no second place.
    s.transition(end(&a, TaskStatus::Failed)).await.unwrap();
    let c = create(&s, &two).await.unwrap();
    assert!(refused(create(&s, &two).await), "b and c active");
    // Another store on the file sees the count, and the orphan sweep (no executor holds a
    // lease) fails b and c: both places free.
    let other = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(
        refused(create(&other, &two).await),
        "the other store sees two"
    );
    let failed = other
        .fail_orphans(OrphanSweep {
            now_ms: T0 + 2,
            message: "lost".into(),
        })
        .await
        .unwrap();
    let mut ids: Vec<_> = failed.into_iter().map(|r| r.task.task_id).collect();
    ids.sort();
    let mut want = vec![b, c];
    want.sort();
    assert_eq!(ids, want);
    let d = create(&s, &two).await.unwrap();
    create(&s, &two).await.unwrap();
    assert!(refused(create(&s, &two).await));
    // The expired tasks go (all of them, active or not): both places free, after a reopen.
    drop((s, other));
    let s = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(
        refused(create(&s, &two).await),
        "the count survives a reopen"
    );
    assert_eq!(s.delete_expired(T0 + 120_000, 100).await.unwrap().len(), 5);
    create(&s, &two).await.unwrap();
    create(&s, &two).await.unwrap();
    assert!(refused(create(&s, &two).await));
    drop(d);
}
