//! The usage counters as a base plus deltas (schema version 14, module `usage`): writes of
//! one quota key without a limit take no lock, so they run side by side (one holds its
//! transaction open while another commits), and so do writers far from a limit on counts
//! of tasks (one lane each); a write near its limit takes every lane of the key and counts
//! what the others committed; after concurrent unlimited and limited writes and folds, the
//! counters equal the rows, and a limit is never passed.

use std::sync::Arc;

use mcp_tasks_core::{Limits, NewTask, Outcome, StoreError, TaskStore, Transition};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::{T0, new_task};

use crate::common::TestDb;

/// One creation by `create_tasks` on `c` (key `key`, 2 bytes, `max_tasks` its only limit):
/// its seq, or why it was refused; `Err` when the statement failed (a statement timeout).
async fn create(
    c: &tokio_postgres::Client,
    id: &str,
    key: &str,
    max_tasks: Option<i64>,
) -> Result<(Option<i64>, Option<String>), tokio_postgres::Error> {
    let none_t: Vec<Option<&str>> = vec![None];
    let none_i: Vec<Option<i64>> = vec![None];
    let r = c
        .query_one(
            "SELECT new_seq, refused FROM mcp_tasks.create_tasks($1, $2, $2, $3, $4, $4, $4, \
             $5, $6, $2, $7, $8, $4, $9, $4, $4)",
            &[
                &vec![id],
                &none_t,
                &vec![1i64],
                &none_i,
                &vec!["tools/call"],
                &vec![&b"{}"[..]],
                &vec![key],
                &vec![2i64],
                &vec![max_tasks],
            ],
        )
        .await?;
    Ok((r.get(0), r.get(1)))
}

/// One completion by `finish_tasks` on `c` (outcome `{}`), under `max_bytes`: the status
/// stored, `None` when not applied.
async fn finish(
    c: &tokio_postgres::Client,
    id: &str,
    max_bytes: Option<i64>,
) -> Result<Option<String>, tokio_postgres::Error> {
    let none_t: Vec<Option<&str>> = vec![None];
    let none_i: Vec<Option<i64>> = vec![None];
    let over: Vec<Option<&[u8]>> = vec![Some(b"{\"over\":1}")];
    let rows = c
        .query(
            "SELECT (b.rec).status FROM mcp_tasks.finish_tasks($1, $2, $3, $4, $5, $6, $7, \
             $8, $9, $3, $10, $3, $10) AS b",
            &[
                &vec![id],
                &vec!["completed"],
                &none_t,
                &vec![2i64],
                &vec!["working,input_required"],
                &vec!["result"],
                &vec![&b"{}"[..]],
                &vec![max_bytes],
                &none_i,
                &over,
            ],
        )
        .await?;
    Ok(rows.first().map(|r| r.get(0)))
}

async fn deltas(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT count(*) FROM mcp_tasks.usage_deltas", &[])
        .await
        .expect("deltas")
        .get(0)
}

#[tokio::test]
async fn unlimited_writers_of_one_key_do_not_wait_for_each_other() {
    let db = TestDb::new().await;
    let _store = PgStore::connect(&db.url(""))
        .await
        .expect("open (migrates)");
    let (c1, c2) = (db.client().await, db.client().await);
    c2.batch_execute("SET statement_timeout = '2s'")
        .await
        .expect("timeout");
    // c1 creates and completes without a limit, and keeps its transaction open.
    c1.batch_execute("BEGIN").await.expect("begin");
    assert!(create(&c1, "u1", "k", None).await.expect("u1").0.is_some());
    assert_eq!(
        finish(&c1, "u1", None).await.expect("finish u1").as_deref(),
        Some("completed")
    );
    // c2 writes the same key without a limit, and with one (c1 holds no lock), meanwhile.
    assert!(
        create(&c2, "u2", "k", None)
            .await
            .expect("u2 not blocked")
            .0
            .is_some()
    );
    assert_eq!(
        finish(&c2, "u2", None).await.expect("finish u2").as_deref(),
        Some("completed")
    );
    let limited = create(&c2, "l1", "k", Some(10))
        .await
        .expect("l1 not blocked");
    assert!(limited.0.is_some(), "{limited:?}");
    c1.batch_execute("COMMIT").await.expect("commit");
    // Two writers far from a limit on the count of tasks take one lane each: neither
    // waits for the other.
    c1.batch_execute("BEGIN").await.expect("begin");
    assert!(
        create(&c1, "f1", "k", Some(1000))
            .await
            .expect("f1")
            .0
            .is_some()
    );
    let far = create(&c2, "f2", "k", Some(1000))
        .await
        .expect("f2 not blocked");
    assert!(far.0.is_some(), "{far:?}");
    c1.batch_execute("ROLLBACK").await.expect("rollback");
    c2.batch_execute("DELETE FROM mcp_tasks.tasks WHERE task_id = 'f2'")
        .await
        .expect("forget f2");
    // A writer near its limit holds every lane of the key to its commit: an unlimited
    // one still passes, a limited one waits (here: until its statement times out).
    c1.batch_execute("BEGIN").await.expect("begin");
    assert!(
        create(&c1, "l2", "k", Some(10))
            .await
            .expect("l2")
            .0
            .is_some()
    );
    assert!(
        create(&c2, "u3", "k", None)
            .await
            .expect("u3 not blocked")
            .0
            .is_some()
    );
    c2.batch_execute("SET statement_timeout = '300ms'")
        .await
        .expect("timeout");
    let waited = create(&c2, "l3", "k", Some(10)).await;
    assert!(waited.is_err(), "a second limited writer waits: {waited:?}");
    c1.batch_execute("COMMIT").await.expect("commit");
    c2.batch_execute("SET statement_timeout = '2s'")
        .await
        .expect("timeout");
    // Stored: u1, u2, l1, l2, u3: a limit of 5 refuses the next, counting the unlimited
    // writers' deltas.
    let (seq, why) = create(&c2, "l4", "k", Some(5)).await.expect("l4");
    assert_eq!((seq, why.as_deref()), (None, Some("limit")));
    assert!(deltas(&c2).await > 0);
    crate::batch::assert_counters_match(&c2).await;
    // A fold moves every delta into the base rows; the counts do not change.
    c2.batch_execute("SELECT mcp_tasks.fold_usage(NULL, NULL)")
        .await
        .expect("fold");
    assert_eq!(deltas(&c2).await, 0);
    let base: (i64, i64) = c2
        .query_one(
            "SELECT tasks, bytes FROM mcp_tasks.quota_usage WHERE quota_key = 'k'",
            &[],
        )
        .await
        .map(|r| (r.get(0), r.get(1)))
        .expect("base");
    assert_eq!(base, (5, 5 * 2 + 2 * 2));
    crate::batch::assert_counters_match(&c2).await;
}

/// Concurrent creations and completions of one key on two stores, half without limits and
/// half under limits far away, with the sweep's folds and a limited writer's own folds
/// running among them: the counters equal the rows throughout, and after a last fold the
/// base rows alone do.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn counts_stay_exact_under_unlimited_and_limited_writers_and_folds() {
    let db = TestDb::new().await;
    let (a, b) = db.two_stores("pool=4").await;
    let far = Limits {
        max_active: Some(100_000),
        max_tasks: Some(100_000),
        max_bytes: Some(1 << 40),
        max_total_bytes: None,
    };
    let mut joins = Vec::new();
    for w in 0..8u32 {
        let store = Arc::clone(if w % 2 == 0 { &a } else { &b });
        joins.push(tokio::spawn(async move {
            let limits = if w < 4 { Limits::NONE } else { far };
            for i in 0..40u32 {
                let t = NewTask {
                    ttl_ms: Some(u64::from(i % 3) * 10),
                    request: "x".repeat(usize::try_from(i).unwrap() * 3),
                    ..new_task(Some("one"), None)
                };
                let id = t.task_id.clone();
                store.create(t, &limits).await.expect("create");
                let t = Transition {
                    task_id: id,
                    to: TaskStatus::Completed,
                    status_message: None,
                    outcome: Some(Outcome::result(&serde_json::json!({"i": i}))),
                    at_ms: T0 + 1,
                };
                store
                    .transition_within(t, &limits)
                    .await
                    .expect("transition");
                if i % 9 == 0 {
                    store.delete_expired(T0 + 15, 7).await.expect("sweep");
                }
            }
        }));
    }
    for j in joins {
        j.await.expect("worker");
    }
    let c = db.client().await;
    crate::batch::assert_counters_match(&c).await;
    c.batch_execute("SELECT mcp_tasks.fold_usage(NULL, NULL)")
        .await
        .expect("fold");
    assert_eq!(deltas(&c).await, 0);
    crate::batch::assert_counters_match(&c).await;
}

/// Concurrent creations of one key under a limit on its active tasks (and, on other
/// workers, on its stored tasks), far from it at first (one lane each), then near it
/// (every lane): exactly the limit's worth are stored, never more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn limits_on_counts_hold_when_writers_share_a_key_in_lanes() {
    let db = TestDb::new().await;
    let (a, b) = db.two_stores("pool=8&writers=4").await;
    for (owner, limits) in [
        ("act", Limits::active(250)),
        (
            "sto",
            Limits {
                max_tasks: Some(250),
                ..Limits::NONE
            },
        ),
    ] {
        let mut joins = Vec::new();
        for w in 0..8u32 {
            let store = Arc::clone(if w % 2 == 0 { &a } else { &b });
            joins.push(tokio::spawn(async move {
                let mut stored = 0u32;
                for _ in 0..40u32 {
                    match store.create(new_task(Some(owner), None), &limits).await {
                        Ok(_) => stored += 1,
                        Err(StoreError::LimitExceeded { .. }) => {}
                        Err(e) => panic!("create: {e}"),
                    }
                }
                stored
            }));
        }
        let mut stored = 0;
        for j in joins {
            stored += j.await.expect("worker");
        }
        assert_eq!(stored, 250, "{owner}: accepted");
        let c = db.client().await;
        let rows: i64 = c
            .query_one(
                "SELECT count(*) FROM mcp_tasks.tasks WHERE owner = $1",
                &[&owner],
            )
            .await
            .expect("rows")
            .get(0);
        assert_eq!(rows, 250, "{owner}: stored");
        crate::batch::assert_counters_match(&c).await;
    }
}
