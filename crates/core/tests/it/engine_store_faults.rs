//! A task whose outcome cannot be stored (disk full, ...) does not stay `working`: the
//! engine retries storing it with backoff, keeps the task meanwhile, and once the store
//! takes writes again the task ends with its outcome, or, past the retry budget, `failed`
//! with a message naming the cause; waiters in `tasks/result` return either way.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::engine::{Classifier, TaskRun, TaskSpec};
use mcp_tasks_core::{
    Limits, ListQuery, MemoryStore, NewTask, OrphanSweep, Policy, Requester, StoreError,
    SystemClock, TaskEngine, TaskRecord, TaskStore, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_testkit::NoRequestor;
use serde_json::{Value, json};
use tokio::sync::watch;

/// A memory store whose terminal transitions fail while `failures` is above zero
/// (`u32::MAX`: until set to zero).
struct FullDisk {
    inner: MemoryStore,
    failures: AtomicU32,
    attempts: AtomicU32,
}

impl FullDisk {
    fn refuse(&self, t: &Transition) -> Result<(), StoreError> {
        if !t.to.is_terminal() {
            return Ok(());
        }
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let left = self.failures.load(Ordering::SeqCst);
        if left == 0 {
            return Ok(());
        }
        if left != u32::MAX {
            self.failures.store(left - 1, Ordering::SeqCst);
        }
        Err(StoreError::Unavailable(
            "tasks.db: the disk is full (injected)".into(),
        ))
    }
}

#[async_trait]
impl TaskStore for FullDisk {
    async fn create(&self, t: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        self.inner.create(t, limits).await
    }
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(id).await
    }
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.refuse(&t)?;
        self.inner.transition(t).await
    }
    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
        self.refuse(&t)?;
        self.inner.transition_within(t, limits).await
    }
    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.list(q).await
    }
    async fn delete_expired(&self, now: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        self.inner.delete_expired(now, limit).await
    }
    async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
        self.inner.cursor_key().await
    }
    async fn heartbeat(&self, e: &str, until: i64) -> Result<(), StoreError> {
        self.inner.heartbeat(e, until).await
    }
    async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.fail_orphans(s).await
    }
    fn subscribe(&self, id: &str) -> watch::Receiver<u64> {
        self.inner.subscribe(id)
    }
}

fn classify(_: &Value) -> (TaskStatus, Option<String>) {
    (TaskStatus::Completed, None)
}

fn result() -> Value {
    json!({"content": [{"type": "text", "text": "done"}]})
}

/// An engine over a [`FullDisk`] failing `failures` terminal writes, and one task whose
/// work finishes at once with [`result`].
async fn start(failures: u32, retry_ms: u64) -> (TaskEngine, Arc<FullDisk>, String) {
    let store = Arc::new(FullDisk {
        inner: MemoryStore::new(),
        failures: AtomicU32::new(failures),
        attempts: AtomicU32::new(0),
    });
    let mut policy = Policy::default();
    policy.outcome_retry_ms = retry_ms;
    let engine = TaskEngine::new(store.clone(), policy, Arc::new(SystemClock));
    let spec = TaskSpec {
        requester: Requester::local(),
        method: "tools/call".into(),
        params: json!({"name": "t"}),
        task_field: json!({}),
        origin: Arc::new(NoRequestor),
        classify: classify as Classifier,
    };
    let runner = Box::new(|_run: TaskRun| {
        Box::pin(async { Ok(result()) }) as futures::future::BoxFuture<'static, _>
    });
    let rec = engine.create(spec, runner).await.expect("created");
    (engine, store, rec.task.task_id)
}

/// Wait (bounded) until the store has seen `n` attempts to finish the task.
async fn attempts_reach(store: &FullDisk, n: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while store.attempts.load(Ordering::SeqCst) < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} attempts to store the outcome",
            store.attempts.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brief_store_outage_delays_the_outcome_and_keeps_it() {
    let (engine, store, id) = start(3, 30_000).await;
    let who = Requester::local();
    let waiter = {
        let (engine, id, who) = (engine.clone(), id.clone(), who.clone());
        tokio::spawn(async move { engine.result(&id, &who, None).await })
    };
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("tasks/result returned once the store took the outcome")
        .expect("waiter")
        .expect("no engine error");
    let mut v = got.expect("the task's own result, not a failure");
    v.as_object_mut().unwrap().remove("_meta");
    assert_eq!(v, result());
    assert_eq!(
        store.attempts.load(Ordering::SeqCst),
        4,
        "three refused attempts, then the fourth stored"
    );
    assert_eq!(
        engine.get(&id, &who).await.unwrap().status,
        TaskStatus::Completed
    );
    assert_eq!(engine.running_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_that_cannot_be_stored_fails_the_task_once_the_store_recovers() {
    // A retry budget of 200 ms, and a store that refuses until released.
    let (engine, store, id) = start(u32::MAX, 200).await;
    let who = Requester::local();
    let waiter = {
        let (engine, id, who) = (engine.clone(), id.clone(), who.clone());
        tokio::spawn(async move { engine.result(&id, &who, None).await })
    };
    // Past the budget the engine stores the failure instead, and keeps trying.
    let before = tokio::time::Instant::now();
    attempts_reach(&store, 6).await;
    assert!(before.elapsed() >= Duration::from_millis(200));
    assert_eq!(
        engine.get(&id, &who).await.unwrap().status,
        TaskStatus::Working,
        "nothing could be stored yet"
    );
    assert_eq!(
        engine.running_count(),
        1,
        "the task stays ours (and leased) while its end cannot be stored"
    );
    assert!(!waiter.is_finished());
    // The disk has room again.
    store.failures.store(0, Ordering::SeqCst);
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("tasks/result returned once the store recovered")
        .expect("waiter")
        .expect("no engine error");
    let err = got.expect_err("the task failed");
    assert_eq!(err.code, -32603, "{err:?}");
    assert!(
        err.message
            .contains("The task's result could not be stored: task store unavailable: tasks.db: the disk is full (injected)"),
        "{}",
        err.message
    );
    let task = engine.get(&id, &who).await.unwrap();
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(task.status_message.as_deref(), Some(err.message.as_str()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while engine.running_count() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task's work was not released"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
