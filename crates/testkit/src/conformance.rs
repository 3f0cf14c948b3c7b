//! The conformance suite every [`TaskStore`] must pass.
//!
//! Run it from a test of the store's crate:
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
//! async fn memory_store_conforms() {
//!     conformance::run_all(|| async { Arc::new(MemoryStore::new()) as Store }, Leases::ProcessLocal).await;
//! }
//! ```
//!
//! Each check takes a fresh store (or a factory, for the checks that need many) and panics
//! with a message saying which invariant broke. The invariants are those of
//! [`TaskStore`]: transitions are atomic compare-and-swaps on the status, a terminal task
//! never changes again and its outcome bytes never change, waiters wake after every change,
//! listing is keyset pagination in `seq` order that neither skips nor repeats, TTLs and
//! per-owner limits hold, and `fail_orphans` fails only tasks without a live executor.
//!
//! Use a multi-threaded runtime: the race checks run their contenders in parallel.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_tasks_core::status::can_transition;
use mcp_tasks_core::{
    Limit, Limits, ListScope, NewTask, Outcome, OutcomeKind, StoreError, TaskRecord, TaskStore,
    Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// A store under test.
pub type Store = Arc<dyn TaskStore>;

/// What a store promises about executors and their leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leases {
    /// Leases are recorded by `heartbeat`; `fail_orphans` fails every non-terminal task
    /// whose executor has no live lease (expired, unknown, or no executor at all).
    Tracked,
    /// The store lives and dies with its one process (the memory store): every executor
    /// is alive as long as the store is, so `fail_orphans` never fails anything.
    ProcessLocal,
}

/// An arbitrary but fixed "now" (2023-11-14T22:13:20Z) the checks count from.
pub const T0: i64 = 1_700_000_000_000;

/// How long a check waits for a wake-up before calling it lost.
const WAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Run every check, each on a fresh store from `make`.
pub async fn run_all<F, Fut>(make: F, leases: Leases)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Store>,
{
    create_get_round_trip(make().await).await;
    duplicate_id_refused(make().await).await;
    legal_transitions(make().await).await;
    illegal_transitions_rejected(make().await).await;
    terminal_never_changes(make().await).await;
    failing_writes_fail_alone(make().await).await;
    racing_terminals(&make, leases).await;
    ttl_deletion(make().await).await;
    keyset_pagination(make().await).await;
    pagination_under_concurrent_inserts(make().await).await;
    owner_isolation(make().await).await;
    max_active_per_owner(make().await).await;
    quota_keys_not_owners(make().await).await;
    stored_tasks_limit(make().await).await;
    stored_bytes_limits(make().await, leases).await;
    wake_ups(make().await, leases).await;
    cursor_key_stable(make().await, make().await).await;
    match leases {
        Leases::Tracked => lease_orphans(make().await).await,
        Leases::ProcessLocal => process_local_leases(make().await).await,
    }
}

// ---------------------------------------------------------------------------------------
// Helpers.

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A task id unique in this process (and, with the process id, across processes).
pub fn unique_id(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    )
}

/// A plain task: `tools/call`, created at [`T0`], owner and executor as given.
pub fn new_task(owner: Option<&str>, executor: Option<&str>) -> NewTask {
    NewTask {
        task_id: unique_id("task"),
        owner: owner.map(str::to_owned),
        quota_key: quota_key(owner),
        created_at_ms: T0,
        ttl_ms: Some(60_000),
        poll_interval_ms: Some(1000),
        method: "tools/call".into(),
        request: r#"{"name":"echo","arguments":{"text":"hi"}}"#.into(),
        executor: executor.map(str::to_owned),
        status_message: None,
    }
}

/// The quota key the engine gives a task of `owner` (a principal, or the local peer).
pub fn quota_key(owner: Option<&str>) -> String {
    owner.map_or_else(|| "local".to_owned(), |o| format!("principal:{o}"))
}

fn result_outcome(text: &str) -> Outcome {
    // Odd spacing and key order on purpose: the bytes must come back exactly.
    Outcome {
        kind: OutcomeKind::Result,
        json: format!(
            "{{\"content\": [{{\"type\":\"text\",\"text\":{}}}],  \"isError\":false ,\"z\":1.50}}",
            Value::String(text.into())
        ),
    }
}

fn error_outcome(code: i64, text: &str) -> Outcome {
    Outcome {
        kind: OutcomeKind::Error,
        json: format!(
            "{{ \"message\":{}, \"code\":{code},\"data\":{{\"é\":\"🌍\"}} }}",
            Value::String(text.into())
        ),
    }
}

fn tr(
    task_id: &str,
    to: TaskStatus,
    message: Option<&str>,
    outcome: Option<Outcome>,
    at_ms: i64,
) -> Transition {
    Transition {
        task_id: task_id.to_owned(),
        to,
        status_message: message.map(str::to_owned),
        outcome,
        at_ms,
    }
}

async fn create(store: &Store, t: NewTask) -> TaskRecord {
    let id = t.task_id.clone();
    store
        .create(t, &Limits::NONE)
        .await
        .unwrap_or_else(|e| panic!("create {id} failed: {e}"))
}

async fn get(store: &Store, id: &str) -> Option<TaskRecord> {
    store
        .get(id)
        .await
        .unwrap_or_else(|e| panic!("get {id} failed: {e}"))
}

async fn must_get(store: &Store, id: &str) -> TaskRecord {
    get(store, id)
        .await
        .unwrap_or_else(|| panic!("task {id} is missing"))
}

async fn apply(store: &Store, t: Transition) -> TransitionResult {
    let what = format!("{} -> {}", t.task_id, t.to);
    store
        .transition(t)
        .await
        .unwrap_or_else(|e| panic!("transition {what} failed: {e}"))
}

/// Complete `id` (from `working`) with a small result at `at_ms`.
async fn complete(store: &Store, id: &str, at_ms: i64) -> TaskRecord {
    applied(
        apply(
            store,
            tr(
                id,
                TaskStatus::Completed,
                None,
                Some(result_outcome("x")),
                at_ms,
            ),
        )
        .await,
        "complete",
    )
}

fn applied(r: TransitionResult, what: &str) -> TaskRecord {
    match r {
        TransitionResult::Applied(rec) => rec,
        other => panic!("{what}: expected Applied, got {other:?}"),
    }
}

fn rejected(r: TransitionResult, what: &str) -> TaskRecord {
    match r {
        TransitionResult::Rejected(rec) => rec,
        other => panic!("{what}: expected Rejected, got {other:?}"),
    }
}

async fn list_all(store: &Store, scope: &ListScope, page: usize) -> Vec<TaskRecord> {
    let mut out: Vec<TaskRecord> = Vec::new();
    let mut after = None;
    loop {
        let batch = store
            .list(scope, after, page)
            .await
            .unwrap_or_else(|e| panic!("list failed: {e}"));
        assert!(
            batch.len() <= page,
            "list returned {} > limit {page}",
            batch.len()
        );
        let Some(last) = batch.last() else {
            return out;
        };
        after = Some(last.seq);
        out.extend(batch);
    }
}

fn ids(recs: &[TaskRecord]) -> Vec<String> {
    recs.iter().map(|r| r.task_id.clone()).collect()
}

async fn woke(rx: &mut tokio::sync::watch::Receiver<u64>, what: &str) {
    match tokio::time::timeout(WAKE_TIMEOUT, rx.changed()).await {
        Ok(Ok(())) => {
            rx.borrow_and_update();
        }
        Ok(Err(_)) => panic!("{what}: the change signal was dropped"),
        Err(_) => panic!("{what}: no wake-up within {WAKE_TIMEOUT:?}"),
    }
}

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
            task_id: t.task_id.clone(),
            owner: t.owner.clone(),
            quota_key: t.quota_key.clone(),
            seq: rec.seq,
            status: TaskStatus::Working,
            status_message: t.status_message.clone(),
            created_at_ms: t.created_at_ms,
            last_updated_at_ms: t.created_at_ms,
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            method: t.method.clone(),
            request: t.request.clone(),
            outcome: None,
            executor: t.executor.clone(),
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
                let rec = applied(
                    apply(
                        &store,
                        tr(
                            &id,
                            TaskStatus::InputRequired,
                            Some("need input"),
                            None,
                            T0 + 10,
                        ),
                    )
                    .await,
                    "working -> input_required",
                );
                let expected = TaskRecord {
                    status: TaskStatus::InputRequired,
                    status_message: Some("need input".into()),
                    last_updated_at_ms: T0 + 10,
                    ..prev.clone()
                };
                assert_eq!(rec, expected, "working -> input_required");
                // A clock that went back does not move lastUpdatedAt back.
                let rec = applied(
                    apply(&store, tr(&id, TaskStatus::Working, None, None, T0 + 5)).await,
                    "input_required -> working",
                );
                let expected = TaskRecord {
                    status: TaskStatus::Working,
                    status_message: None,
                    last_updated_at_ms: T0 + 10,
                    ..prev.clone()
                };
                assert_eq!(
                    rec, expected,
                    "input_required -> working clears the message and keeps lastUpdatedAt monotonic"
                );
                let rec = applied(
                    apply(
                        &store,
                        tr(&id, TaskStatus::InputRequired, Some("again"), None, T0 + 20),
                    )
                    .await,
                    "working -> input_required (again)",
                );
                assert_eq!(must_get(&store, &id).await, rec);
                prev = rec;
            }
            let at = T0 + 30;
            let rec = applied(
                apply(
                    &store,
                    tr(&id, *to, Some("finished"), Some(outcome.clone()), at),
                )
                .await,
                &format!("{} -> {to}", prev.status),
            );
            let expected = TaskRecord {
                status: *to,
                status_message: Some("finished".into()),
                last_updated_at_ms: at,
                outcome: Some(outcome.clone()),
                executor: None,
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
    let r = rejected(
        apply(
            &store,
            tr(&id, TaskStatus::Working, Some("x"), None, T0 + 1),
        )
        .await,
        "working -> working",
    );
    assert_eq!(r, rec, "a rejected transition returns the record as it is");
    assert_eq!(
        must_get(&store, &id).await,
        rec,
        "a rejected transition changes nothing"
    );
    let rec = applied(
        apply(
            &store,
            tr(&id, TaskStatus::InputRequired, Some("q"), None, T0 + 2),
        )
        .await,
        "working -> input_required",
    );
    let r = rejected(
        apply(
            &store,
            tr(&id, TaskStatus::InputRequired, Some("x"), None, T0 + 3),
        )
        .await,
        "input_required -> input_required",
    );
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
        let done = applied(
            apply(
                &store,
                tr(&id, first, Some("first"), Some(outcome), T0 + 10),
            )
            .await,
            "working -> terminal",
        );
        for to in TaskStatus::ALL {
            assert!(!can_transition(first, to));
            let r = rejected(
                apply(
                    &store,
                    tr(&id, to, Some("late"), Some(result_outcome("late")), T0 + 20),
                )
                .await,
                &format!("{first} -> {to}"),
            );
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
                        task_id: existing.task_id.clone(),
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
                assert_eq!(must_get(&store, &rec.task_id).await, rec);
            }
            (k, r) => panic!("concurrent create #{i} (kind {k}): unexpected {r:?}"),
        }
    }
    assert_eq!(seqs.len(), 40);
    assert_eq!(must_get(&store, &existing.task_id).await, existing);
    assert_eq!(
        list_all(&store, &ListScope::Owner("full".into()), 10)
            .await
            .len(),
        0
    );
}

// ---------------------------------------------------------------------------------------
// Races.

/// One contender in a race on one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaceOp {
    /// `-> cancelled` with a cancellation error outcome.
    Cancel,
    /// `-> completed` with a result outcome.
    Complete,
    /// `-> failed` with an error outcome.
    Fail,
    /// `-> input_required`.
    AskInput,
    /// `-> working`.
    Resume,
    /// `delete_expired` at a time past the task's TTL.
    Expire,
    /// `fail_orphans` (the task's executor never renewed a lease).
    Orphan,
}

fn race_op() -> (proptest::sample::Select<RaceOp>, std::ops::Range<u8>) {
    let op = proptest::sample::select(vec![
        RaceOp::Cancel,
        RaceOp::Complete,
        RaceOp::Fail,
        RaceOp::AskInput,
        RaceOp::Resume,
        RaceOp::Expire,
        RaceOp::Orphan,
    ]);
    (op, 0u8..6)
}

#[allow(clippy::large_enum_variant)] // short-lived, one per contender
enum RaceResult {
    Transition(TransitionResult),
    Deleted(Vec<String>),
    Orphaned(Vec<TaskRecord>),
}

/// Race the `ops` (each after its number of scheduler yields) on one fresh task, and check
/// that exactly one terminal transition won, that its outcome is stored exactly, that every
/// loser saw the winner's record, and that nothing changed after it.
///
/// # Errors
/// A description of the broken invariant.
pub async fn race_case(store: Store, ops: &[(RaceOp, u8)], leases: Leases) -> Result<(), String> {
    let orphaned_msg = "executor gone";
    let task = NewTask {
        ttl_ms: Some(1000),
        ..new_task(Some("racer"), Some("dead-executor"))
    };
    let id = task.task_id.clone();
    store
        .create(task, &Limits::NONE)
        .await
        .map_err(|e| format!("create: {e}"))?;
    // A sibling whose executor is alive: no race may touch it.
    store
        .heartbeat("live-executor", i64::MAX)
        .await
        .map_err(|e| format!("heartbeat: {e}"))?;
    let sibling = store
        .create(
            NewTask {
                ttl_ms: None,
                ..new_task(Some("racer"), Some("live-executor"))
            },
            &Limits::NONE,
        )
        .await
        .map_err(|e| format!("create sibling: {e}"))?;

    let barrier = Arc::new(tokio::sync::Barrier::new(ops.len()));
    let mut handles = Vec::new();
    for (i, &(op, yields)) in ops.iter().enumerate() {
        let store = Arc::clone(&store);
        let barrier = Arc::clone(&barrier);
        let id = id.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
            let at = T0 + 100 + i64::try_from(i).unwrap_or(0);
            let msg = format!("op {i}");
            let r = match op {
                RaceOp::Cancel => store
                    .transition(tr(
                        &id,
                        TaskStatus::Cancelled,
                        Some(&msg),
                        Some(error_outcome(-32800, &msg)),
                        at,
                    ))
                    .await
                    .map(RaceResult::Transition),
                RaceOp::Complete => store
                    .transition(tr(
                        &id,
                        TaskStatus::Completed,
                        Some(&msg),
                        Some(result_outcome(&msg)),
                        at,
                    ))
                    .await
                    .map(RaceResult::Transition),
                RaceOp::Fail => store
                    .transition(tr(
                        &id,
                        TaskStatus::Failed,
                        Some(&msg),
                        Some(error_outcome(-32603, &msg)),
                        at,
                    ))
                    .await
                    .map(RaceResult::Transition),
                RaceOp::AskInput => store
                    .transition(tr(&id, TaskStatus::InputRequired, Some(&msg), None, at))
                    .await
                    .map(RaceResult::Transition),
                RaceOp::Resume => store
                    .transition(tr(&id, TaskStatus::Working, Some(&msg), None, at))
                    .await
                    .map(RaceResult::Transition),
                RaceOp::Expire => store
                    .delete_expired(T0 + 1000, 1000)
                    .await
                    .map(RaceResult::Deleted),
                RaceOp::Orphan => store
                    .fail_orphans(T0 + 100, orphaned_msg)
                    .await
                    .map(RaceResult::Orphaned),
            };
            (i, op, r)
        }));
    }
    let mut results = Vec::new();
    for h in handles {
        let (i, op, r) = h.await.map_err(|e| format!("a contender panicked: {e}"))?;
        results.push((
            i,
            op,
            r.map_err(|e| format!("op {i} ({op:?}) failed: {e}"))?,
        ));
    }

    let finals = store.get(&id).await.map_err(|e| format!("get: {e}"))?;
    let mut deleted = false;
    let mut winners: Vec<(usize, RaceOp, TaskRecord)> = Vec::new();
    let mut losers: Vec<(usize, RaceOp, TaskRecord)> = Vec::new();
    for (i, op, r) in &results {
        match r {
            RaceResult::Transition(TransitionResult::Applied(rec)) => {
                if rec.status.is_terminal() {
                    winners.push((*i, *op, rec.clone()));
                } else if !matches!(op, RaceOp::AskInput | RaceOp::Resume) {
                    return Err(format!(
                        "op {i} ({op:?}) applied a non-terminal status {}",
                        rec.status
                    ));
                }
            }
            RaceResult::Transition(TransitionResult::Rejected(rec)) => {
                if matches!(op, RaceOp::Cancel | RaceOp::Complete | RaceOp::Fail)
                    && !rec.status.is_terminal()
                {
                    return Err(format!(
                        "op {i} ({op:?}) was rejected although the task was {} (a terminal transition is legal from any non-terminal status)",
                        rec.status
                    ));
                }
                if rec.status.is_terminal() {
                    losers.push((*i, *op, rec.clone()));
                }
            }
            RaceResult::Transition(TransitionResult::Missing) => {}
            RaceResult::Deleted(ids) => deleted |= ids.contains(&id),
            RaceResult::Orphaned(recs) => {
                if recs.iter().any(|r| r.task_id == sibling.task_id) {
                    return Err("fail_orphans failed a task of a live executor".into());
                }
                if leases == Leases::ProcessLocal && !recs.is_empty() {
                    return Err("a process-local store failed orphans".into());
                }
                for rec in recs.iter().filter(|r| r.task_id == id) {
                    winners.push((*i, *op, rec.clone()));
                }
            }
        }
    }
    if winners.len() > 1 {
        return Err(format!(
            "{} terminal transitions won: {:?}",
            winners.len(),
            winners
                .iter()
                .map(|(i, op, r)| (i, op, r.status))
                .collect::<Vec<_>>()
        ));
    }
    let contenders = results.iter().filter(|(_, op, _)| match op {
        RaceOp::Cancel | RaceOp::Complete | RaceOp::Fail => true,
        RaceOp::Orphan => leases == Leases::Tracked,
        _ => false,
    });
    let contenders = contenders.count();
    if deleted {
        if finals.is_some() {
            return Err("delete_expired reported the task deleted but it is still there".into());
        }
    } else {
        let Some(finals) = finals else {
            return Err("the task vanished without being deleted".into());
        };
        if contenders > 0 && winners.is_empty() {
            return Err(format!(
                "{contenders} terminal contenders and no winner; task is {}",
                finals.status
            ));
        }
        if let Some((i, op, won)) = winners.first() {
            if &finals != won {
                return Err(format!(
                    "the task changed after op {i} ({op:?}) made it terminal:\n won: {won:?}\nnow: {finals:?}"
                ));
            }
            let expected = match op {
                RaceOp::Cancel => Some(error_outcome(-32800, &format!("op {i}"))),
                RaceOp::Complete => Some(result_outcome(&format!("op {i}"))),
                RaceOp::Fail => Some(error_outcome(-32603, &format!("op {i}"))),
                _ => None,
            };
            if let Some(expected) = expected {
                if finals.outcome.as_ref() != Some(&expected) {
                    return Err(format!(
                        "stored outcome {:?} is not the winner's {expected:?}",
                        finals.outcome
                    ));
                }
            } else if finals.status != TaskStatus::Failed
                || finals.status_message.as_deref() != Some(orphaned_msg)
                || finals.outcome.as_ref().map(|o| o.kind) != Some(OutcomeKind::Error)
            {
                return Err(format!(
                    "an orphaned task must be failed with an error outcome: {finals:?}"
                ));
            }
        }
        for (i, op, seen) in &losers {
            if seen != &finals {
                return Err(format!(
                    "op {i} ({op:?}) was rejected with {seen:?}, but the winner stored {finals:?}"
                ));
            }
        }
    }
    let sib = store
        .get(&sibling.task_id)
        .await
        .map_err(|e| format!("get sibling: {e}"))?;
    if sib.as_ref() != Some(&sibling) {
        return Err(format!("the live sibling task changed: {sib:?}"));
    }
    Ok(())
}

/// Random interleavings (proptest) of cancel, complete, fail, input_required, working,
/// expiry and orphan-failing on one task, each case on a fresh store: exactly one terminal
/// transition wins and its outcome is stored exactly ([`race_case`]). Failing cases are
/// shrunk. `PROPTEST_CASES` sets the number of cases (default 64).
pub async fn racing_terminals<F, Fut>(make: &F, leases: Leases)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Store>,
{
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(race_op(), 2..8);
    // A fixed, hand-picked case first: the three terminal contenders at once.
    let fixed = vec![
        (RaceOp::Cancel, 0),
        (RaceOp::Complete, 0),
        (RaceOp::Fail, 0),
    ];
    if let Err(e) = race_case(make().await, &fixed, leases).await {
        panic!("race {fixed:?}: {e}");
    }
    for _ in 0..cases {
        let mut tree = strategy
            .new_tree(&mut runner)
            .expect("the race strategy generates values");
        let first = tree.current();
        let Err(error) = race_case(make().await, &first, leases).await else {
            continue;
        };
        // Shrink: keep simplifying while the case still fails.
        let mut minimal = (first.clone(), error.clone());
        let mut steps = 0;
        while steps < 256 && tree.simplify() {
            steps += 1;
            let candidate = tree.current();
            match race_case(make().await, &candidate, leases).await {
                Err(e) => minimal = (candidate, e),
                Ok(()) => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
        panic!(
            "race invariant broken.\n  case: {first:?}\n  error: {error}\n  minimal failing case found: {:?}\n  its error: {}",
            minimal.0, minimal.1
        );
    }
}

// ---------------------------------------------------------------------------------------
// TTL.

/// `delete_expired` deletes exactly the tasks whose TTL has passed (`now >= createdAt +
/// ttl`), whatever their status, at most `limit` at a time; unlimited tasks never; a seq is
/// never handed out again after its task is deleted.
///
/// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and its
/// results, regardless of the task status."
pub async fn ttl_deletion(store: Store) {
    let mk = |ttl: Option<u64>| NewTask {
        ttl_ms: ttl,
        ..new_task(Some("ttl"), None)
    };
    let a = create(&store, mk(Some(1000))).await;
    let b = create(&store, mk(Some(5000))).await;
    let forever = create(&store, mk(None)).await;
    let huge = create(&store, mk(Some(u64::MAX))).await;
    let done = create(&store, mk(Some(1000))).await;
    applied(
        apply(
            &store,
            tr(
                &done.task_id,
                TaskStatus::Completed,
                None,
                Some(result_outcome("r")),
                T0 + 1,
            ),
        )
        .await,
        "complete",
    );
    let gone = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    let del = |now: i64| {
        let store = Arc::clone(&store);
        async move {
            store
                .delete_expired(now, 1000)
                .await
                .unwrap_or_else(|e| panic!("delete_expired failed: {e}"))
        }
    };
    assert_eq!(
        del(T0 + 999).await,
        Vec::<String>::new(),
        "nothing has expired 1 ms before the TTL"
    );
    assert_eq!(
        gone(del(T0 + 1000).await),
        gone(vec![a.task_id.clone(), done.task_id.clone()]),
        "tasks expire at createdAt + ttl, working or terminal"
    );
    assert_eq!(get(&store, &a.task_id).await, None);
    assert_eq!(get(&store, &done.task_id).await, None);
    assert_eq!(must_get(&store, &b.task_id).await, b);
    assert_eq!(gone(del(i64::MAX - 1).await), gone(vec![b.task_id.clone()]));
    assert_eq!(
        must_get(&store, &forever.task_id).await,
        forever,
        "an unlimited task never expires"
    );
    assert_eq!(
        must_get(&store, &huge.task_id).await,
        huge,
        "a ttl beyond i64 saturates"
    );
    assert!(del(i64::MAX - 1).await.is_empty());

    // The limit.
    let many: Vec<TaskRecord> = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(create(&store, mk(Some(10))).await);
        }
        v
    };
    let mut seen = BTreeSet::new();
    for expected in [2, 2, 1, 0] {
        let ids = store
            .delete_expired(T0 + 10, 2)
            .await
            .unwrap_or_else(|e| panic!("delete_expired failed: {e}"));
        assert_eq!(ids.len(), expected, "delete_expired must honour its limit");
        for id in ids {
            assert!(seen.insert(id.clone()), "{id} deleted twice");
        }
    }
    assert_eq!(seen, gone(ids(&many)));

    // Seqs are not reused: delete the newest task, create another.
    let newest = create(&store, mk(Some(1))).await;
    assert_eq!(del(T0 + 1).await, vec![newest.task_id.clone()]);
    let next = create(&store, mk(None)).await;
    assert!(
        next.seq > newest.seq,
        "seq {} reused after deleting {}",
        next.seq,
        newest.seq
    );
}

// ---------------------------------------------------------------------------------------
// Listing.

/// `list` is keyset pagination: ascending `seq`, strictly after `after_seq`, at most
/// `limit`; pages neither skip nor repeat.
///
/// Spec: "Receivers MUST include a `nextCursor` in the response if more tasks are
/// available." (the engine asks for `limit + 1` to know).
pub async fn keyset_pagination(store: Store) {
    let mut created = Vec::new();
    for i in 0..25 {
        let owner = ["a", "b"].get(i % 3).copied();
        created.push(create(&store, new_task(owner, None)).await);
    }
    for page in [1, 7, 10, 25, 100] {
        let all = list_all(&store, &ListScope::All, page).await;
        assert_eq!(
            all, created,
            "paging by {page} must return every task once, in seq order"
        );
    }
    let first = store.list(&ListScope::All, None, 10).await.expect("list");
    assert_eq!(first, created[..10]);
    let second = store
        .list(&ListScope::All, Some(created[9].seq), 10)
        .await
        .expect("list");
    assert_eq!(second, created[10..20]);
    let after_last = store
        .list(&ListScope::All, Some(created[24].seq), 10)
        .await
        .expect("list");
    assert!(after_last.is_empty(), "nothing after the last task");
    assert!(
        store
            .list(&ListScope::All, None, 0)
            .await
            .expect("list")
            .is_empty(),
        "limit 0"
    );
    // A cursor left by a deleted task still works.
    let t = create(
        &store,
        NewTask {
            ttl_ms: Some(1),
            ..new_task(None, None)
        },
    )
    .await;
    let after = create(&store, new_task(None, None)).await;
    store
        .delete_expired(T0 + 1, 10)
        .await
        .expect("delete_expired");
    let page = store
        .list(&ListScope::All, Some(t.seq), 10)
        .await
        .expect("list");
    assert_eq!(
        ids(&page),
        vec![after.task_id],
        "a cursor at a deleted task resumes after it"
    );
}

/// Paging while other tasks insert concurrently neither skips nor repeats: every task that
/// existed when paging began is seen exactly once, pages come in strictly ascending `seq`,
/// and paging on to the end after the inserts sees every task exactly once.
pub async fn pagination_under_concurrent_inserts(store: Store) {
    let mut before = Vec::new();
    for _ in 0..60 {
        before.push(create(&store, new_task(Some("p"), None)).await.task_id);
    }
    let inserter = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..150 {
                let rec = store
                    .create(new_task(Some("p"), None), &Limits::NONE)
                    .await
                    .unwrap_or_else(|e| panic!("concurrent create failed: {e}"));
                ids.push(rec.task_id);
                tokio::task::yield_now().await;
            }
            ids
        })
    };
    let mut seen: Vec<TaskRecord> = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let batch = store
            .list(&ListScope::Owner("p".into()), after, 7)
            .await
            .unwrap_or_else(|e| panic!("list failed: {e}"));
        pages += 1;
        if batch.is_empty() {
            if inserter.is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        after = batch.last().map(|r| r.seq);
        seen.extend(batch);
        tokio::task::yield_now().await;
        assert!(pages < 100_000, "paging does not end");
    }
    let during = inserter.await.expect("inserter panicked");
    // One more page after the inserter finished: nothing may be left behind.
    let rest = store
        .list(&ListScope::Owner("p".into()), after, 1000)
        .await
        .expect("list");
    seen.extend(rest);
    for w in seen.windows(2) {
        assert!(
            w[0].seq < w[1].seq,
            "seq {} then {}: a repeat or a step back",
            w[0].seq,
            w[1].seq
        );
    }
    let seen_ids: Vec<String> = ids(&seen);
    let set: HashSet<&String> = seen_ids.iter().collect();
    assert_eq!(set.len(), seen_ids.len(), "a task was listed twice");
    for id in before.iter().chain(during.iter()) {
        assert!(set.contains(id), "task {id} was skipped");
    }
    assert_eq!(seen_ids.len(), before.len() + during.len());
}

/// `ListScope::Owner` lists exactly that principal's tasks (never those bound to no one or
/// to another); `ListScope::All` lists everything.
///
/// Spec: "For `tasks/list` requests, receivers MUST ensure that the returned task list
/// includes only tasks associated with the requestor's authorization context."
pub async fn owner_isolation(store: Store) {
    let mut by_owner: Vec<(Option<&str>, Vec<String>)> = vec![
        (Some("alice"), vec![]),
        (Some("bob"), vec![]),
        (None, vec![]),
        (Some(""), vec![]),
    ];
    let mut everything = Vec::new();
    for i in 0..14 {
        let slot = i % by_owner.len();
        let owner = by_owner[slot].0;
        let rec = create(&store, new_task(owner, None)).await;
        by_owner[slot].1.push(rec.task_id.clone());
        everything.push(rec.task_id);
    }
    for (owner, expected) in &by_owner {
        let Some(owner) = owner else { continue };
        for page in [1, 3, 100] {
            let got = ids(&list_all(&store, &ListScope::Owner((*owner).to_owned()), page).await);
            assert_eq!(
                &got, expected,
                "owner {owner:?} (page {page}) must see exactly their tasks"
            );
        }
    }
    assert!(
        list_all(&store, &ListScope::Owner("carol".into()), 10)
            .await
            .is_empty()
    );
    assert_eq!(ids(&list_all(&store, &ListScope::All, 5).await), everything);
}

/// `max_active` counts the quota key's non-terminal tasks (`input_required` included) in the
/// same atomic step as the insert; tasks bound to no one count as one requester; finished
/// or deleted tasks free their slot; concurrent creates never exceed the limit.
///
/// Spec: "Receivers SHOULD ... limit the number of concurrent tasks per requestor".
pub async fn max_active_per_owner(store: Store) {
    let limit = &Limits::active(2);
    let over = |r: Result<TaskRecord, StoreError>, who: &str| match r {
        Err(StoreError::LimitExceeded {
            limit: Limit::ActiveTasks,
            max: 2,
        }) => {}
        other => {
            panic!("{who}: the third active task must be refused with LimitExceeded, got {other:?}")
        }
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
        applied(
            apply(
                &store,
                tr(&b.task_id, TaskStatus::InputRequired, None, None, T0 + 1),
            )
            .await,
            "-> input_required",
        );
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
        complete(&store, &a.task_id, T0 + 2).await;
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
        vec![e.task_id]
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
    match store.create(anon("a"), &limits).await {
        Err(StoreError::LimitExceeded {
            limit: Limit::ActiveTasks,
            max: 1,
        }) => {}
        other => panic!("session a's second active task must be refused, got {other:?}"),
    }
    let rec = create(&store, anon("c")).await;
    assert_eq!(
        must_get(&store, &rec.task_id).await.quota_key,
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
    complete(&store, &a.task_id, T0 + 1).await;
    store
        .create(new_task(Some("hoarder"), None), &limits)
        .await
        .expect("second");
    let refused = new_task(Some("hoarder"), None);
    let refused_id = refused.task_id.clone();
    match store.create(refused, &limits).await {
        Err(StoreError::LimitExceeded {
            limit: Limit::StoredTasks,
            max: 2,
        }) => {}
        other => panic!(
            "a third stored task (one of them completed) must be refused with StoredTasks, got {other:?}"
        ),
    }
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
        vec![a.task_id],
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
    match store.create(refused, &per_key).await {
        Err(StoreError::LimitExceeded {
            limit: Limit::StoredBytes,
            max: 1000,
        }) => {}
        other => panic!("1001 of 1000 bytes must be refused with StoredBytes, got {other:?}"),
    }
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
                tr(&c.task_id, TaskStatus::Completed, None, Some(big), T0 + 1),
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
    assert_eq!(rec.status_message.as_deref(), Some(err.message.as_str()));
    assert_eq!(must_get(&store, &c.task_id).await, rec);
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
                    &d.task_id,
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
            .fail_orphans(T0 + 1, "gone")
            .await
            .expect("fail_orphans");
        assert!(must_get(&store, &e.task_id).await.status.is_terminal());
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
        .list(&ListScope::All, None, usize::MAX)
        .await
        .expect("list")
        .iter()
        .map(TaskRecord::stored_bytes)
        .sum()
}

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
    applied(
        apply(
            &store,
            tr(&id, TaskStatus::InputRequired, None, None, T0 + 1),
        )
        .await,
        "-> input_required",
    );
    woke(&mut rx, "working -> input_required").await;
    applied(
        apply(&store, tr(&id, TaskStatus::Working, None, None, T0 + 2)).await,
        "-> working",
    );
    woke(&mut rx, "input_required -> working").await;
    // Several waiters on one task all wake.
    let mut others: Vec<_> = (0..3).map(|_| store.subscribe(&id)).collect();
    for o in &mut others {
        o.borrow_and_update();
    }
    applied(
        apply(
            &store,
            tr(
                &id,
                TaskStatus::Completed,
                None,
                Some(result_outcome("w")),
                T0 + 3,
            ),
        )
        .await,
        "-> completed",
    );
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
        let failed = store
            .fail_orphans(T0 + 10, "gone")
            .await
            .expect("fail_orphans");
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
    let live_input = applied(
        apply(
            &store,
            tr(
                &live_input.task_id,
                TaskStatus::InputRequired,
                Some("q"),
                None,
                T0 + 5,
            ),
        )
        .await,
        "-> input_required",
    );
    let dead = create(&store, new_task(Some("o"), Some("dead"))).await;
    let dead_input = create(&store, new_task(Some("o"), Some("dead"))).await;
    applied(
        apply(
            &store,
            tr(
                &dead_input.task_id,
                TaskStatus::InputRequired,
                Some("q"),
                None,
                T0 + 5,
            ),
        )
        .await,
        "-> input_required",
    );
    let unknown = create(&store, new_task(Some("o"), Some("never-heartbeated"))).await;
    let nobody = create(&store, new_task(Some("o"), None)).await;
    let dead_done = create(&store, new_task(Some("o"), Some("dead"))).await;
    let dead_done = applied(
        apply(
            &store,
            tr(
                &dead_done.task_id,
                TaskStatus::Completed,
                None,
                Some(result_outcome("ok")),
                T0 + 6,
            ),
        )
        .await,
        "-> completed",
    );

    let set = |recs: &[TaskRecord]| ids(recs).into_iter().collect::<BTreeSet<String>>();
    let of = |recs: &[&TaskRecord]| {
        recs.iter()
            .map(|r| r.task_id.clone())
            .collect::<BTreeSet<String>>()
    };
    // At the lease's last millisecond "dead" is still alive; the tasks of an executor that
    // never heartbeated, or of none, are orphans already.
    let first = store
        .fail_orphans(T0 + 500, msg)
        .await
        .expect("fail_orphans");
    assert_eq!(
        set(&first),
        of(&[&unknown, &nobody]),
        "at T0+500 only the tasks without any lease are orphans (a lease is live up to and including lease_until)"
    );
    let now = T0 + 1000;
    let failed = store.fail_orphans(now, msg).await.expect("fail_orphans");
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
        assert_eq!(rec.status_message.as_deref(), Some(msg), "{id}");
        assert_eq!(rec.executor, None, "{id}: a terminal task has no executor");
        let outcome = rec
            .outcome
            .as_ref()
            .expect("a failed orphan has an outcome");
        assert_eq!(outcome.kind, OutcomeKind::Error);
        let v: Value = serde_json::from_str(&outcome.json).expect("the outcome is JSON");
        assert_eq!(v, serde_json::json!({"code": -32603, "message": msg}));
        if let Some(r) = failed.iter().find(|r| &r.task_id == id) {
            assert_eq!(r, &rec, "fail_orphans returns the records as stored");
        }
    }
    assert_eq!(
        must_get(&store, &live.task_id).await,
        live,
        "a live executor's task is untouched"
    );
    assert_eq!(must_get(&store, &live_input.task_id).await, live_input);
    assert_eq!(
        must_get(&store, &dead_done.task_id).await,
        dead_done,
        "a terminal task is untouched"
    );
    assert!(
        store
            .fail_orphans(now, msg)
            .await
            .expect("fail_orphans")
            .is_empty(),
        "nothing is failed twice"
    );

    // Renewal keeps the live executor's tasks alive; lapsing fails them.
    store
        .heartbeat("live", T0 + 20_000)
        .await
        .expect("heartbeat");
    assert!(
        store
            .fail_orphans(T0 + 15_000, msg)
            .await
            .expect("fail_orphans")
            .is_empty()
    );
    let lapsed = store
        .fail_orphans(T0 + 20_001, msg)
        .await
        .expect("fail_orphans");
    let got: BTreeSet<String> = ids(&lapsed).into_iter().collect();
    let expected: BTreeSet<String> = [live.task_id.clone(), live_input.task_id.clone()].into();
    assert_eq!(got, expected, "tasks of a lapsed lease fail");
    // A new executor instance with a fresh lease is not affected by old sweeps.
    store
        .heartbeat("fresh", T0 + 40_000)
        .await
        .expect("heartbeat");
    let fresh = create(&store, new_task(Some("o"), Some("fresh"))).await;
    assert!(
        store
            .fail_orphans(T0 + 30_000, msg)
            .await
            .expect("fail_orphans")
            .is_empty()
    );
    assert_eq!(must_get(&store, &fresh.task_id).await, fresh);
}

/// In a process-local store every executor is alive while the store is: `heartbeat`
/// succeeds and `fail_orphans` fails nothing, at any time.
pub async fn process_local_leases(store: Store) {
    store.heartbeat("me", T0 + 10).await.expect("heartbeat");
    let a = create(&store, new_task(Some("o"), Some("me"))).await;
    let b = create(&store, new_task(Some("o"), Some("someone-else"))).await;
    let c = create(&store, new_task(Some("o"), None)).await;
    assert!(
        store
            .fail_orphans(i64::MAX, "x")
            .await
            .expect("fail_orphans")
            .is_empty()
    );
    for r in [a, b, c] {
        assert_eq!(must_get(&store, &r.task_id).await, r);
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
    recs.push(applied(
        apply(
            &store,
            tr(
                &t.task_id,
                TaskStatus::InputRequired,
                Some("q?"),
                None,
                T0 + 7,
            ),
        )
        .await,
        "-> input_required",
    ));
    for (to, outcome) in [
        (TaskStatus::Completed, result_outcome("kept")),
        (TaskStatus::Failed, error_outcome(-32603, "kept")),
        (TaskStatus::Cancelled, error_outcome(-32800, "kept")),
    ] {
        let t = create(&store, new_task(Some("bob"), Some("exec"))).await;
        recs.push(applied(
            apply(
                &store,
                tr(&t.task_id, to, Some("end"), Some(outcome), T0 + 9),
            )
            .await,
            "-> terminal",
        ));
    }
    let newest = create(
        &store,
        NewTask {
            ttl_ms: Some(1),
            ..new_task(None, None)
        },
    )
    .await;
    assert_eq!(
        store
            .delete_expired(T0 + 1, 10)
            .await
            .expect("delete_expired"),
        vec![newest.task_id.clone()]
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
            &must_get(&store, &r.task_id).await,
            r,
            "every field survives a reopen"
        );
    }
    assert_eq!(
        list_all(&store, &ListScope::All, 2).await,
        recs,
        "list order survives a reopen"
    );
    assert_eq!(get(&store, &newest.task_id).await, None);
    let next = create(&store, new_task(None, None)).await;
    assert!(
        next.seq > newest.seq,
        "seq {} reused after a reopen (largest was {})",
        next.seq,
        newest.seq
    );
    // The lease survived: the tasks of "exec" are not orphans before it lapses.
    assert!(
        store
            .fail_orphans(T0 + 50_000, "x")
            .await
            .expect("fail_orphans")
            .iter()
            .all(|r| r.task_id == next.task_id)
    );
    drop(store);
}
