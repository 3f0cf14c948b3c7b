//! The contract every task store fulfils.

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::StoreError;
use crate::record::{NewTask, Outcome, TaskRecord};
use crate::status::TaskStatus;

/// Which tasks a `list` covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListScope {
    /// Every task (the local stdio peer sees its whole store).
    All,
    /// Tasks bound to this principal.
    Owner(String),
}

/// One compare-and-swap transition.
#[derive(Debug, Clone)]
pub struct Transition {
    /// The task.
    pub task_id: String,
    /// The new status; applied only if the current status is one of
    /// [`crate::status::allowed_predecessors`]`(to)`.
    pub to: TaskStatus,
    /// The new status message (replaces the old one; `None` clears it).
    pub status_message: Option<String>,
    /// The outcome, for terminal transitions.
    pub outcome: Option<Outcome>,
    /// The time of the change.
    pub at_ms: i64,
}

/// What a transition did.
#[derive(Debug, Clone, PartialEq)]
pub enum TransitionResult {
    /// Applied; the record after the change.
    Applied(TaskRecord),
    /// Not applied: the current status did not allow it. The record as it is.
    Rejected(TaskRecord),
    /// No such task.
    Missing,
}

/// A task store.
///
/// Invariants every implementation keeps (the conformance suite checks them):
/// * a transition is one atomic compare-and-swap on the status, never read-modify-write;
/// * a terminal task never changes again, and its outcome bytes never change;
/// * no call returns before its change is durable (for durable stores);
/// * after every committed change of a task, its [`TaskStore::subscribe`] receivers wake.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Insert a task in `working`. With `max_active`, fails with
    /// [`StoreError::LimitExceeded`] when the owner already has that many non-terminal
    /// tasks (counted in the same atomic step).
    async fn create(
        &self,
        task: NewTask,
        max_active: Option<u32>,
    ) -> Result<TaskRecord, StoreError>;

    /// The task, expired or not (the engine decides what expiry means to the caller).
    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Apply a transition atomically.
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError>;

    /// Up to `limit` tasks in `scope` with `seq > after_seq`, in ascending `seq`.
    async fn list(
        &self,
        scope: &ListScope,
        after_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// Delete up to `limit` tasks whose TTL has passed at `now_ms`; returns their ids.
    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError>;

    /// The secret used to sign list cursors; created once and kept by the store, so that
    /// cursors survive a restart.
    async fn cursor_key(&self) -> Result<[u8; 32], StoreError>;

    /// Record that `executor` is alive until `lease_until_ms`.
    async fn heartbeat(&self, executor: &str, lease_until_ms: i64) -> Result<(), StoreError>;

    /// Mark `failed` (with `message`) every non-terminal task whose executor's lease has
    /// expired at `now_ms`, or that has no live executor; returns the tasks changed.
    /// Never touches tasks of a live executor.
    async fn fail_orphans(&self, now_ms: i64, message: &str)
    -> Result<Vec<TaskRecord>, StoreError>;

    /// A signal that changes whenever `task_id` changes (subscribe before reading).
    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64>;

    /// Up to `limit` non-terminal tasks whose executor has no live lease at `now_ms` (those
    /// [`Self::fail_orphans`] would fail), in ascending `seq`, so that work that can be
    /// picked up again (a gateway following an upstream task) is adopted first. A store
    /// without leases across processes returns none, and nothing is resumed.
    async fn orphans(&self, now_ms: i64, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let _ = (now_ms, limit);
        Ok(Vec::new())
    }

    /// Make `executor` the executor of `task_id` if the task is not terminal and its
    /// executor has no live lease at `now_ms`, in one compare-and-swap (of several
    /// processes at most one adopts a task). The record after the change, or `None`.
    async fn adopt(
        &self,
        task_id: &str,
        executor: &str,
        now_ms: i64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let _ = (task_id, executor, now_ms);
        Ok(None)
    }
}
