//! [`Instrumented`]: a [`TaskStore`] that times every operation of the store it wraps and
//! counts its failures, into `mcp_tasks_store_operation_duration_seconds{op}` and
//! `mcp_tasks_store_errors_total{op}` (whatever the backend: memory, SQLite, ...).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::StoreError;
use crate::metrics::Metrics;
use crate::record::{NewTask, TaskRecord};
use crate::status::TaskStatus;
use crate::store::{
    AdoptQuery, Limits, ListQuery, OrphanSweep, TaskStore, Transition, TransitionResult,
};

/// Times and counts the operations of the store it wraps.
pub struct Instrumented {
    inner: Arc<dyn TaskStore>,
    metrics: Metrics,
}

mcp_tasks_proto::debug_non_exhaustive!(Instrumented, |_s| {});

impl Instrumented {
    /// `inner`, measured into `metrics` (which also get the store's own metrics, see
    /// [`TaskStore::attach_metrics`]).
    pub fn new(inner: Arc<dyn TaskStore>, metrics: Metrics) -> Self {
        inner.attach_metrics(&metrics);
        Self { inner, metrics }
    }

    async fn timed<T>(
        &self,
        op: &'static str,
        f: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let t0 = Instant::now();
        let r = f.await;
        self.metrics.store_operation(op, t0.elapsed());
        // A limit is a refusal (counted as such by the engine), not a failure.
        if let Err(e) = &r
            && !matches!(e, StoreError::LimitExceeded { .. })
        {
            self.metrics.store_error(op);
        }
        r
    }
}

#[async_trait]
impl TaskStore for Instrumented {
    async fn create(&self, task: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        self.timed("create", self.inner.create(task, limits)).await
    }
    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.timed("get", self.inner.get(task_id)).await
    }
    async fn get_summary(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.timed("get", self.inner.get_summary(task_id)).await
    }
    async fn get_without_request(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.timed("get", self.inner.get_without_request(task_id))
            .await
    }
    async fn history(
        &self,
        task_id: &str,
    ) -> Result<Vec<crate::history::HistoryEntry>, StoreError> {
        self.timed("history", self.inner.history(task_id)).await
    }
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.timed("transition", self.inner.transition(t)).await
    }
    async fn ready(&self) -> Result<(), StoreError> {
        self.timed("ready", self.inner.ready()).await
    }
    fn attach_metrics(&self, metrics: &Metrics) {
        self.inner.attach_metrics(metrics);
    }
    fn is_shared(&self) -> bool {
        self.inner.is_shared()
    }
    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        self.timed("count", self.inner.count_by_status()).await
    }
    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
        self.timed("transition", self.inner.transition_within(t, limits))
            .await
    }
    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        self.timed("list", self.inner.list(q)).await
    }
    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        self.timed("delete_expired", self.inner.delete_expired(now_ms, limit))
            .await
    }
    async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
        self.timed("cursor_key", self.inner.cursor_key()).await
    }
    async fn heartbeat(&self, executor: &str, lease_until_ms: i64) -> Result<(), StoreError> {
        self.timed("heartbeat", self.inner.heartbeat(executor, lease_until_ms))
            .await
    }
    async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
        self.timed("fail_orphans", self.inner.fail_orphans(s)).await
    }
    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64> {
        self.inner.subscribe(task_id)
    }
    async fn orphans(&self, now_ms: i64, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.timed("orphans", self.inner.orphans(now_ms, limit))
            .await
    }
    async fn adopt(&self, q: AdoptQuery) -> Result<Option<TaskRecord>, StoreError> {
        self.timed("adopt", self.inner.adopt(q)).await
    }
    fn notes(&self) -> Option<Arc<dyn crate::store::TaskNotes>> {
        self.inner.notes()
    }
    fn inputs(&self) -> Option<Arc<dyn crate::inputs::TaskInputs>> {
        self.inner.inputs()
    }
    fn buckets(&self) -> Option<Arc<dyn crate::buckets::SharedBuckets>> {
        self.inner.buckets()
    }
}
