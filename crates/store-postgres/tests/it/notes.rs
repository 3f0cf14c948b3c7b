//! The notes kept beside tasks (`TaskStore::notes`): written through one store, read
//! through another on the same database (another replica), replaced, removed, and deleted
//! with their task by the TTL sweep.

use mcp_tasks_core::{Limits, TaskStore};
use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::new_task;

use crate::common::TestDb;

#[tokio::test]
async fn a_note_written_by_one_replica_is_read_by_another_and_goes_with_its_task() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let a = PgStore::connect(&url).await.expect("store a");
    let b = PgStore::connect(&url).await.expect("store b");
    let (na, nb) = (a.notes().expect("notes"), b.notes().expect("notes"));

    let mut t = new_task(Some("o"), Some("exec-a"));
    t.ttl_ms = Some(1);
    let id = t.task_id.clone();
    a.create(t, &Limits::NONE).await.expect("create");
    assert_eq!(nb.note(&id).await.unwrap(), None);
    na.put_note(&id, b"{\"upstreamTaskId\":\"u-1\"}")
        .await
        .unwrap();
    assert_eq!(
        nb.note(&id).await.unwrap().as_deref(),
        Some(&b"{\"upstreamTaskId\":\"u-1\"}"[..])
    );
    // Replaced, then removed (twice: removing nothing is fine).
    nb.put_note(&id, b"v2").await.unwrap();
    assert_eq!(na.note(&id).await.unwrap().as_deref(), Some(&b"v2"[..]));
    na.remove_note(&id).await.unwrap();
    na.remove_note(&id).await.unwrap();
    assert_eq!(nb.note(&id).await.unwrap(), None);

    // A note goes with its task when the TTL sweep deletes it; a task that is gone takes
    // no note, without an error.
    na.put_note(&id, b"v3").await.unwrap();
    let gone = b.delete_expired(i64::MAX, 10).await.expect("sweep");
    assert_eq!(gone, vec![id.clone()]);
    assert_eq!(na.note(&id).await.unwrap(), None);
    na.put_note(&id, b"late").await.unwrap();
    assert_eq!(na.note(&id).await.unwrap(), None);
    let rows = db
        .client()
        .await
        .query_one("SELECT count(*) FROM mcp_tasks.task_notes", &[])
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(rows, 0);
}
