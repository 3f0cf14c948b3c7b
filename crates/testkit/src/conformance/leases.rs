//! Checks of wake-ups, the cursor key, executor leases, and reopening a durable store.

use std::collections::BTreeSet;
use std::future::Future;

use mcp_tasks_core::{ListScope, NewTask, OutcomeKind, TaskRecord};
use mcp_tasks_proto::mcp::TaskStatus;
use serde_json::Value;

use super::helpers::*;
use super::{Leases, Store, T0};

// ---------------------------------------------------------------------------------------
// Wake-ups, keys, leases.

/// A subscriber wakes after the task is created, after each applied transition, after it
/// is deleted by `delete_expired`, and after `fail_orphans` fails it.
pub async fn wake_ups(store: Store, leases: Leases) {
    let t = NewTask {
        ttl_ms: Some(100),
        ..new_task(Some("w"), Some("dead-executor"))
    };
    let id = t.task_id.clone();
    let mut rx = store.subscribe(&id);
    rx.borrow_and_update();
    create(&store, t).await;
    woke(&mut rx, "create").await;
    ask_input(&store, &id, None, T0 + 1).await;
    woke(&mut rx, "working -> input_required").await;
    apply_ok(
        &store,
        tr(&id, TaskStatus::Working, None, None, T0 + 2),
        "-> working",
    )
    .await;
    woke(&mut rx, "input_required -> working").await;
    // Several waiters on one task all wake.
    let mut others: Vec<_> = (0..3).map(|_| store.subscribe(&id)).collect();
    for o in &mut others {
        o.borrow_and_update();
    }
    complete(&store, &id, T0 + 3).await;
    woke(&mut rx, "working -> completed").await;
    for o in &mut others {
        woke(o, "working -> completed (another waiter)").await;
    }
    // A waiter of another task does not count: nothing to assert about spurious wake-ups.
    let deleted = store
        .delete_expired(T0 + 100, 100)
        .await
        .expect("delete_expired");
    assert_eq!(deleted, vec![id.clone()]);
    woke(&mut rx, "delete_expired").await;

    if leases == Leases::Tracked {
        let t = new_task(Some("w"), Some("dead-executor"));
        let id = t.task_id.clone();
        create(&store, t).await;
        let mut rx = store.subscribe(&id);
        rx.borrow_and_update();
        let failed = fail_orphans(&store, T0 + 10, "gone").await;
        assert_eq!(ids(&failed), vec![id]);
        woke(&mut rx, "fail_orphans").await;
    }
}

/// The cursor key is the same on every call of one store and differs between stores
/// (it is random, not a constant).
pub async fn cursor_key_stable(store: Store, other: Store) {
    let k1 = store.cursor_key().await.expect("cursor_key");
    let k2 = store.cursor_key().await.expect("cursor_key");
    assert_eq!(k1, k2, "the cursor key must not change between calls");
    assert_ne!(k1, [0u8; 32], "the cursor key must be random");
    let k3 = other.cursor_key().await.expect("cursor_key");
    assert_ne!(k1, k3, "two stores must not share a cursor key");
}

/// `fail_orphans` fails, with the message as `statusMessage` and a JSON-RPC internal error
/// (`{"code":-32603,"message":<message>}`) as outcome, every non-terminal task whose
/// executor's lease expired, that has an executor with no lease, or no executor at all;
/// never a task of a live executor, never a terminal task; and returns what it changed.
///
/// Design: "a task whose executor died is marked `failed` with a clear `statusMessage`;
/// never re-run silently".
pub async fn lease_orphans(store: Store) {
    let msg = "The server stopped before the task finished; it was not re-run.";
    store
        .heartbeat("live", T0 + 10_000)
        .await
        .expect("heartbeat");
    store.heartbeat("dead", T0 + 500).await.expect("heartbeat");
    let live = create(&store, new_task(Some("o"), Some("live"))).await;
    let live_input = create(&store, new_task(Some("o"), Some("live"))).await;
    let live_input = ask_input(&store, &live_input.task.task_id, Some("q"), T0 + 5).await;
    let dead = create(&store, new_task(Some("o"), Some("dead"))).await;
    let dead_input = create(&store, new_task(Some("o"), Some("dead"))).await;
    ask_input(&store, &dead_input.task.task_id, Some("q"), T0 + 5).await;
    let unknown = create(&store, new_task(Some("o"), Some("never-heartbeated"))).await;
    let nobody = create(&store, new_task(Some("o"), None)).await;
    let dead_done = create(&store, new_task(Some("o"), Some("dead"))).await;
    let dead_done = apply_ok(
        &store,
        tr(
            &dead_done.task.task_id,
            TaskStatus::Completed,
            None,
            Some(result_outcome("ok")),
            T0 + 6,
        ),
        "-> completed",
    )
    .await;

    let set = |recs: &[TaskRecord]| ids(recs).into_iter().collect::<BTreeSet<String>>();
    let of = |recs: &[&TaskRecord]| {
        recs.iter()
            .map(|r| r.task.task_id.clone())
            .collect::<BTreeSet<String>>()
    };
    // At the lease's last millisecond "dead" is still alive; the tasks of an executor that
    // never heartbeated, or of none, are orphans already.
    let first = fail_orphans(&store, T0 + 500, msg).await;
    assert_eq!(
        set(&first),
        of(&[&unknown, &nobody]),
        "at T0+500 only the tasks without any lease are orphans (a lease is live up to and including lease_until)"
    );
    let now = T0 + 1000;
    let failed = fail_orphans(&store, now, msg).await;
    assert_eq!(
        set(&failed),
        of(&[&dead, &dead_input]),
        "the tasks of an expired lease are orphans"
    );
    let failed: Vec<TaskRecord> = first.into_iter().chain(failed).collect();
    let expected = of(&[&dead, &dead_input, &unknown, &nobody]);
    for id in &expected {
        let rec = must_get(&store, id).await;
        assert_eq!(rec.status, TaskStatus::Failed, "{id}");
        assert_eq!(rec.task.status_message.as_deref(), Some(msg), "{id}");
        assert_eq!(
            rec.task.executor, None,
            "{id}: a terminal task has no executor"
        );
        let outcome = rec
            .outcome
            .as_ref()
            .expect("a failed orphan has an outcome");
        assert_eq!(outcome.kind, OutcomeKind::Error);
        let v: Value = serde_json::from_str(&outcome.json).expect("the outcome is JSON");
        assert_eq!(v, serde_json::json!({"code": -32603, "message": msg}));
        if let Some(r) = failed.iter().find(|r| &r.task.task_id == id) {
            assert_eq!(r, &rec, "fail_orphans returns the records as stored");
        }
    }
    assert_eq!(
        must_get(&store, &live.task.task_id).await,
        live,
        "a live executor's task is untouched"
    );
    assert_eq!(must_get(&store, &live_input.task.task_id).await, live_input);
    assert_eq!(
        must_get(&store, &dead_done.task.task_id).await,
        dead_done,
        "a terminal task is untouched"
    );
    assert!(
        fail_orphans(&store, now, msg).await.is_empty(),
        "nothing is failed twice"
    );

    // Renewal keeps the live executor's tasks alive; lapsing fails them.
    store
        .heartbeat("live", T0 + 20_000)
        .await
        .expect("heartbeat");
    assert!(fail_orphans(&store, T0 + 15_000, msg).await.is_empty());
    let lapsed = fail_orphans(&store, T0 + 20_001, msg).await;
    let got: BTreeSet<String> = ids(&lapsed).into_iter().collect();
    let expected: BTreeSet<String> =
        [live.task.task_id.clone(), live_input.task.task_id.clone()].into();
    assert_eq!(got, expected, "tasks of a lapsed lease fail");
    // A new executor instance with a fresh lease is not affected by old sweeps.
    store
        .heartbeat("fresh", T0 + 40_000)
        .await
        .expect("heartbeat");
    let fresh = create(&store, new_task(Some("o"), Some("fresh"))).await;
    assert!(fail_orphans(&store, T0 + 30_000, msg).await.is_empty());
    assert_eq!(must_get(&store, &fresh.task.task_id).await, fresh);
}

/// In a process-local store every executor is alive while the store is: `heartbeat`
/// succeeds and `fail_orphans` fails nothing, at any time.
pub async fn process_local_leases(store: Store) {
    store.heartbeat("me", T0 + 10).await.expect("heartbeat");
    let a = create(&store, new_task(Some("o"), Some("me"))).await;
    let b = create(&store, new_task(Some("o"), Some("someone-else"))).await;
    let c = create(&store, new_task(Some("o"), None)).await;
    assert!(fail_orphans(&store, i64::MAX, "x").await.is_empty());
    for r in [a, b, c] {
        assert_eq!(must_get(&store, &r.task.task_id).await, r);
    }
}

/// For durable stores: everything survives closing and reopening. `open` must open the
/// *same* storage each time (and the previous handle is dropped before the next open).
///
/// Checks every field of tasks in every status, outcome bytes, list order, the cursor key,
/// leases, and that seqs continue after the largest ever handed out.
pub async fn durable_reopen<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Store>,
{
    let store = open().await;
    let key = store.cursor_key().await.expect("cursor_key");
    store
        .heartbeat("exec", T0 + 50_000)
        .await
        .expect("heartbeat");
    let mut recs = Vec::new();
    recs.push(create(&store, new_task(Some("alice"), Some("exec"))).await);
    let t = create(&store, new_task(None, Some("exec"))).await;
    recs.push(ask_input(&store, &t.task.task_id, Some("q?"), T0 + 7).await);
    for (to, outcome) in [
        (TaskStatus::Completed, result_outcome("kept")),
        (TaskStatus::Failed, error_outcome(-32603, "kept")),
        (TaskStatus::Cancelled, error_outcome(-32800, "kept")),
    ] {
        let t = create(&store, new_task(Some("bob"), Some("exec"))).await;
        recs.push(
            apply_ok(
                &store,
                tr(&t.task.task_id, to, Some("end"), Some(outcome), T0 + 9),
                "-> terminal",
            )
            .await,
        );
    }
    let newest = create_expiring(&store).await;
    assert_eq!(
        store
            .delete_expired(T0 + 1, 10)
            .await
            .expect("delete_expired"),
        vec![newest.task.task_id.clone()]
    );
    drop(store);

    let store = open().await;
    assert_eq!(
        store.cursor_key().await.expect("cursor_key"),
        key,
        "the cursor key survives a reopen"
    );
    for r in &recs {
        assert_eq!(
            &must_get(&store, &r.task.task_id).await,
            r,
            "every field survives a reopen"
        );
    }
    assert_eq!(
        list_all(&store, &ListScope::All, 2).await,
        recs,
        "list order survives a reopen"
    );
    assert_eq!(get(&store, &newest.task.task_id).await, None);
    let next = create(&store, new_task(None, None)).await;
    assert!(
        next.seq > newest.seq,
        "seq {} reused after a reopen (largest was {})",
        next.seq,
        newest.seq
    );
    // The lease survived: the tasks of "exec" are not orphans before it lapses.
    assert!(
        fail_orphans(&store, T0 + 50_000, "x")
            .await
            .iter()
            .all(|r| r.task.task_id == next.task.task_id)
    );
    drop(store);
}
