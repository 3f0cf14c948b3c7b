//! The mailbox of running tasks' requests (`TaskStore::inputs`): a request written through
//! one store (the replica running the task) is read through another, answered there only
//! by its answerer, taken once by the first, and every write wakes the task's subscribers
//! on the other store; rows go with their task.

use std::time::Duration;

use mcp_tasks_core::{InputRequest, Limits, TaskStore};
use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::new_task;
use serde_json::json;

use crate::common::TestDb;

fn request(key: &str, n: u64) -> InputRequest {
    InputRequest {
        key: key.to_owned(),
        method: "elicitation/create".to_owned(),
        params: json!({"message": format!("question {n}")}),
        answerer: Some("principal:alice".to_owned()),
    }
}

#[tokio::test]
async fn a_request_written_on_one_replica_is_answered_on_another_and_taken_once() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let a = PgStore::connect(&url).await.expect("store a");
    let b = PgStore::connect(&url).await.expect("store b");
    let (ia, ib) = (a.inputs().expect("mailbox"), b.inputs().expect("mailbox"));

    let mut t = new_task(Some("alice"), Some("exec-a"));
    t.ttl_ms = Some(1);
    let id = t.task_id.clone();
    a.create(t, &Limits::NONE).await.expect("create");

    // B's waiter of the task wakes when A writes a request.
    let mut on_b = b.subscribe(&id);
    on_b.borrow_and_update();
    ia.put_request(&id, &request("k1", 1)).await.unwrap();
    ia.put_request(&id, &request("k2", 2)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), on_b.changed())
        .await
        .expect("B woken by A's request")
        .unwrap();
    let seen = ib.requests(&id).await.unwrap();
    assert_eq!(seen, vec![request("k1", 1), request("k2", 2)]);

    // Another answerer's answer is not taken; the owner's is, once; an unanswered
    // request has nothing to take.
    let mut on_a = a.subscribe(&id);
    on_a.borrow_and_update();
    let bob = ib
        .answer("k1", Some("principal:bob"), &json!({"result": 1}))
        .await
        .unwrap();
    assert!(!bob);
    assert_eq!(ia.take_answer("k1").await.unwrap(), None);
    let answer = json!({"result": {"action": "accept"}});
    assert!(
        ib.answer("k1", Some("principal:alice"), &answer)
            .await
            .unwrap()
    );
    assert!(!ib.answer("k1", None, &json!({"result": 2})).await.unwrap());
    tokio::time::timeout(Duration::from_secs(5), on_a.changed())
        .await
        .expect("A woken by B's answer")
        .unwrap();
    // An answered request is no longer shown as waiting.
    assert_eq!(ib.requests(&id).await.unwrap(), vec![request("k2", 2)]);
    assert_eq!(ia.take_answer("k1").await.unwrap(), Some(answer));
    assert_eq!(ia.take_answer("k1").await.unwrap(), None);
    // Without an answerer (a 2026-07-28 `tasks/update`, checked by the caller) any may.
    assert!(ib.answer("k2", None, &json!({"result": 3})).await.unwrap());
    ia.remove("k2").await.unwrap();
    ia.remove("k2").await.unwrap();
    assert_eq!(ia.take_answer("k2").await.unwrap(), None);
    assert!(ib.requests(&id).await.unwrap().is_empty());

    // Rows go with their task; a task that is gone takes no request, without an error.
    ia.put_request(&id, &request("k3", 3)).await.unwrap();
    assert_eq!(
        b.delete_expired(i64::MAX, 10).await.unwrap(),
        vec![id.clone()]
    );
    assert!(ib.requests(&id).await.unwrap().is_empty());
    ia.put_request(&id, &request("k4", 4)).await.unwrap();
    let rows = db
        .client()
        .await
        .query_one("SELECT count(*) FROM mcp_tasks.task_inputs", &[])
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(rows, 0);
}
