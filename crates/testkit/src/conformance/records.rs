//! Checks of records and transitions: round trips, duplicates, the legal and illegal paths,
//! terminal states, failing writes.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_tasks_core::status::can_transition;
use mcp_tasks_core::{Limit, Limits, ListScope, NewTask, StoreError, TaskRecord, TransitionResult};
use mcp_tasks_proto::mcp::TaskStatus;

use super::helpers::*;
use super::{Store, T0};

// ---------------------------------------------------------------------------------------
// Records.

/// Every field of a task comes back from `create` and `get` as it went in; a new task is
/// `working` with `lastUpdatedAt == createdAt` and no outcome; `seq` grows with each
/// create; an unknown id is `None`.
///
/// Spec: "Tasks MUST begin in the `working` status when created." and "Receivers MUST
/// include the actual `ttl` duration (or `null` for unlimited) in `tasks/get` responses."
pub async fn create_get_round_trip(store: Store) {
    let variants = vec![
        new_task(None, None),
        NewTask {
            task_id: unique_id("round-trip"),
            owner: Some("alice ü 🌍".into()),
            quota_key: "session:ü 🌍".into(),
            created_at_ms: T0 + 123,
            ttl_ms: None,
            poll_interval_ms: None,
            method: "sampling/createMessage".into(),
            request: "{ \"messages\" : [ {\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"héllo\\n\\u0000\"}} ],\n\"maxTokens\": 1.0e3 }".into(),
            executor: Some("executor-1".into()),
            status_message: Some("starting…".into()),
        },
        NewTask {
            task_id: unique_id("round-trip"),
            owner: Some(String::new()),
            quota_key: quota_key(Some("")),
            created_at_ms: 0,
            ttl_ms: Some(u64::MAX),
            poll_interval_ms: Some(u64::MAX),
            method: "elicitation/create".into(),
            request: "{}".into(),
            executor: None,
            status_message: Some(String::new()),
        },
        NewTask {
            ttl_ms: Some(0),
            poll_interval_ms: Some(0),
            ..new_task(Some("bob"), Some("executor-2"))
        },
    ];
    let mut last_seq = None;
    for t in variants {
        let rec = create(&store, t.clone()).await;
        let expected = TaskRecord {
            task: t.clone(),
            seq: rec.seq,
            status: TaskStatus::Working,
            last_updated_at_ms: t.created_at_ms,
            outcome: None,
        };
        assert_eq!(rec, expected, "create must return the task as stored");
        assert_eq!(
            must_get(&store, &t.task_id).await,
            expected,
            "get must return every field"
        );
        assert_eq!(
            store.get_summary(&t.task_id).await.expect("get_summary"),
            Some(expected.summary()),
            "get_summary must return every field but the request and outcome"
        );
        assert_eq!(
            store
                .get_without_request(&t.task_id)
                .await
                .expect("get_without_request"),
            Some(expected.clone().without_request()),
            "get_without_request must return every field but the request"
        );
        if let Some(prev) = last_seq {
            assert!(
                rec.seq > prev,
                "seq must grow with each create ({} after {prev})",
                rec.seq
            );
        }
        last_seq = Some(rec.seq);
    }
    assert_eq!(
        get(&store, "no-such-task").await,
        None,
        "an unknown id is None"
    );
}

/// A second task with an existing id is refused with [`StoreError::Duplicate`] and
/// changes nothing.
///
/// Spec: "Task IDs MUST be unique among all tasks controlled by the receiver."
pub async fn duplicate_id_refused(store: Store) {
    let t = new_task(Some("alice"), None);
    let first = create(&store, t.clone()).await;
    let again = NewTask {
        owner: Some("mallory".into()),
        request: "{\"other\":true}".into(),
        ..t.clone()
    };
    match store.create(again, &Limits::NONE).await {
        Err(StoreError::Duplicate(id)) => assert_eq!(id, t.task_id),
        other => panic!("a duplicate id must be refused with Duplicate, got {other:?}"),
    }
    assert_eq!(
        must_get(&store, &t.task_id).await,
        first,
        "the original is unchanged"
    );
}

// ---------------------------------------------------------------------------------------
// Transitions.

/// The legal paths apply: a transition replaces (or clears) the status message, moves
/// `lastUpdatedAt` forward but never back, keeps the outcome and executor while
/// non-terminal; a terminal one stores the outcome bytes exactly and clears the executor.
///
/// Spec: "From `working`: may move to `input_required`, `completed`, `failed`, or
/// `cancelled`; From `input_required`: may move to `working`, `completed`, `failed`, or
/// `cancelled`".
pub async fn legal_transitions(store: Store) {
    let terminal_outcomes = [
        (TaskStatus::Completed, result_outcome("done")),
        (TaskStatus::Failed, error_outcome(-32603, "it broke")),
        (TaskStatus::Cancelled, error_outcome(-32800, "cancelled")),
    ];
    for via_input in [false, true] {
        for (to, outcome) in &terminal_outcomes {
            let t = new_task(Some("alice"), Some("executor-1"));
            let id = t.task_id.clone();
            let mut prev = create(&store, t).await;
            if via_input {
                let rec = ask_input(&store, &id, Some("need input"), T0 + 10).await;
                let expected = TaskRecord {
                    status: TaskStatus::InputRequired,
                    task: NewTask {
                        status_message: Some("need input".into()),
                        ..prev.task.clone()
                    },
                    last_updated_at_ms: T0 + 10,
                    ..prev.clone()
                };
                assert_eq!(rec, expected, "working -> input_required");
                // A clock that went back does not move lastUpdatedAt back.
                let rec = apply_ok(
                    &store,
                    tr(&id, TaskStatus::Working, None, None, T0 + 5),
                    "input_required -> working",
                )
                .await;
                let expected = TaskRecord {
                    status: TaskStatus::Working,
                    task: NewTask {
                        status_message: None,
                        ..prev.task.clone()
                    },
                    last_updated_at_ms: T0 + 10,
                    ..prev.clone()
                };
                assert_eq!(
                    rec, expected,
                    "input_required -> working clears the message and keeps lastUpdatedAt monotonic"
                );
                let rec = ask_input(&store, &id, Some("again"), T0 + 20).await;
                assert_eq!(must_get(&store, &id).await, rec);
                prev = rec;
            }
            let at = T0 + 30;
            let rec = apply_ok(
                &store,
                tr(&id, *to, Some("finished"), Some(outcome.clone()), at),
                &format!("{} -> {to}", prev.status),
            )
            .await;
            let expected = TaskRecord {
                status: *to,
                task: NewTask {
                    status_message: Some("finished".into()),
                    executor: None,
                    ..prev.task.clone()
                },
                last_updated_at_ms: at,
                outcome: Some(outcome.clone()),
                ..prev.clone()
            };
            assert_eq!(rec, expected, "{} -> {to}", prev.status);
            assert_eq!(
                store.get_summary(&id).await.expect("get_summary"),
                Some(expected.summary()),
                "get_summary after {} -> {to}",
                prev.status
            );
            assert_eq!(
                store
                    .get_without_request(&id)
                    .await
                    .expect("get_without_request"),
                Some(expected.clone().without_request()),
                "get_without_request after {} -> {to}: the outcome, not the request",
                prev.status
            );
            assert_eq!(
                must_get(&store, &id).await,
                expected,
                "get after {} -> {to}",
                prev.status
            );
        }
    }
}

/// A transition whose current status is not an allowed predecessor is `Rejected` with the
/// record as it is, and changes nothing; a transition of an unknown task is `Missing`.
pub async fn illegal_transitions_rejected(store: Store) {
    let t = new_task(None, Some("executor-1"));
    let id = t.task_id.clone();
    let rec = create(&store, t).await;
    let r = apply_rejected(
        &store,
        tr(&id, TaskStatus::Working, Some("x"), None, T0 + 1),
        "working -> working",
    )
    .await;
    assert_eq!(r, rec, "a rejected transition returns the record as it is");
    assert_eq!(
        must_get(&store, &id).await,
        rec,
        "a rejected transition changes nothing"
    );
    let rec = ask_input(&store, &id, Some("q"), T0 + 2).await;
    let r = apply_rejected(
        &store,
        tr(&id, TaskStatus::InputRequired, Some("x"), None, T0 + 3),
        "input_required -> input_required",
    )
    .await;
    assert_eq!(r, rec);
    assert_eq!(must_get(&store, &id).await, rec);
    for to in TaskStatus::ALL {
        let r = apply(
            &store,
            tr("no-such-task", to, None, Some(result_outcome("x")), T0),
        )
        .await;
        assert_eq!(r, TransitionResult::Missing, "-> {to} of an unknown task");
    }
}

/// Once terminal, a task never changes again: every transition is rejected and the
/// outcome bytes stay as first stored.
///
/// Spec: "Tasks in `completed`, `failed`, or `cancelled` status are in a terminal state and
/// MUST NOT transition to any other state." and "Once a task is cancelled, it MUST remain
/// in `cancelled` status even if execution continues to completion or fails."
pub async fn terminal_never_changes(store: Store) {
    for first in [
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ] {
        let t = new_task(Some("alice"), Some("executor-1"));
        let id = t.task_id.clone();
        create(&store, t).await;
        let outcome = if first == TaskStatus::Completed {
            result_outcome("first")
        } else {
            error_outcome(-32603, "first")
        };
        let done = apply_ok(
            &store,
            tr(&id, first, Some("first"), Some(outcome), T0 + 10),
            "working -> terminal",
        )
        .await;
        for to in TaskStatus::ALL {
            assert!(!can_transition(first, to));
            let r = apply_rejected(
                &store,
                tr(&id, to, Some("late"), Some(result_outcome("late")), T0 + 20),
                &format!("{first} -> {to}"),
            )
            .await;
            assert_eq!(
                r, done,
                "{first} -> {to} must be rejected with the terminal record"
            );
        }
        assert_eq!(
            must_get(&store, &id).await,
            done,
            "a {first} task never changes"
        );
    }
}

/// Concurrent writes that fail (a duplicate id, a limit) fail alone: the writes around them
/// (in the same batch, for stores that group commits) succeed, and every seq is distinct.
pub async fn failing_writes_fail_alone(store: Store) {
    let existing = create(&store, new_task(Some("dup"), None)).await;
    let mut handles = Vec::new();
    for i in 0..120 {
        let store = Arc::clone(&store);
        let existing = existing.clone();
        handles.push(tokio::spawn(async move {
            match i % 3 {
                0 => {
                    let t = NewTask {
                        task_id: existing.task.task_id.clone(),
                        ..new_task(Some("dup"), None)
                    };
                    (i, store.create(t, &Limits::NONE).await)
                }
                1 => (
                    i,
                    store
                        .create(new_task(Some("full"), None), &Limits::active(0))
                        .await,
                ),
                _ => (
                    i,
                    store
                        .create(new_task(Some("ok"), None), &Limits::active(1000))
                        .await,
                ),
            }
        }));
    }
    let mut seqs = HashSet::new();
    for h in handles {
        let (i, r) = h.await.expect("create task panicked");
        match (i % 3, r) {
            (0, Err(StoreError::Duplicate(_)))
            | (
                1,
                Err(StoreError::LimitExceeded {
                    limit: Limit::ActiveTasks,
                    max: 0,
                }),
            ) => {}
            (2, Ok(rec)) => {
                assert!(seqs.insert(rec.seq), "seq {} handed out twice", rec.seq);
                assert_eq!(must_get(&store, &rec.task.task_id).await, rec);
            }
            (k, r) => panic!("concurrent create #{i} (kind {k}): unexpected {r:?}"),
        }
    }
    assert_eq!(seqs.len(), 40);
    assert_eq!(must_get(&store, &existing.task.task_id).await, existing);
    assert_eq!(
        list_all(&store, &ListScope::Owner("full".into()), 10)
            .await
            .len(),
        0
    );
}
