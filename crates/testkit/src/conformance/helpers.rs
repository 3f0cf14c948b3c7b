//! Helpers of the checks: task and outcome builders, and store calls that panic with what
//! failed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_tasks_core::{
    Limit, Limits, ListQuery, ListScope, NewTask, OrphanSweep, Outcome, OutcomeKind, StoreError,
    TaskRecord, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use serde_json::Value;

use super::{Store, T0};

// ---------------------------------------------------------------------------------------
// Helpers.

/// How long a check waits for a wake-up before calling it lost.
const WAKE_TIMEOUT: Duration = Duration::from_secs(5);

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

pub(super) fn result_outcome(text: &str) -> Outcome {
    // Odd spacing and key order on purpose: the bytes must come back exactly.
    Outcome {
        kind: OutcomeKind::Result,
        json: format!(
            "{{\"content\": [{{\"type\":\"text\",\"text\":{}}}],  \"isError\":false ,\"z\":1.50}}",
            Value::String(text.into())
        ),
    }
}

pub(super) fn error_outcome(code: i64, text: &str) -> Outcome {
    Outcome {
        kind: OutcomeKind::Error,
        json: format!(
            "{{ \"message\":{}, \"code\":{code},\"data\":{{\"é\":\"🌍\"}} }}",
            Value::String(text.into())
        ),
    }
}

pub(super) fn tr(
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

pub(super) async fn create(store: &Store, t: NewTask) -> TaskRecord {
    let id = t.task_id.clone();
    store
        .create(t, &Limits::NONE)
        .await
        .unwrap_or_else(|e| panic!("create {id} failed: {e}"))
}

pub(super) async fn get(store: &Store, id: &str) -> Option<TaskRecord> {
    store
        .get(id)
        .await
        .unwrap_or_else(|e| panic!("get {id} failed: {e}"))
}

pub(super) async fn must_get(store: &Store, id: &str) -> TaskRecord {
    get(store, id)
        .await
        .unwrap_or_else(|| panic!("task {id} is missing"))
}

pub(super) async fn apply(store: &Store, t: Transition) -> TransitionResult {
    let what = format!("{} -> {}", t.task_id, t.to);
    store
        .transition(t)
        .await
        .unwrap_or_else(|e| panic!("transition {what} failed: {e}"))
}

/// Complete `id` (from `working`) with a small result at `at_ms`.
pub(super) async fn complete(store: &Store, id: &str, at_ms: i64) -> TaskRecord {
    apply_ok(
        store,
        tr(
            id,
            TaskStatus::Completed,
            None,
            Some(result_outcome("x")),
            at_ms,
        ),
        "complete",
    )
    .await
}

pub(super) fn applied(r: TransitionResult, what: &str) -> TaskRecord {
    match r {
        TransitionResult::Applied(rec) => rec,
        other => panic!("{what}: expected Applied, got {other:?}"),
    }
}

/// Move `id` to `input_required` (with `message`) at `at_ms`; the store must apply it.
pub(super) async fn ask_input(
    store: &Store,
    id: &str,
    message: Option<&str>,
    at_ms: i64,
) -> TaskRecord {
    let what = format!("{id} -> input_required");
    apply_ok(
        store,
        tr(id, TaskStatus::InputRequired, message, None, at_ms),
        &what,
    )
    .await
}

/// Apply `t`, which must be applied; `what` names the step in the panic message.
pub(super) async fn apply_ok(store: &Store, t: Transition, what: &str) -> TaskRecord {
    applied(apply(store, t).await, what)
}

/// Apply `t`, which must be rejected; `what` names the step in the panic message.
pub(super) async fn apply_rejected(store: &Store, t: Transition, what: &str) -> TaskRecord {
    rejected(apply(store, t).await, what)
}

/// Fail the orphans at `now_ms` with `message`; the store must not fail.
pub(super) async fn fail_orphans(store: &Store, now_ms: i64, message: &str) -> Vec<TaskRecord> {
    store
        .fail_orphans(OrphanSweep::new(now_ms, message))
        .await
        .unwrap_or_else(|e| panic!("fail_orphans at {now_ms} failed: {e}"))
}

/// `r` must be the refusal of a create over `limit` (of `max`); `what` names the check.
pub(super) fn refused_with(r: Result<TaskRecord, StoreError>, limit: Limit, max: u64, what: &str) {
    match r {
        Err(StoreError::LimitExceeded { limit: l, max: m }) if l == limit && m == max => {}
        other => panic!("{what}: expected LimitExceeded {limit:?} (max {max}), got {other:?}"),
    }
}

/// Create a task with a TTL of 1 ms: expired by any sweep after [`T0`] + 1.
pub(super) async fn create_expiring(store: &Store) -> TaskRecord {
    create(
        store,
        NewTask {
            ttl_ms: Some(1),
            ..new_task(None, None)
        },
    )
    .await
}

pub(super) fn rejected(r: TransitionResult, what: &str) -> TaskRecord {
    match r {
        TransitionResult::Rejected(rec) => rec,
        other => panic!("{what}: expected Rejected, got {other:?}"),
    }
}

/// One page of `store`'s listing.
pub(super) async fn list(store: &Store, q: ListQuery) -> Vec<TaskRecord> {
    store.list(q).await.expect("list")
}

pub(super) async fn list_all(store: &Store, scope: &ListScope, page: usize) -> Vec<TaskRecord> {
    list_pages(store, page, |after| {
        ListQuery::new(scope.clone(), after, page)
    })
    .await
}

/// Every page of a listing: `query(cursor)` asks for the page after `cursor` (the `seq` of
/// the previous page's last task; `None` first), until a page is empty. Each page must
/// hold at most `page` tasks.
pub(super) async fn list_pages(
    store: &Store,
    page: usize,
    query: impl Fn(Option<i64>) -> ListQuery,
) -> Vec<TaskRecord> {
    let mut out: Vec<TaskRecord> = Vec::new();
    let mut cursor = None;
    loop {
        let batch = store
            .list(query(cursor))
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
        cursor = Some(last.seq);
        out.extend(batch);
    }
}

/// Listed page by page with `query(page, cursor)`, for pages of 1, 7, 10, 25 and 100
/// tasks, the store returns `want`, every task once, in its order (`how`, `order`: the
/// failure's words).
pub(super) async fn pages_return(
    store: &Store,
    want: &[TaskRecord],
    how: &str,
    order: &str,
    query: impl Fn(usize, Option<i64>) -> ListQuery,
) {
    for page in [1, 7, 10, 25, 100] {
        let all = list_pages(store, page, |cursor| query(page, cursor)).await;
        assert_eq!(
            all, want,
            "{how} by {page} must return every task once, {order}"
        );
    }
}

/// Create 25 tasks, owned in turn by `a`, `b` and no one; oldest first.
pub(super) async fn create_mixed_owners(store: &Store) -> Vec<TaskRecord> {
    let mut created = Vec::new();
    for i in 0..25 {
        let owner = ["a", "b"].get(i % 3).copied();
        created.push(create(store, new_task(owner, None)).await);
    }
    created
}

pub(super) fn ids(recs: &[TaskRecord]) -> Vec<String> {
    recs.iter().map(|r| r.task.task_id.clone()).collect()
}

pub(super) async fn woke(rx: &mut tokio::sync::watch::Receiver<u64>, what: &str) {
    match tokio::time::timeout(WAKE_TIMEOUT, rx.changed()).await {
        Ok(Ok(())) => {
            rx.borrow_and_update();
        }
        Ok(Err(_)) => panic!("{what}: the change signal was dropped"),
        Err(_) => panic!("{what}: no wake-up within {WAKE_TIMEOUT:?}"),
    }
}
