//! Keyset pages never skip a task whose insert commits after a later one: a page waits for
//! the inserts in flight that drew a smaller `seq`.

use std::time::Duration;

use mcp_tasks_core::{Limits, ListQuery, ListScope, TaskStore};
use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::new_task;

use crate::common::TestDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_waits_for_an_insert_that_drew_a_smaller_seq() {
    let db = TestDb::new().await;
    let store = PgStore::connect(&db.url("pool=2")).await.expect("store");
    // Another process inserts a task and has not committed yet: it holds seq N.
    let mut other = db.client().await;
    let tx = other.transaction().await.expect("begin");
    let early: i64 = tx
        .query_one(
            "INSERT INTO mcp_tasks.tasks (task_id, quota_key, status, created_ms, \
             last_updated_ms, method, request, bytes) \
             VALUES ('early', 'elsewhere', 'working', 1, 1, 'tools/call', '\\x7b7d', 2) RETURNING seq",
            &[],
        )
        .await
        .expect("insert")
        .get(0);
    // This store inserts a later one (seq N + 1) and commits: of another quota key, and of
    // another shard of the store's byte counter, so that it does not wait for the first.
    let probe = db.client().await;
    let task = loop {
        let t = new_task(None, None);
        let same: bool = probe
            .query_one(
                "SELECT hashtext($1) & 63 = hashtext('early') & 63",
                &[&t.task_id],
            )
            .await
            .expect("shard")
            .get(0);
        if !same {
            break t;
        }
    };
    let late = store.create(task, &Limits::NONE).await.expect("create");
    assert!(late.seq > early);
    // A page read now must not return N + 1 without N: it waits for the insert in flight.
    let page =
        tokio::spawn(async move { store.list(ListQuery::new(ListScope::All, None, 10)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !page.is_finished(),
        "the page did not wait for the insert in flight"
    );
    tx.commit().await.expect("commit");
    let page = tokio::time::timeout(Duration::from_secs(5), page)
        .await
        .expect("the page comes once the insert committed")
        .expect("list task")
        .expect("list");
    let ids: Vec<&str> = page.iter().map(|r| r.task.task_id.as_str()).collect();
    assert_eq!(ids, ["early", late.task.task_id.as_str()]);
}
