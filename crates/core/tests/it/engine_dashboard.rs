//! The dashboard reads a bounded number of tasks, newest first: past
//! `DASHBOARD_SCAN_MAX` stored tasks a refresh still shows the newest ones (the counts
//! cover the newest `DASHBOARD_SCAN_MAX` and say that they are cut), and it never reads more.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use mcp_tasks_core::engine::dashboard::{DASHBOARD_SCAN_MAX, DashboardQuery};
use mcp_tasks_core::{
    Limits, ListQuery, MemoryStore, NewTask, OrphanSweep, Policy, Requester, StoreError,
    SystemClock, TaskEngine, TaskRecord, TaskStore, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use tokio::sync::watch;

/// A memory store counting the records its `list` hands out.
#[derive(Default)]
struct Counting {
    inner: MemoryStore,
    listed: AtomicUsize,
}

#[async_trait]
impl TaskStore for Counting {
    async fn create(&self, t: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        self.inner.create(t, limits).await
    }
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(id).await
    }
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.inner.transition(t).await
    }
    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let page = self.inner.list(q).await?;
        self.listed.fetch_add(page.len(), Ordering::SeqCst);
        Ok(page)
    }
    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        self.inner.delete_expired(now_ms, limit).await
    }
    async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
        self.inner.cursor_key().await
    }
    async fn heartbeat(&self, executor: &str, lease_until_ms: i64) -> Result<(), StoreError> {
        self.inner.heartbeat(executor, lease_until_ms).await
    }
    async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.fail_orphans(s).await
    }
    fn subscribe(&self, id: &str) -> watch::Receiver<u64> {
        self.inner.subscribe(id)
    }
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("ms")
}

#[tokio::test]
async fn past_the_scan_bound_the_newest_tasks_are_shown_and_no_more_is_read() {
    let store = Arc::new(Counting::default());
    let total = DASHBOARD_SCAN_MAX + 300;
    let mut ids = Vec::with_capacity(total);
    for i in 0..total {
        let tool = if i % 2 == 0 { "even" } else { "odd" };
        let t = NewTask {
            created_at_ms: now_ms(),
            ttl_ms: None,
            request: format!(r#"{{"name":"{tool}","arguments":{{}}}}"#),
            ..mcp_tasks_testkit::conformance::new_task(None, None)
        };
        ids.push(
            store
                .create(t, &Limits::NONE)
                .await
                .expect("create")
                .task
                .task_id,
        );
    }
    let engine = TaskEngine::new(
        Arc::clone(&store) as Arc<dyn TaskStore>,
        Policy::default(),
        Arc::new(SystemClock),
    );
    let mut q = DashboardQuery::default();
    q.limit = 5;
    let before = store.listed.load(Ordering::SeqCst);
    let page = engine
        .dashboard(&Requester::local(), &q)
        .await
        .expect("dashboard");
    let read = store.listed.load(Ordering::SeqCst) - before;
    let shown: Vec<&str> = page
        .tasks
        .iter()
        .map(|r| r.task.task.task_id.as_str())
        .collect();
    let newest: Vec<&str> = ids.iter().rev().take(5).map(String::as_str).collect();
    assert_eq!(
        shown, newest,
        "the page shows the newest tasks, newest first"
    );
    assert!(page.truncated, "the cut is said");
    assert!(
        read <= DASHBOARD_SCAN_MAX,
        "a refresh read {read} records, over the bound {DASHBOARD_SCAN_MAX}"
    );
    let counted: u64 = page.counts.iter().map(|(_, n)| n).sum();
    assert_eq!(
        counted, DASHBOARD_SCAN_MAX as u64,
        "the counts cover the newest tasks read"
    );
    assert_eq!(
        page.counts,
        vec![(TaskStatus::Working, DASHBOARD_SCAN_MAX as u64)]
    );

    // A filter finds the newest matching tasks too.
    let mut q = DashboardQuery::default();
    q.limit = 3;
    q.tool = Some("odd".into());
    let page = engine
        .dashboard(&Requester::local(), &q)
        .await
        .expect("dashboard");
    let shown: Vec<&str> = page
        .tasks
        .iter()
        .map(|r| r.task.task.task_id.as_str())
        .collect();
    let newest_odd: Vec<&str> = ids
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, _)| i % 2 == 1)
        .take(3)
        .map(|(_, id)| id.as_str())
        .collect();
    assert_eq!(shown, newest_odd);
    assert_eq!(page.matching, (DASHBOARD_SCAN_MAX / 2) as u64);
}
