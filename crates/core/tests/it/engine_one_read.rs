//! The 2026-07-28 `tasks/get` of a terminal task reads the store once: the record and its
//! outcome come from one read (`TaskEngine::get_with_outcome`), not a summary read and
//! then a full one.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::engine::{Classifier, Runner, TaskRun, TaskSpec};
use mcp_tasks_core::{
    Limits, ListQuery, MemoryStore, NewTask, OrphanSweep, Policy, Requester, StoreError,
    SystemClock, TaskEngine, TaskRecord, TaskStore, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_testkit::NoRequestor;
use serde_json::{Value, json};
use tokio::sync::watch;

/// A memory store counting its reads of one task (full and summary).
#[derive(Default)]
struct Counting {
    inner: MemoryStore,
    reads: AtomicU32,
}

#[async_trait]
impl TaskStore for Counting {
    async fn create(&self, t: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        self.inner.create(t, limits).await
    }
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get(id).await
    }
    async fn get_summary(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get_summary(id).await
    }
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.inner.transition(t).await
    }
    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
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

/// A `tools/call` task of `who` for tool `t`.
fn spec(who: &Requester) -> TaskSpec {
    TaskSpec {
        requester: who.clone(),
        method: "tools/call".into(),
        params: json!({"name": "t"}),
        task_field: json!({}),
        origin: Arc::new(NoRequestor),
        classify: classify as Classifier,
    }
}

/// A runner whose task completes (with an empty result) once the sender is sent on or
/// dropped.
fn held_runner() -> (tokio::sync::oneshot::Sender<()>, Runner) {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let runner: Runner = Box::new(move |_run: TaskRun| {
        Box::pin(async move {
            let _ = released.await;
            Ok(json!({"content": []}))
        })
    });
    (release, runner)
}

/// Wait (at most 10 s) until task `id` is `completed`.
async fn until_completed(engine: &TaskEngine, id: &str, who: &Requester) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while engine.get(id, who).await.unwrap().status != TaskStatus::Completed {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never ended"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_task_and_its_outcome_come_from_one_store_read() {
    let store = Arc::new(Counting::default());
    let engine = TaskEngine::new(store.clone(), Policy::default(), Arc::new(SystemClock));
    let who = Requester::local();
    let spec = spec(&who);
    let runner = Box::new(|_run: TaskRun| {
        Box::pin(async { Ok(json!({"content": [{"type": "text", "text": "done"}]})) })
            as futures::future::BoxFuture<'static, _>
    });
    let id = engine
        .create(spec, runner)
        .await
        .expect("created")
        .task
        .task_id;
    until_completed(&engine, &id, &who).await;
    for poll in [false, true] {
        let before = store.reads.load(Ordering::SeqCst);
        let (task, outcome) = engine.get_with_outcome(&id, &who, poll).await.unwrap();
        assert_eq!(
            store.reads.load(Ordering::SeqCst) - before,
            1,
            "poll {poll}"
        );
        assert_eq!(task.status, TaskStatus::Completed);
        let v = outcome
            .expect("a terminal task's outcome")
            .expect("a result");
        assert_eq!(v, json!({"content": [{"type": "text", "text": "done"}]}));
        assert!(
            v.get("_meta").is_none(),
            "no related-task _meta inline: {v}"
        );
    }
}

/// `runs_here` is true while this engine executes the task, false once it ended and for a
/// task it does not run (what decides whether a `tasks/result` of a shared session asks
/// the other replicas to relay the task's messages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_here_while_this_engine_executes_the_task() {
    let store = Arc::new(Counting::default());
    let engine = TaskEngine::new(store.clone(), Policy::default(), Arc::new(SystemClock));
    let who = Requester::local();
    let spec = spec(&who);
    let (release, runner) = held_runner();
    let id = engine
        .create(spec, runner)
        .await
        .expect("created")
        .task
        .task_id;
    assert!(engine.runs_here(&id), "running");
    assert!(!engine.runs_here("no-such-task"));
    release.send(()).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while engine.runs_here(&id) {
        assert!(tokio::time::Instant::now() < deadline, "still running");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        engine.get(&id, &who).await.unwrap().status,
        TaskStatus::Completed
    );
}

/// The `tasks/get` answer written as text (`serve::get_text`) is the value `serve::dispatch`
/// answers, for a working task (with a TTL and a poll interval) and a completed one; its
/// errors are the same: an unknown task, a malformed `taskId`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_of_a_get_is_its_value() {
    use mcp_tasks_core::serve;
    let engine = TaskEngine::new(
        Arc::new(MemoryStore::default()),
        Policy::default(),
        Arc::new(SystemClock),
    );
    let who = Requester::local();
    let (release, runner) = held_runner();
    let mut spec = spec(&who);
    spec.task_field = json!({"ttl": 60_000});
    let id = engine
        .create(spec, runner)
        .await
        .expect("created")
        .task
        .task_id;
    let params = json!({"taskId": id});
    let both = || async {
        let value = serve::dispatch(&engine, &who, "tasks/get", Some(&params), || None).await;
        let text = serve::get_text(&engine, &who, Some(&params)).await;
        (value, text)
    };
    let (value, text) = both().await;
    let parsed: Value = serde_json::from_str(&text.unwrap()).unwrap();
    assert_eq!(parsed, value.unwrap());
    assert_eq!(parsed["status"], "working");
    assert_eq!(parsed["ttl"], 60_000);
    release.send(()).unwrap();
    until_completed(&engine, &id, &who).await;
    let (value, text) = both().await;
    let parsed: Value = serde_json::from_str(&text.unwrap()).unwrap();
    assert_eq!(parsed, value.unwrap());
    assert_eq!(parsed["status"], "completed");
    for bad in [
        json!({"taskId": "no-such-task"}),
        json!({"taskId": 7}),
        json!({}),
    ] {
        let value = serve::dispatch(&engine, &who, "tasks/get", Some(&bad), || None).await;
        let text = serve::get_text(&engine, &who, Some(&bad)).await;
        assert_eq!(text.unwrap_err(), value.unwrap_err(), "{bad}");
    }
}

/// The `tasks/list` page written as text (`serve::list_text`) is the value `serve::dispatch`
/// answers: a first page with its `nextCursor`, the last page without one, and the same
/// error for a malformed cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_of_a_list_is_its_value() {
    use mcp_tasks_core::serve;
    let mut policy = Policy::default();
    policy.page_size = 2;
    let engine = TaskEngine::new(
        Arc::new(MemoryStore::default()),
        policy,
        Arc::new(SystemClock),
    );
    let who = Requester::local();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let runner = held_runner().1; // its sender dropped: it ends at once
        ids.push(
            engine
                .create(spec(&who), runner)
                .await
                .expect("created")
                .task
                .task_id,
        );
    }
    // Ended, so that both reads of a page see the same statuses.
    for id in &ids {
        until_completed(&engine, id, &who).await;
    }
    let both = |params: Value| {
        let (engine, who) = (&engine, &who);
        async move {
            let value = serve::dispatch(engine, who, "tasks/list", Some(&params), || None).await;
            let text = serve::list_text(engine, who, Some(&params)).await;
            (value, text)
        }
    };
    let (value, text) = both(json!({})).await;
    let first: Value = serde_json::from_str(&text.unwrap()).unwrap();
    assert_eq!(first, value.unwrap());
    assert_eq!(first["tasks"].as_array().map(Vec::len), Some(2));
    let cursor = first["nextCursor"]
        .as_str()
        .expect("more remain")
        .to_owned();
    let (value, text) = both(json!({"cursor": cursor})).await;
    let last: Value = serde_json::from_str(&text.unwrap()).unwrap();
    assert_eq!(last, value.unwrap());
    assert_eq!(last["tasks"].as_array().map(Vec::len), Some(1));
    assert!(last.get("nextCursor").is_none(), "{last}");
    for bad in [json!({"cursor": 7}), json!({"cursor": "not-a-cursor"})] {
        let (value, text) = both(bad.clone()).await;
        assert_eq!(text.unwrap_err(), value.unwrap_err(), "{bad}");
    }
}
