//! Checks of limits: active tasks per quota key, stored tasks, stored bytes.

use std::sync::Arc;

use mcp_tasks_core::{
    Limit, Limits, ListQuery, ListScope, NewTask, OrphanSweep, OutcomeKind, StoreError, TaskRecord,
};
use mcp_tasks_proto::mcp::TaskStatus;

use super::helpers::*;
use super::{Leases, Store, T0};

/// `max_active` counts the quota key's non-terminal tasks (`input_required` included) in the
/// same atomic step as the insert; tasks bound to no one count as one requester; finished
/// or deleted tasks free their slot; concurrent creates never exceed the limit.
///
/// Spec: "Receivers SHOULD ... limit the number of concurrent tasks per requestor".
pub async fn max_active_per_owner(store: Store) {
    let limit = &Limits::active(2);
    let over = |r: Result<TaskRecord, StoreError>, who: &str| {
        let what = format!("{who}: the third active task must be refused with LimitExceeded");
        refused_with(r, Limit::ActiveTasks, 2, &what);
    };
    for owner in [Some("alice"), None] {
        let who = format!("{owner:?}");
        let a = store
            .create(new_task(owner, None), limit)
            .await
            .expect("first");
        let b = store
            .create(new_task(owner, None), limit)
            .await
            .expect("second");
        ask_input(&store, &b.task.task_id, None, T0 + 1).await;
        let refused = new_task(owner, None);
        let refused_id = refused.task_id.clone();
        over(store.create(refused, limit).await, &who);
        assert_eq!(
            get(&store, &refused_id).await,
            None,
            "a refused task is not stored"
        );
        // Another principal is not affected.
        store
            .create(new_task(Some(&format!("other-than-{who}")), None), limit)
            .await
            .expect("another owner has their own limit");
        complete(&store, &a.task.task_id, T0 + 2).await;
        let c = store
            .create(new_task(owner, None), limit)
            .await
            .expect("a finished task frees its slot");
        over(store.create(new_task(owner, None), limit).await, &who);
        // Without a limit, creates always succeed.
        store
            .create(new_task(owner, None), &Limits::NONE)
            .await
            .expect("no limit");
        let _ = c;
    }
    // Deleting an expired active task frees its slot.
    let e = store
        .create(
            NewTask {
                ttl_ms: Some(5),
                ..new_task(Some("exp"), None)
            },
            &Limits::active(1),
        )
        .await
        .expect("create");
    assert!(matches!(
        store
            .create(new_task(Some("exp"), None), &Limits::active(1))
            .await,
        Err(StoreError::LimitExceeded {
            limit: Limit::ActiveTasks,
            max: 1
        })
    ));
    assert_eq!(
        store.delete_expired(T0 + 5, 100).await.expect("delete"),
        vec![e.task.task_id]
    );
    store
        .create(new_task(Some("exp"), None), &Limits::active(1))
        .await
        .expect("an expired task no longer counts");

    // Concurrent creates: exactly `limit` succeed.
    let ok = concurrent_creates(&store, 24, "carol", Limits::active(5), Limit::ActiveTasks).await;
    assert_eq!(ok, 5, "concurrent creates must not exceed max_active");
}

/// `n` concurrent creates of tasks of `owner` within `limits`; how many succeeded (the
/// others must be refused for `refused_by`).
async fn concurrent_creates(
    store: &Store,
    n: usize,
    owner: &'static str,
    limits: Limits,
    refused_by: Limit,
) -> usize {
    let mut handles = Vec::new();
    for _ in 0..n {
        let store = Arc::clone(store);
        handles.push(tokio::spawn(async move {
            store.create(new_task(Some(owner), None), &limits).await
        }));
    }
    let mut ok = 0;
    for h in handles {
        match h.await.expect("create panicked") {
            Ok(_) => ok += 1,
            Err(StoreError::LimitExceeded { limit, .. }) if limit == refused_by => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    ok
}

/// Limits count by [`NewTask::quota_key`], not by owner: two sessions of tasks bound to no
/// one each have their own active-task limit.
pub async fn quota_keys_not_owners(store: Store) {
    let limits = Limits::active(1);
    let anon = |session: &str| NewTask {
        quota_key: format!("session:{session}"),
        ..new_task(None, None)
    };
    store
        .create(anon("a"), &limits)
        .await
        .expect("session a, first");
    store
        .create(anon("b"), &limits)
        .await
        .expect("session b has its own limit though the owner (none) is the same");
    refused_with(
        store.create(anon("a"), &limits).await,
        Limit::ActiveTasks,
        1,
        "session a's second active task must be refused",
    );
    let rec = create(&store, anon("c")).await;
    assert_eq!(
        must_get(&store, &rec.task.task_id).await.task.quota_key,
        "session:c",
        "the quota key is stored"
    );
}

/// `max_tasks` counts every stored task of the key, terminal ones included, until
/// `delete_expired` removes them; a refused task is not stored; other keys are not
/// affected; concurrent creates never exceed it.
///
/// Spec: "Receivers SHOULD enforce maximum `ttl` durations to prevent indefinite resource
/// retention."
pub async fn stored_tasks_limit(store: Store) {
    let limits = Limits {
        max_tasks: Some(2),
        ..Limits::NONE
    };
    let short = NewTask {
        ttl_ms: Some(10),
        ..new_task(Some("hoarder"), None)
    };
    let a = store.create(short, &limits).await.expect("first");
    complete(&store, &a.task.task_id, T0 + 1).await;
    store
        .create(new_task(Some("hoarder"), None), &limits)
        .await
        .expect("second");
    let refused = new_task(Some("hoarder"), None);
    let refused_id = refused.task_id.clone();
    refused_with(
        store.create(refused, &limits).await,
        Limit::StoredTasks,
        2,
        "a third stored task (one of them completed) must be refused with StoredTasks",
    );
    assert_eq!(
        get(&store, &refused_id).await,
        None,
        "a refused task is not stored"
    );
    store
        .create(new_task(Some("someone else"), None), &limits)
        .await
        .expect("another key has its own limit");
    assert_eq!(
        store.delete_expired(T0 + 10, 100).await.expect("delete"),
        vec![a.task.task_id],
    );
    store
        .create(new_task(Some("hoarder"), None), &limits)
        .await
        .expect("a deleted task frees its slot");
    // Concurrent creates of a fresh key: exactly the limit succeed.
    let limits = Limits {
        max_tasks: Some(4),
        ..Limits::NONE
    };
    let ok = concurrent_creates(&store, 16, "burst", limits, Limit::StoredTasks).await;
    assert_eq!(ok, 4, "concurrent creates must not exceed max_tasks");
}

fn sized_task(owner: &str, bytes: usize) -> NewTask {
    NewTask {
        request: format!("{{\"pad\":\"{}\"}}", "x".repeat(bytes.saturating_sub(10))),
        ..new_task(Some(owner), Some("executor-1"))
    }
}

/// `max_bytes` and `max_total_bytes` count the bytes of requests and outcomes: a creation
/// whose request would go over is refused (and not stored); an outcome that would go over,
/// stored with `transition_within`, is replaced by a `failed` outcome (-32003) naming the
/// limit, while one that fits is stored exactly; deleting a task (and, for tracked leases,
/// failing an orphan) keeps the count right.
pub async fn stored_bytes_limits(store: Store, leases: Leases) {
    let per_key = Limits {
        max_bytes: Some(1000),
        ..Limits::NONE
    };
    let a = store
        .create(sized_task("bytes", 400), &per_key)
        .await
        .expect("400 of 1000");
    assert_eq!(a.stored_bytes(), 400);
    store
        .create(sized_task("bytes", 400), &per_key)
        .await
        .expect("800 of 1000");
    let refused = sized_task("bytes", 201);
    let refused_id = refused.task_id.clone();
    refused_with(
        store.create(refused, &per_key).await,
        Limit::StoredBytes,
        1000,
        "1001 of 1000 bytes must be refused with StoredBytes",
    );
    assert_eq!(get(&store, &refused_id).await, None, "not stored");
    let c = store
        .create(sized_task("bytes", 200), &per_key)
        .await
        .expect("exactly 1000 of 1000");
    // An outcome that would go over: the task fails with an error naming the limit.
    let big = result_outcome(&"y".repeat(100));
    let rec = applied(
        store
            .transition_within(
                tr(
                    &c.task.task_id,
                    TaskStatus::Completed,
                    None,
                    Some(big),
                    T0 + 1,
                ),
                &per_key,
            )
            .await
            .expect("transition_within"),
        "an outcome over the limit",
    );
    assert_eq!(rec.status, TaskStatus::Failed, "{rec:?}");
    let outcome = rec.outcome.clone().expect("an outcome");
    assert_eq!(outcome.kind, OutcomeKind::Error);
    let err = outcome.decode().expect_err("an error outcome");
    assert_eq!(err.code, -32003, "{err:?}");
    assert!(
        err.message.contains("at most 1000 bytes"),
        "the error names the limit: {}",
        err.message
    );
    assert_eq!(
        rec.task.status_message.as_deref(),
        Some(err.message.as_str())
    );
    assert_eq!(must_get(&store, &c.task.task_id).await, rec);
    // The store is full for this key; another key is not affected.
    assert!(matches!(
        store.create(sized_task("bytes", 10), &per_key).await,
        Err(StoreError::LimitExceeded {
            limit: Limit::StoredBytes,
            ..
        })
    ));
    let d = store
        .create(sized_task("other", 400), &per_key)
        .await
        .expect("another key");
    let small = result_outcome("ok");
    let rec = applied(
        store
            .transition_within(
                tr(
                    &d.task.task_id,
                    TaskStatus::Completed,
                    None,
                    Some(small.clone()),
                    T0 + 1,
                ),
                &per_key,
            )
            .await
            .expect("transition_within"),
        "an outcome within the limit",
    );
    assert_eq!(rec.status, TaskStatus::Completed);
    assert_eq!(rec.outcome, Some(small), "stored exactly");
    // Deleting frees the bytes.
    let gone = NewTask {
        ttl_ms: Some(5),
        ..sized_task("freed", 900)
    };
    store.create(gone, &per_key).await.expect("900 of 1000");
    assert!(matches!(
        store.create(sized_task("freed", 200), &per_key).await,
        Err(StoreError::LimitExceeded { .. })
    ));
    store.delete_expired(T0 + 5, 100).await.expect("delete");
    store
        .create(sized_task("freed", 900), &per_key)
        .await
        .expect("deleting a task frees its bytes");

    // The whole store's bytes, across keys.
    let total = Limits {
        max_total_bytes: Some(store_bytes(&store).await + 1500),
        ..Limits::NONE
    };
    store
        .create(sized_task("t1", 1000), &total)
        .await
        .expect("1000 of 1500");
    match store.create(sized_task("t2", 501), &total).await {
        Err(StoreError::LimitExceeded {
            limit: Limit::StoreBytes,
            ..
        }) => {}
        other => panic!("a store over its total must refuse any key, got {other:?}"),
    }
    let e = store
        .create(sized_task("t2", 500), &total)
        .await
        .expect("exactly the total");
    if leases == Leases::Tracked {
        // A failed orphan's outcome counts too: the store is over its total now, by the
        // size of that small error (never refused: the failure must be recorded).
        store
            .fail_orphans(OrphanSweep::new(T0 + 1, "gone"))
            .await
            .expect("fail_orphans");
        assert!(must_get(&store, &e.task.task_id).await.status.is_terminal());
        assert!(matches!(
            store.create(sized_task("t3", 10), &total).await,
            Err(StoreError::LimitExceeded {
                limit: Limit::StoreBytes,
                ..
            })
        ));
    }
}

/// The bytes of every task in the store (a full listing).
async fn store_bytes(store: &Store) -> u64 {
    store
        .list(ListQuery::new(ListScope::All, None, usize::MAX))
        .await
        .expect("list")
        .iter()
        .map(TaskRecord::stored_bytes)
        .sum()
}
